"""The index tombstones of a clean, encoded while its deletes run (`CleanMaintenance.ahead`): the
deltacommit written from that work is the one written without it, work started for other files is
not used, and a failed delete changes nothing in what the metadata table records (Hudi tombstones
every file the plan lists)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import runner.hudi.mdt.ahead as ahead
import runner.hudi.mdt.maintain as maintain
import runner.hudi.mdt.writer as writer
from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.errors import RunnerError
from runner.execute.apply import TableResult, apply_table
from runner.execute.clean import Deleter
from runner.hudi.instant import Action, InstantTime
from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.mdt.reader import read_metadata_table, read_partition
from runner.hudi.metadata import CleanMetadata, CleanPartitionMetadata
from runner.hudi.state import read_table_metadata, read_table_state
from runner.storage import DeleteResult, Storage, storage_for
from runner.testing import COPY_ON_WRITE
from tests.mdt.synthetic import build_with_mdt

INSTANT = InstantTime("20991231000000000")
INDEXES = ("bloom_filters", "column_stats")
LOCAL = SparkSettings(master="local[2]")


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A version-8 table with files, column_stats and bloom_filters; copied by each test, never changed."""
    b = build_with_mdt(tmp_path_factory.mktemp("ahead") / "t", 8, COPY_ON_WRITE, True, INDEXES)
    return Path(b.path)


def _copy(table: Path, dest: Path) -> Storage:
    shutil.copytree(table, dest)
    return storage_for(str(dest))


def _clean(storage: Storage) -> tuple[CleanMetadata, dict[str, tuple[str, ...]]]:
    """A clean of every base file but one per partition (nothing is deleted: only MDT records are compared)."""
    names: dict[str, tuple[str, ...]] = {}
    for partition in ("region=eu", "region=us"):
        files = sorted(f.path.rsplit("/", 1)[-1] for f in storage.list_dir(partition) if f.path.endswith(".parquet"))
        names[partition] = tuple(files[1:])
    meta = {p: CleanPartitionMetadata(p, "KEEP_LATEST_FILE_VERSIONS", n, n, ()) for p, n in names.items()}
    return CleanMetadata(str(INSTANT), 1, sum(map(len, names.values())), "", "", meta, {}, 2), names


def _record(storage: Storage, ahead: dict[str, tuple[str, ...]] | None) -> dict[str, bytes]:
    """Record the clean in the MDT (with `ahead` started for those names first); returns every MDT
    file written, by path, with its bytes."""
    hook = maintain.prepare_clean_maintenance(storage, read_table_metadata(storage))
    clean, _ = _clean(storage)
    if ahead is not None:
        hook.ahead(INSTANT, ahead)
    written = hook(INSTANT, clean, lambda: InstantTime("20991231000000001"))
    return {path: storage.read(path) for path in written}


def _apply(base: Path, deleter: Deleter) -> TableResult:
    """`runner apply` of the table at `base` (keep 1 file version, sizing off) with `deleter`."""
    decl = TableDeclaration(name="t", path=str(base), source_file="tables/t.yml",
                            clean=CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
                            file_sizing=FileSizing(small_file_limit=0))
    return apply_table(decl, None, now=datetime(2026, 11, 22, tzinfo=UTC), spark_settings=LOCAL,
                       deleter_factory=lambda: deleter)


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    # The HFiles' creation time is the only thing two recordings of one clean may differ in.
    monkeypatch.setattr(maintain, "time", type("Clock", (), {"time": staticmethod(lambda: 1_700_000_000.0)}))


@pytest.mark.usefixtures("fixed_clock")
def test_the_deltacommit_encoded_ahead_is_the_one_encoded_after(table: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _record(_copy(table, tmp_path / "plain"), None)
    storage = _copy(table, tmp_path / "ahead")
    _, names = _clean(storage)
    handed: dict[str, bool] = {}  # MDT partition -> whether the writer got its logs encoded ahead
    write_partition = writer._write_partition

    def spy(storage: Storage, mdt: Any, partition: str, *args: Any) -> Any:
        handed[partition] = args[4] is not None  # (records, time, schema, created_ms, ready)
        return write_partition(storage, mdt, partition, *args)

    monkeypatch.setattr(writer, "_write_partition", spy)
    early = _record(storage, names)

    assert early == plain
    assert handed == {"files": False, "bloom_filters": True, "column_stats": True}
    assert any("/column_stats/" in path for path in plain) and any("/bloom_filters/" in path for path in plain)


@pytest.mark.usefixtures("fixed_clock")
def test_work_started_for_other_files_is_not_used(table: Path, tmp_path: Path) -> None:
    plain = _record(_copy(table, tmp_path / "plain"), None)
    storage = _copy(table, tmp_path / "other")
    _, names = _clean(storage)
    fewer = {p: n[:-1] for p, n in names.items()}

    assert _record(storage, fewer) == plain


def test_a_failed_delete_is_recorded_in_the_metadata_table_like_the_others(table: Path, tmp_path: Path) -> None:
    # The clean (through `apply`, which encodes the tombstones beside the deletes) records the file
    # it could not delete as failed in its own metadata; the MDT, as Hudi's, tombstones every file
    # the plan lists, so a later clean of that file finds no index records to contradict.
    base = tmp_path / "t"
    storage = _copy(table, base)
    victim: list[str] = []

    def failing(storage: Storage, paths: Any) -> list[DeleteResult]:
        victim.append(sorted(paths)[0])
        results = storage.delete_many([p for p in paths if p != victim[0]])
        return [*results, DeleteResult(victim[0], False, f"{victim[0]}: permission denied (injected)")]

    with pytest.raises(RunnerError, match="could not be deleted"):
        _apply(base, failing)

    assert (base / victim[0]).exists()
    data = read_table_metadata(storage)
    mdt = read_metadata_table(storage)
    partition, _, name = victim[0].rpartition("/")
    stats, _ = read_partition(storage, data, mdt, "column_stats")
    mine = [r["ColumnStatsMetadata"] for r in stats.values() if r["ColumnStatsMetadata"]["fileName"] == name]
    assert mine and all(s["isDeleted"] for s in mine)
    files, _ = read_partition(storage, data, mdt, "files")
    assert files[partition]["filesystemMetadata"][name]["isDeleted"]


# --- the encoder in a child process (a large clean's; `maintain.CHILD_FROM` lowered to reach it) ---


@pytest.fixture
def in_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(maintain, "CHILD_FROM", 0)


@pytest.mark.usefixtures("fixed_clock", "in_child")
def test_the_deltacommit_encoded_in_a_child_is_the_one_encoded_after(table: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _record(_copy(table, tmp_path / "plain"), None)
    storage = _copy(table, tmp_path / "child")
    _, names = _clean(storage)
    started: list[ahead.Encoder] = []
    monkeypatch.setattr(ahead.Encoder, "__init__", _remembered(ahead.Encoder.__init__, started))
    handed = _spy_on_writes(monkeypatch)

    assert _record(storage, names) == plain
    (encoder,) = started
    assert type(encoder) is ahead.Encoder and encoder.process is not None and encoder.process.returncode == 0
    assert handed == {"files": False, "bloom_filters": True, "column_stats": True}


@pytest.mark.usefixtures("fixed_clock", "in_child")
def test_a_killed_encoder_leaves_the_encoding_to_after_the_deletes(table: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _record(_copy(table, tmp_path / "plain"), None)
    storage = _copy(table, tmp_path / "killed")
    _, names = _clean(storage)
    hook = maintain.prepare_clean_maintenance(storage, read_table_metadata(storage))
    hook.ahead(INSTANT, names)
    ((_, encoder),) = hook._ahead.values()
    while encoder.process is None:  # started on the waiter thread; killed at once, long before it is done
        time.sleep(0.01)
    encoder.process.send_signal(signal.SIGKILL)
    handed = _spy_on_writes(monkeypatch)
    clean, _ = _clean(storage)

    written = hook(INSTANT, clean, lambda: InstantTime("20991231000000001"))

    assert encoder.process.returncode == -signal.SIGKILL and encoder.result() is None
    assert handed == {"files": False, "bloom_filters": False, "column_stats": False}
    assert {path: storage.read(path) for path in written} == plain


@pytest.mark.usefixtures("in_child")
def test_a_failing_delete_stops_the_encoder_child(table: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing will use the child's work once the deletes fail, so the driver kills it rather than
    # letting it encode to its end (seconds of CPU on a large clean) and waiting for it at exit.
    base = tmp_path / "t"
    _copy(table, base)
    started: list[ahead.Encoder] = []
    monkeypatch.setattr(ahead.Encoder, "__init__", _remembered(ahead.Encoder.__init__, started))
    failed_at: list[float] = []

    def failing(storage: Storage, paths: Any) -> list[DeleteResult]:
        (encoder,) = started
        while encoder.process is None:  # the child is started: its encoding is under way
            time.sleep(0.01)
        failed_at.append(time.monotonic())
        raise OSError("the object store went away (injected)")

    with pytest.raises(OSError, match="went away"):
        _apply(base, failing)

    (encoder,) = started
    assert encoder.process is not None
    assert encoder.result() is None  # the waiter reaped the child
    assert encoder.process.returncode == -signal.SIGKILL  # killed, not finished
    assert not _running(encoder.process.pid)
    assert time.monotonic() - failed_at[0] < 10


@pytest.mark.usefixtures("in_child")
@pytest.mark.parametrize("interrupted", ["during_the_deletes", "after_the_deletes"])
def test_an_interrupted_clean_stops_the_encoder_child_and_the_next_apply_finishes(
        table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupted: str) -> None:
    # Ctrl-C while the deletes run (the deleter raises KeyboardInterrupt), or a SIGINT to the process
    # once they are done but before the MDT hook (the `after_delete` failpoint): the child is killed
    # and reaped, no MDT deltacommit is written, and the next apply completes the clean.
    base = tmp_path / "t"
    storage = _copy(table, base)
    started: list[ahead.Encoder] = []
    monkeypatch.setattr(ahead.Encoder, "__init__", _remembered(ahead.Encoder.__init__, started))
    if interrupted == "after_the_deletes":
        monkeypatch.setenv("RUNNER_FAILPOINT", "after_delete:sigint")

    def deleter(storage: Storage, paths: Any) -> list[DeleteResult]:
        (encoder,) = started
        while encoder.process is None:  # the child is started: its encoding is under way
            time.sleep(0.01)
        if interrupted == "during_the_deletes":
            raise KeyboardInterrupt
        return storage.delete_many(paths)

    with pytest.raises(KeyboardInterrupt):
        _apply(base, deleter)

    (encoder,) = started
    assert encoder.process is not None
    assert encoder.result() is None
    assert encoder.process.returncode == -signal.SIGKILL
    assert not _running(encoder.process.pid)
    (pending,) = [i for i in read_table_metadata(storage).timeline.instants if i.action.value == "clean"]
    assert not pending.is_completed
    assert not [i for i in read_metadata_table(storage).timeline.instants if i.time == pending.time]

    monkeypatch.delenv("RUNNER_FAILPOINT", raising=False)
    result = _apply(base, lambda storage, paths: storage.delete_many(paths))

    assert result.status == "success", result.error
    assert check_metadata_table(storage, read_table_state(storage)).ok
    assert [i.time for i in read_table_metadata(storage).timeline.completed(Action.CLEAN)] == [pending.time]


def test_the_encoder_exits_when_its_driver_dies(tmp_path: Path) -> None:
    # The encoder's child waits for its job on stdin, which this test holds open (so it never sees
    # an end of file): only its watch on the driver's pid can end it.
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    encoder = subprocess.Popen([sys.executable, "-m", "runner.hudi.mdt.ahead", str(driver.pid)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        driver.kill()
        driver.wait()
        assert encoder.wait(timeout=120) == 1
        assert encoder.stdout is not None and encoder.stdout.read() == b""  # no output: killed by the watch
    finally:
        encoder.kill()
        encoder.wait()
        assert encoder.stdin is not None
        encoder.stdin.close()


# Runs `apply_table` on the table at argv[1] with the encoder in a child; the deleter, once that
# child exists, writes its pid to argv[2] and exits the driver as a kill would (no cleanup at all).
_KILLED_DRIVER = """
import os, sys, time
from datetime import UTC, datetime
import runner.hudi.mdt.ahead as ahead
import runner.hudi.mdt.maintain as maintain
from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import TableResult, apply_table
from runner.execute.clean import Deleter

maintain.CHILD_FROM = 0

def encoder_child():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            command = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and b"runner.hudi.mdt.ahead" in command:
            return int(pid)
    return None

def killed_during_deletes(storage, paths):
    while (child := encoder_child()) is None:
        time.sleep(0.01)
    with open(sys.argv[2], "w") as out:
        out.write(str(child))
    os._exit(97)

decl = TableDeclaration(name="t", path=sys.argv[1], source_file="tables/t.yml",
                        clean=CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
                        file_sizing=FileSizing(small_file_limit=0))
apply_table(decl, None, now=datetime(2026, 11, 22, tzinfo=UTC), spark_settings=SparkSettings(master="local[1]"),
            deleter_factory=lambda: killed_during_deletes)
"""


def test_a_driver_killed_during_the_deletes_leaves_no_encoder_and_the_next_apply_finishes(
        table: Path, tmp_path: Path) -> None:
    base = tmp_path / "t"
    storage = _copy(table, base)
    pid_file = tmp_path / "encoder.pid"

    crashed = subprocess.run([sys.executable, "-c", _KILLED_DRIVER, str(base), str(pid_file)],
                             capture_output=True, text=True, timeout=300)

    assert crashed.returncode == 97, crashed.stderr
    encoder = int(pid_file.read_text())
    while _running(encoder):  # the encoder ends with its driver (the test's timeout bounds this)
        time.sleep(0.05)
    (pending,) = [i for i in read_table_metadata(storage).timeline.instants if i.action.value == "clean"]
    assert not pending.is_completed
    assert not [i for i in read_metadata_table(storage).timeline.instants if i.time == pending.time]

    result = _apply(base, lambda storage, paths: storage.delete_many(paths))

    assert result.status == "success", result.error
    assert check_metadata_table(storage, read_table_state(storage)).ok
    data = read_table_metadata(storage)
    assert [i.time for i in data.timeline.completed(Action.CLEAN)] == [pending.time]
    mdt = read_metadata_table(storage)
    assert any(i.time == pending.time and i.is_completed for i in mdt.timeline.instants)
    stats, _ = read_partition(storage, data, mdt, "column_stats")
    deleted = [r["ColumnStatsMetadata"] for r in stats.values() if r["ColumnStatsMetadata"]["isDeleted"]]
    assert deleted and not any((base / f"{s['fileName']}").exists() for s in deleted)


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie left for a parent that does not reap it counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _remembered(init: Any, started: list[Any]) -> Any:
    def remember(self: Any, job: Any) -> None:
        started.append(self)
        init(self, job)

    return remember


def _spy_on_writes(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """MDT partition -> whether the writer got its logs encoded ahead."""
    handed: dict[str, bool] = {}
    write_partition = writer._write_partition

    def spy(storage: Storage, mdt: Any, partition: str, *args: Any) -> Any:
        handed[partition] = args[4] is not None  # (records, time, schema, created_ms, ready)
        return write_partition(storage, mdt, partition, *args)

    monkeypatch.setattr(writer, "_write_partition", spy)
    return handed


def test_a_stop_at_any_moment_of_the_childs_start_leaves_no_child_running() -> None:
    # `stop` may come before, during or after the waiter thread starts the child: in every case no
    # child is left to run its job to the end, and the work is not handed out.
    job = ahead.EncodeJob("20260101000000000", {}, {}, (), "", 8, False, 0)
    for step in range(24):
        encoder = ahead.Encoder(job)
        time.sleep(step * 0.0005)
        encoder.stop()
        assert encoder.result() is None, step
        if encoder.process is not None:
            assert encoder.process.returncode == -signal.SIGKILL, step
            assert not _running(encoder.process.pid)
