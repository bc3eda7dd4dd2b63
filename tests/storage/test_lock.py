"""TableLock on local disk and on a real S3-compatible server: exclusion, staleness, safe release."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from runner.errors import LockError, NotAHudiTableError, StorageError
from runner.hudi.instant import Action, InstantTime
from runner.hudi.timeline_writer import TimelineWriter
from runner.storage import LocalStorage, Storage, storage_for
from runner.storage.guard import PROPERTIES
from runner.storage.lock import LOCK_PATH, LockHolder, TableLock, pid_alive, process_namespace
from tests.s3 import S3Server


def plant_lock(
    storage: Storage, *, host: str, pid: int, age: timedelta, run_id: str = "theirs"
) -> LockHolder:
    """Write a lock file as another runner would have (in this process table, when on this host)."""
    holder = LockHolder("nightly-job", host, pid, datetime.now(UTC) - age, run_id, pid_namespace=process_namespace())
    storage.overwrite(LOCK_PATH, holder.to_json_bytes())
    return holder


def current_run_id(storage: Storage) -> str:
    return str(json.loads(storage.read(LOCK_PATH))["run_id"])


@pytest.fixture
def storage(storage: Storage) -> Storage:
    """The shared empty root, made a Hudi table: the lock is only ever taken in one."""
    storage.write_new(PROPERTIES, b"hoodie.table.name=t\n")
    return storage


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_acquire_writes_the_holder_and_release_removes_it(storage: Storage) -> None:
    with TableLock(storage, owner="alice", run_id="run-1") as lock:
        holder = LockHolder.from_json_bytes(storage.read(LOCK_PATH))
        assert (holder.owner, holder.host, holder.pid, holder.run_id) == (
            "alice",
            socket.gethostname(),
            os.getpid(),
            "run-1",
        )
        assert abs(datetime.now(UTC) - holder.acquired_at) < timedelta(minutes=1)
        assert lock.taken_over is None

    assert storage.stat(LOCK_PATH) is None


def test_lock_file_is_json_with_an_iso_timestamp(storage: Storage) -> None:
    with TableLock(storage, owner="alice"):
        raw = json.loads(storage.read(LOCK_PATH))

    assert set(raw) == {"owner", "host", "pid", "acquired_at", "run_id", "heartbeat_at", "pid_namespace"}
    assert raw["pid_namespace"] == process_namespace() != ""
    assert datetime.fromisoformat(raw["acquired_at"]).tzinfo is not None
    assert datetime.fromisoformat(raw["heartbeat_at"]) >= datetime.fromisoformat(raw["acquired_at"])


def test_a_live_lock_blocks_a_second_runner_and_names_the_holder(storage: Storage) -> None:
    with TableLock(storage, owner="alice", run_id="run-1"):
        with pytest.raises(LockError) as error:
            TableLock(storage, owner="bob").acquire()
        assert current_run_id(storage) == "run-1"

    message = str(error.value)
    for part in ["alice", f"host {socket.gethostname()}", f"pid {os.getpid()}", "run run-1", "since 20"]:
        assert part in message
    assert f"To fix this, wait for it to finish, or delete {storage.uri}/{LOCK_PATH}" in message


def test_the_lock_can_be_taken_again_after_release(storage: Storage) -> None:
    with TableLock(storage, owner="alice"):
        pass
    with TableLock(storage, owner="bob", run_id="run-2"):
        assert current_run_id(storage) == "run-2"


def test_lock_of_a_dead_process_on_this_host_is_taken_over(storage: Storage, dead_pid: int) -> None:
    stale = plant_lock(storage, host=socket.gethostname(), pid=dead_pid, age=timedelta(seconds=5))

    with TableLock(storage, owner="bob", run_id="run-2") as lock:
        assert lock.taken_over is not None and lock.taken_over.run_id == stale.run_id
        assert current_run_id(storage) == "run-2"


def test_a_dead_pid_on_another_host_is_not_evidence(storage: Storage, dead_pid: int) -> None:
    plant_lock(storage, host="some-other-host", pid=dead_pid, age=timedelta(seconds=5))

    with pytest.raises(LockError, match="some-other-host"):
        TableLock(storage, owner="bob").acquire()
    assert current_run_id(storage) == "theirs"


def test_lock_older_than_the_limit_is_taken_over(storage: Storage) -> None:
    plant_lock(storage, host="some-other-host", pid=1, age=timedelta(hours=2))

    lock = TableLock(storage, owner="bob", stale_after_s=3600, run_id="run-2")
    replaced = lock.acquire()

    assert replaced is not None and replaced.host == "some-other-host"
    assert current_run_id(storage) == "run-2"
    assert lock.release() is True


def test_lock_younger_than_the_limit_is_respected(storage: Storage) -> None:
    plant_lock(storage, host="some-other-host", pid=1, age=timedelta(minutes=30))

    with pytest.raises(LockError, match="nightly-job"):
        TableLock(storage, owner="bob", stale_after_s=3600).acquire()


def test_release_leaves_someone_elses_lock_alone(storage: Storage) -> None:
    lock = TableLock(storage, owner="alice", run_id="run-1")
    lock.acquire()
    plant_lock(storage, host="some-other-host", pid=1, age=timedelta(0), run_id="intruder")

    assert lock.release() is False
    assert current_run_id(storage) == "intruder"


def test_release_of_a_vanished_lock_is_harmless(storage: Storage) -> None:
    lock = TableLock(storage, owner="alice")
    lock.acquire()
    storage.delete(LOCK_PATH)

    assert lock.release() is False


def test_the_lock_is_released_when_the_run_fails(storage: Storage) -> None:
    with pytest.raises(RuntimeError, match="step failed"), TableLock(storage, owner="alice"):
        raise RuntimeError("step failed")

    assert storage.stat(LOCK_PATH) is None


def test_an_unreadable_recent_lock_blocks(storage: Storage) -> None:
    storage.write_new(LOCK_PATH, b"not json")

    with pytest.raises(LockError, match="unreadable lock file"):
        TableLock(storage, owner="bob").acquire()
    assert storage.read(LOCK_PATH) == b"not json"


def test_an_unreadable_old_lock_is_stale_by_its_modification_time(tmp_path: Path) -> None:
    storage = storage_for(str(tmp_path))
    storage.write_new(PROPERTIES, b"hoodie.table.name=t\n")
    storage.write_new(LOCK_PATH, b"not json")
    two_hours_ago = datetime.now(UTC).timestamp() - 7200
    os.utime(tmp_path / LOCK_PATH, (two_hours_ago, two_hours_ago))

    with TableLock(storage, owner="bob", run_id="run-2") as lock:
        assert lock.taken_over is not None and lock.taken_over.owner == "<unreadable lock file>"
        assert current_run_id(storage) == "run-2"


def test_holder_json_round_trip() -> None:
    acquired = datetime(2024, 4, 2, 14, 49, 10, tzinfo=UTC)
    holder = LockHolder("alice", "h1", 42, acquired, "r1", acquired + timedelta(seconds=15.5))

    assert LockHolder.from_json_bytes(holder.to_json_bytes()) == holder


def test_a_lock_file_without_a_heartbeat_is_judged_by_its_acquisition_time() -> None:
    old = b'{"owner": "o", "host": "h", "pid": 1, "acquired_at": "2024-04-02T14:49:10+00:00", "run_id": "r"}'

    holder = LockHolder.from_json_bytes(old)

    assert holder.heartbeat_at is None
    assert holder.last_sign_of_life == datetime(2024, 4, 2, 14, 49, 10, tzinfo=UTC)


def test_pid_alive(dead_pid: int) -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(dead_pid)
    assert not pid_alive(0)


# --- Heartbeat: a live holder is never taken over, and a holder that lost its lock stops writing ---


def wait_until(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def take_lock_in_another_process(storage: Storage, options: dict[str, str] | None) -> None:
    """Delete the lock and take it in a separate process, as a second runner (or a human) would."""
    script = (
        "import json, sys\n"
        "from runner.storage.lock import LOCK_PATH, TableLock\n"
        "from runner.storage import storage_for\n"
        "s = storage_for(sys.argv[1], options=json.loads(sys.argv[2]) or None)\n"
        # delete_if, as a runner's takeover does: a plain delete could land between the holder's
        # compare and its replace (both under the folder lock), and the holder would rewrite its lock.
        "while not s.delete_if(LOCK_PATH, s.read(LOCK_PATH)):\n"
        "    pass\n"
        "lock = TableLock(s, owner='intruder', run_id='intruder')\n"
        "lock.acquire()\n"
        "lock._stop_heartbeat()\n"  # exit holding it, as a crashed runner would
    )
    subprocess.run([sys.executable, "-c", script, storage.uri, json.dumps(options or {})], check=True)


@pytest.fixture
def options(request: pytest.FixtureRequest, storage: Storage) -> dict[str, str] | None:
    """Connection options for the `storage` fixture, to rebuild it in another process."""
    if not storage.uri.startswith("s3://"):
        return None
    server: S3Server = request.getfixturevalue("s3_server")
    return server.options()


def test_a_holder_working_longer_than_the_limit_keeps_its_lock(storage: Storage) -> None:
    with TableLock(storage, owner="alice", run_id="run-1", stale_after_s=1.0, heartbeat_interval_s=0.2):
        first = LockHolder.from_json_bytes(storage.read(LOCK_PATH))
        time.sleep(2.5)  # far longer than stale_after_s since acquisition: only the heartbeat counts

        with pytest.raises(LockError, match="alice"):
            TableLock(storage, owner="bob", stale_after_s=1.0, heartbeat_interval_s=0.2).acquire()
        renewed = LockHolder.from_json_bytes(storage.read(LOCK_PATH))

    assert renewed.run_id == "run-1" and renewed.acquired_at == first.acquired_at
    assert renewed.heartbeat_at is not None and first.heartbeat_at is not None
    assert renewed.heartbeat_at - first.heartbeat_at >= timedelta(seconds=1.5)
    assert storage.stat(LOCK_PATH) is None


def test_a_silent_heartbeat_makes_the_lock_stale_whatever_its_age(storage: Storage) -> None:
    holder = LockHolder("nightly-job", "some-other-host", 1, datetime.now(UTC) - timedelta(seconds=10),
                        "theirs", datetime.now(UTC) - timedelta(seconds=5))
    storage.overwrite(LOCK_PATH, holder.to_json_bytes())

    with TableLock(storage, owner="bob", run_id="run-2", stale_after_s=3.0, heartbeat_interval_s=1.0) as lock:
        assert lock.taken_over is not None and lock.taken_over.run_id == holder.run_id
        assert current_run_id(storage) == "run-2"


def test_a_recent_heartbeat_keeps_an_old_lock_live(storage: Storage) -> None:
    holder = LockHolder("nightly-job", "some-other-host", 1, datetime.now(UTC) - timedelta(hours=5),
                        "theirs", datetime.now(UTC) - timedelta(seconds=10))
    storage.overwrite(LOCK_PATH, holder.to_json_bytes())

    with pytest.raises(LockError, match="last heartbeat"):
        TableLock(storage, owner="bob", stale_after_s=3600).acquire()
    assert current_run_id(storage) == "theirs"


def test_a_holder_whose_lock_was_taken_stops_before_its_next_write(
    storage: Storage, options: dict[str, str] | None
) -> None:
    lock = TableLock(storage, owner="alice", run_id="run-1", stale_after_s=30, heartbeat_interval_s=0.2)
    lock.acquire()
    storage.write_new("data/before.parquet", b"1")
    take_lock_in_another_process(storage, options)

    assert wait_until(lambda: lock.lost is not None)
    # The beat may fall between the rival's delete and its create.
    assert "held by intruder" in str(lock.lost) or "was deleted" in str(lock.lost)
    for write in (lambda: storage.write_new("data/after.parquet", b"2"),
                  lambda: storage.overwrite("data/before.parquet", b"3"),
                  lambda: storage.delete("data/before.parquet"),
                  lambda: storage.delete_many(["data/before.parquet"])):
        with pytest.raises(LockError, match=r"lost the lock .* It stopped before writing anything more"):
            write()
    assert storage.stat("data/after.parquet") is None
    assert storage.read("data/before.parquet") == b"1"
    assert lock.release() is False
    assert current_run_id(storage) == "intruder"  # the rival's lock is left alone


def test_a_stalled_holder_renews_before_writing_and_stops_if_it_cannot(
    storage: Storage, options: dict[str, str] | None
) -> None:
    # The heartbeat thread will not run for a minute: the write itself must notice the overdue
    # heartbeat, try to renew, and find the lock taken.
    lock = TableLock(storage, owner="alice", run_id="run-1", stale_after_s=0.6, heartbeat_interval_s=0.5)
    lock.acquire()
    lock._stop.set()  # end the heartbeat thread, as if it were starved
    take_lock_in_another_process(storage, options)
    time.sleep(0.4)

    with pytest.raises(LockError, match="held by intruder"):
        storage.write_new("data/after.parquet", b"2")
    assert storage.stat("data/after.parquet") is None
    assert lock.release() is False


def test_exiting_a_lock_that_was_lost_is_an_error(storage: Storage, options: dict[str, str] | None) -> None:
    with pytest.raises(LockError, match="lost the lock"), TableLock(
        storage, owner="alice", stale_after_s=30, heartbeat_interval_s=0.2
    ) as lock:
        take_lock_in_another_process(storage, options)
        assert wait_until(lambda: lock.lost is not None)
    assert current_run_id(storage) == "intruder"


def test_two_runners_taking_over_one_stale_lock_exactly_one_wins(storage: Storage) -> None:
    plant_lock(storage, host="some-other-host", pid=1, age=timedelta(hours=2))
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def contend(name: str) -> None:
        lock = TableLock(storage, owner=name, run_id=name)
        barrier.wait()
        try:
            lock.acquire()
        except LockError:
            outcomes.append("refused")
            return
        outcomes.append(name)

    threads = [threading.Thread(target=contend, args=(f"r{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    winners = [o for o in outcomes if o != "refused"]
    assert len(winners) == 1 and len(outcomes) == 4
    assert current_run_id(storage) == winners[0]


# --- Folders that are not tables: nothing is written -----------------------------------------------


@pytest.mark.parametrize("shape", ["missing", "empty", "plain folder", "no properties"])
def test_no_lock_is_taken_in_a_folder_that_is_not_a_hudi_table(tmp_path: Path, shape: str) -> None:
    root = tmp_path / "table"
    if shape != "missing":
        root.mkdir()
    if shape == "plain folder":
        (root / "part-0.parquet").write_bytes(b"PAR1")
    if shape == "no properties":
        (root / ".hoodie").mkdir()
        (root / ".hoodie" / "20240101000000000.commit").write_bytes(b"{}")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))

    with pytest.raises(NotAHudiTableError, match=r"Refusing to take the runner lock on .*nothing was written"):
        TableLock(storage_for(str(root)), owner="alice").acquire()

    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.s3
def test_no_lock_is_taken_under_an_s3_prefix_that_is_not_a_hudi_table(
    s3_server: S3Server, s3_bucket: str
) -> None:
    storage = storage_for(f"s3://{s3_bucket}/warehouse/orders", options=s3_server.options())
    storage.write_new("part-0.parquet", b"PAR1")

    with pytest.raises(NotAHudiTableError, match=re.escape("it has no .hoodie folder")):
        TableLock(storage, owner="alice").acquire()

    listed = s3_server.client().list_objects_v2(Bucket=s3_bucket)
    assert [o["Key"] for o in listed["Contents"]] == ["warehouse/orders/part-0.parquet"]


def test_the_timeline_writer_refuses_a_folder_without_properties(tmp_path: Path) -> None:
    for shape in ("missing", "plain"):
        root = tmp_path / shape
        if shape == "plain":
            root.mkdir()
        writer = TimelineWriter(storage_for(str(root)), ".hoodie", 1)

        with pytest.raises(NotAHudiTableError, match=r"Refusing to write 20240101000000000\.clean\.requested into"):
            writer.requested(InstantTime("20240101000000000"), Action.CLEAN, b"x")
        assert not (root / ".hoodie").exists()
    assert not (tmp_path / "missing").exists()


def test_apply_on_a_missing_path_or_a_plain_folder_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from runner.cli import main

    root = tmp_path / "proj"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: p\n")
    (root / "plain").mkdir()
    (root / "plain" / "notes.txt").write_text("not a table")
    for name in ("plain", "missing"):
        (root / "tables" / f"{name}.yml").write_text(
            f"name: {name}\npath: {name}\nclean:\n  policy: KEEP_LATEST_COMMITS\n  commits_retained: 2\n"
        )

    assert main(["apply", "--auto-approve", "--project-dir", str(root)]) == 1

    out = capsys.readouterr()
    for name, found in (("missing", "it does not exist"), ("plain", "it has no .hoodie folder")):
        message = f"Refusing to take the runner lock on {root / name}: it is not a Hudi table ({found})"
        assert message in out.out + out.err
    assert not (root / "missing").exists()
    assert [p.name for p in (root / "plain").iterdir()] == ["notes.txt"]


class _TakeoverMidRead:
    """Local storage on which a read of the lock can meet a rival's takeover half way: the file is
    gone when read and back (the rival's) when checked."""

    def __init__(self, root: str) -> None:
        self._local = LocalStorage(root)
        self.race_next_read = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._local, name)

    def read(self, path: str) -> bytes:
        if path == LOCK_PATH and self.race_next_read:
            self.race_next_read = False
            # The rival deleted the lock just before this read, and creates its own just after.
            plant_lock(self._local, host="other-host", pid=1, age=timedelta(0), run_id="intruder")
            raise StorageError(f"Cannot read {path}: no such file.")
        return self._local.read(path)


def test_a_takeover_met_half_way_by_a_read_names_the_new_holder(tmp_path: Path) -> None:
    storage = _TakeoverMidRead(str(tmp_path))
    storage.write_new(PROPERTIES, b"hoodie.table.name=t\n")
    lock = TableLock(cast(Storage, storage), owner="alice", run_id="run-1", stale_after_s=60, heartbeat_interval_s=30)
    lock.acquire()
    storage.race_next_read = True

    why = lock._why_not_ours()

    assert not storage.race_next_read, "the read never met the takeover: the test proves nothing"
    assert why.startswith("it is now held by") and "intruder" in why, why
    assert lock.release() is False  # the rival's lock is left alone
