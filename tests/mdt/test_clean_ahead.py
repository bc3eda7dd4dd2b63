"""The index tombstones of a clean, encoded while its deletes run (`CleanMaintenance.ahead`): the
deltacommit written from that work is the one written without it, work started for other files is
not used, and a failed delete changes nothing in what the metadata table records (Hudi tombstones
every file the plan lists)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import runner.hudi.mdt.maintain as maintain
import runner.hudi.mdt.writer as writer
from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.errors import RunnerError
from runner.execute.apply import apply_table
from runner.hudi.instant import InstantTime
from runner.hudi.mdt.reader import read_metadata_table, read_partition
from runner.hudi.metadata import CleanMetadata, CleanPartitionMetadata
from runner.hudi.state import read_table_metadata
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

    decl = TableDeclaration(name="t", path=str(base), source_file="tables/t.yml",
                            clean=CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
                            file_sizing=FileSizing(small_file_limit=0))
    with pytest.raises(RunnerError, match="could not be deleted"):
        apply_table(decl, None, now=datetime(2026, 11, 22, tzinfo=UTC), spark_settings=LOCAL,
                    deleter_factory=lambda: failing)

    assert (base / victim[0]).exists()
    data = read_table_metadata(storage)
    mdt = read_metadata_table(storage)
    partition, _, name = victim[0].rpartition("/")
    stats, _ = read_partition(storage, data, mdt, "column_stats")
    mine = [r["ColumnStatsMetadata"] for r in stats.values() if r["ColumnStatsMetadata"]["fileName"] == name]
    assert mine and all(s["isDeleted"] for s in mine)
    files, _ = read_partition(storage, data, mdt, "files")
    assert files[partition]["filesystemMetadata"][name]["isDeleted"]
