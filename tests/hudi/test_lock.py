"""TableLock on local disk and on a real S3-compatible server: exclusion, staleness, safe release."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runner.errors import LockError
from runner.hudi.guard import PROPERTIES
from runner.hudi.lock import LOCK_PATH, LockHolder, TableLock, pid_alive
from runner.hudi.storage import Storage, storage_for
from tests.s3 import S3Server


def plant_lock(
    storage: Storage, *, host: str, pid: int, age: timedelta, run_id: str = "theirs"
) -> LockHolder:
    """Write a lock file as another runner would have."""
    holder = LockHolder("nightly-job", host, pid, datetime.now(UTC) - age, run_id)
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

    assert set(raw) == {"owner", "host", "pid", "acquired_at", "run_id", "heartbeat_at"}
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
