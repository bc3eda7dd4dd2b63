"""Reading the metadata table's `files` partition: every fixture agrees with storage and hudi-rs."""

from __future__ import annotations

import copy
import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.errors import RunnerError
from runner.hudi.mdt.drift import compare
from runner.hudi.mdt.reader import (
    FilesListing,
    _combine,
    read_files_listing,
    read_metadata_table,
    read_partition,
    read_partition_schema,
)
from runner.hudi.mdt.records import FILE_LIST, file_entries
from runner.hudi.mdt.view import valid_instants
from runner.hudi.state import read_table_metadata, read_table_state
from runner.hudi.timeline import Timeline
from runner.storage import storage_for
from tests.mdt.conftest import MDT_IDS


@pytest.mark.parametrize("fixture", MDT_IDS)
def test_mdt_listing_agrees_with_storage_on_every_fixture(mdt_tables: dict[str, Path], fixture: str) -> None:
    storage = storage_for(str(mdt_tables[fixture]))
    state = read_table_state(storage)
    listing = read_files_listing(storage, state.metadata)
    drift = compare(listing, state)
    assert drift.in_sync, drift
    assert sum(len(files) for files in listing.files.values()) > 0
    assert listing.schema.startswith("{")


@pytest.mark.parametrize("fixture", MDT_IDS)
def test_hudi_rs_latest_slices_are_in_our_listing_with_the_same_sizes(
    mdt_tables: dict[str, Path], fixture: str
) -> None:
    from hudi import HudiTable

    base = mdt_tables[fixture]
    storage = storage_for(str(base))
    listing = read_files_listing(storage, read_table_metadata(storage))
    slices = HudiTable(str(base)).get_file_slices()
    assert slices
    for s in slices:
        files = listing.files[s.partition_path]
        if s.base_file_name:
            assert files[s.base_file_name] == s.base_file_size
        for name, size in zip(s.log_file_names, s.log_file_sizes, strict=True):
            assert files[name] == size


@pytest.mark.parametrize("fixture", MDT_IDS)
def test_the_schema_read_alone_is_the_one_the_full_read_returns(mdt_tables: dict[str, Path], fixture: str) -> None:
    storage = storage_for(str(mdt_tables[fixture]))
    data = read_table_metadata(storage)
    mdt = read_metadata_table(storage)
    for partition in data.config.metadata_partitions:
        full = _outcome(lambda p=partition: read_partition(storage, data, mdt, p)[1])
        assert _outcome(lambda p=partition: read_partition_schema(storage, data, mdt, p)) == full, partition
        assert partition != "files" or full.startswith("{")


def _outcome(read: Callable[[], str]) -> str:
    """The schema read, or the refusal's message (a partition the reader cannot merge)."""
    try:
        return read()
    except RunnerError as error:
        return f"refused: {error}"


def test_the_schema_read_alone_follows_the_newest_valid_block(tmp_path: Path) -> None:
    # A deltacommit with another schema counts once its data instant completes, for both reads.
    from runner.hudi.instant import Action, State
    from runner.hudi.mdt import records as rec
    from runner.hudi.mdt.actions import MdtCommit
    from runner.hudi.mdt.writer import write_mdt_commit
    from runner.hudi.metadata import CommitMetadata, encode_commit_metadata
    from runner.testing import TableBuilder
    from runner.testing.metadata_table import metadata_record_schema

    b = TableBuilder(tmp_path / "t", name="t", partitions=["p=1"], version=8, metadata_table=True)
    b.commit(writes=1)
    storage = storage_for(b.path)

    def both() -> tuple[str, str]:
        data, mdt = read_table_metadata(storage), read_metadata_table(storage)
        return read_partition_schema(storage, data, mdt, "files"), read_partition(storage, data, mdt, "files")[1]

    before, _ = both()
    wider = metadata_record_schema(with_indexes=True)
    assert wider != before
    record = rec.encode_record(wider, rec.file_list_record({}))  # lists nothing new
    t = b.files.tick()
    b.files.instant(t, Action.COMMIT, State.REQUESTED)
    b.files.instant(t, Action.COMMIT, State.INFLIGHT)
    write_mdt_commit(storage, read_metadata_table(storage), MdtCommit(str(t), {"files": {"p=1": record}}), schema=wider,
                     created_ms=0, completion_time=lambda: t.plus_millis(1))
    assert both() == (before, before)  # the data instant is pending: its block does not count
    b.files.instant(t, Action.COMMIT, State.COMPLETED, encode_commit_metadata(CommitMetadata("UPSERT", {}), layout=2),
                    completed=t.plus_millis(2))
    assert both() == (wider, wider)


def _copy(mdt_tables: dict[str, Path], fixture: str, tmp_path: Path) -> Path:
    dest = tmp_path / "t"
    shutil.copytree(mdt_tables[fixture], dest)
    return dest


F9 = "sample_table/cow/v9_txns_simple_meta"


def test_deleting_a_listed_file_shows_as_listed_but_absent(mdt_tables: dict[str, Path], tmp_path: Path) -> None:
    base = _copy(mdt_tables, F9, tmp_path)
    storage = storage_for(str(base))
    state = read_table_state(storage)
    victim = next(p for p in sorted(base.glob("region=*/*.parquet")))
    victim.unlink()
    drift = compare(read_files_listing(storage, state.metadata), read_table_state(storage))
    assert drift.listed_but_absent == (f"{victim.parent.name}/{victim.name}",)
    assert not drift.present_but_unlisted


def test_a_committed_file_missing_from_the_mdt_shows_as_present_but_unlisted(
    mdt_tables: dict[str, Path], tmp_path: Path
) -> None:
    base = _copy(mdt_tables, F9, tmp_path)
    storage = storage_for(str(base))
    # Drop the newest MDT deltacommit that touched the files partition: its data files become unlisted.
    timeline = base / ".hoodie/metadata/.hoodie/timeline"
    newest_files_log = sorted((base / ".hoodie/metadata/files").glob(".files-0000-0_2*.log.*"))[-1]
    instant = newest_files_log.name.split("_")[1].split(".")[0]
    for f in timeline.glob(f"{instant}_*.deltacommit"):
        f.unlink()
    drift = compare(read_files_listing(storage, read_table_metadata(storage)), read_table_state(storage))
    assert drift.present_but_unlisted
    assert not drift.listed_but_absent


def test_compare_reports_each_kind_of_drift_by_partition(mdt_tables: dict[str, Path]) -> None:
    """Drift found partition by partition: a partition the MDT does not name, one it lists no files
    for, and a listed file storage lacks (reported unless a pending write owns it)."""
    storage = storage_for(str(mdt_tables[F9]))
    state = read_table_state(storage)
    listing = read_files_listing(storage, state.metadata)
    first, *_ = sorted(listing.files)
    unnamed = FilesListing(listing.partitions - {first}, listing.files, listing.schema)
    assert compare(unnamed, state).partitions_unlisted == (first,)
    stored = sorted(f"{first}/{name}" for g in state.file_groups if g.partition == first
                    for s in g.slices for name in s.file_names)
    emptied = FilesListing(listing.partitions, {p: f for p, f in listing.files.items() if p != first}, listing.schema)
    assert compare(emptied, state).present_but_unlisted == tuple(stored)
    ghosts = {**listing.files, "nowhere": {"a.parquet": 1, "b.parquet": 2}}
    drift = compare(FilesListing(listing.partitions, ghosts, listing.schema), state)
    assert drift.listed_but_absent == ("nowhere/a.parquet", "nowhere/b.parquet")
    pending = dataclasses.replace(state, uncommitted_files=("nowhere/b.parquet",))
    assert compare(FilesListing(listing.partitions, ghosts, listing.schema), pending).listed_but_absent == (
        "nowhere/a.parquet",)


def test_merging_file_lists_keeps_the_larger_size_and_the_newest_tombstone() -> None:
    """Log blocks merge in order: a name deleted then added again is live, a deletion wins over an
    older size, the larger of two live sizes is kept (a retried append), and the older record is
    left as it was (the merged one may share its entries)."""
    def listing(**files: tuple[int, bool]) -> dict[str, object]:
        return {"key": "p", "type": FILE_LIST,
                "filesystemMetadata": {n: {"size": s, "isDeleted": d} for n, (s, d) in files.items()}}

    older = listing(a=(10, False), b=(5, False), c=(7, False))
    before = copy.deepcopy(older)
    merged = _combine(older, listing(a=(8, False), b=(0, True), d=(3, False)))
    merged = _combine(merged, listing(b=(6, False), c=(0, True)))
    assert file_entries(merged) == {"a": (10, False), "b": (6, False), "c": (0, True), "d": (3, False)}
    assert older == before
    assert merged["type"] == FILE_LIST


def test_blocks_of_a_pending_data_instant_are_ignored(mdt_tables: dict[str, Path], tmp_path: Path) -> None:
    """The MDT deltacommit completed but its data instant did not: Hudi's readers ignore the block."""
    base = _copy(mdt_tables, F9, tmp_path)
    storage = storage_for(str(base))
    before = read_files_listing(storage, read_table_metadata(storage))
    data_timeline = base / ".hoodie/timeline"
    newest_files_log = sorted((base / ".hoodie/metadata/files").glob(".files-0000-0_2*.log.*"))[-1]
    instant = newest_files_log.name.split("_")[1].split(".")[0]
    completed = next(data_timeline.glob(f"{instant}_*.*"))
    action = completed.name.split(".", 1)[1]
    completed.unlink()
    pending = {
        "commit": "commit.requested",
        "deltacommit": "deltacommit.requested",
        "replacecommit": "replacecommit.requested",
    }
    if not (data_timeline / f"{instant}.{pending.get(action, action + '.requested')}").exists():
        (data_timeline / f"{instant}.{action}.inflight").write_bytes(b"")
    after = read_files_listing(storage, read_table_metadata(storage))
    assert after.files != before.files


def test_validity_follows_hudi_rules() -> None:
    data = Timeline.from_file_names(
        [
            "20240101000000000_20240101000000100.commit",
            "20240102000000000.commit.requested",
            "20240103000000000_20240103000000100.rollback",
        ],
        folder="t",
    )
    mdt = Timeline.from_file_names(
        [
            "00000000000000000_20231231000000000.deltacommit",
            "20240101000000000_20240101000000050.deltacommit",
            "20240102000000000_20240102000000050.deltacommit",
            "20231230000000000_20231230000000050.deltacommit",
            "20240104000000000.deltacommit.inflight",
        ],
        folder="m",
    )
    valid = valid_instants(data, mdt, {"20231229000000000"})
    assert "20240101000000000" in valid  # completed data instant
    assert "20240102000000000" not in valid  # data instant still pending
    assert "20231230000000000" in valid  # MDT-only (e.g. indexing) deltacommit
    assert "00000000000000000" in valid  # initialization
    assert "20231229000000000" in valid  # rolled back by a completed rollback
    assert "20240104000000000" not in valid  # MDT inflight


def test_validity_on_version_6_follows_hudi_0_14_rules() -> None:
    # 0.14/0.15 (`isValidInstant`) accept MDT-only deltacommits only with an MDT suffix: a plain
    # instant without its data instant is not valid there, though 1.x accepts it.
    data = Timeline.from_file_names(["20240101000000000.commit", "20240102000000000.commit.requested"], folder="t")
    mdt = Timeline.from_file_names(
        ["00000000000000010.deltacommit", "20240101000000000.deltacommit", "20240102000000000.deltacommit",
         "20231230000000000.deltacommit", "20231230000000000004.deltacommit", "20231230000000000011.deltacommit",
         "20231231000000000007.deltacommit", "20240103000000000004.deltacommit.inflight"],
        folder="m",
    )
    valid = valid_instants(data, mdt, (), table_version=6)
    assert {"20240101000000000", "00000000000000010", "20231230000000000004", "20231230000000000011"} <= valid
    assert not {"20240102000000000", "20231230000000000", "20231231000000000007", "20240103000000000004"} & valid
    assert "20231230000000000" in valid_instants(data, mdt, (), table_version=8)


def test_read_metadata_table_reads_the_mdt_config(mdt_tables: dict[str, Path]) -> None:
    mdt = read_metadata_table(storage_for(str(mdt_tables[F9])))
    assert mdt.config.base_file_format == "HFILE"
    assert mdt.config.version == 9
    assert mdt.timeline.completed()


@pytest.mark.parametrize("fixture", MDT_IDS)
def test_every_fixture_mdt_is_consistent_with_its_data_timeline(mdt_tables: dict[str, Path], fixture: str) -> None:
    from runner.hudi.mdt.check import check_metadata_table

    storage = storage_for(str(mdt_tables[fixture]))
    health = check_metadata_table(storage, read_table_state(storage))
    assert health.ok, health.problems


def test_a_data_instant_without_its_mdt_deltacommit_is_reported_as_behind(
    mdt_tables: dict[str, Path], tmp_path: Path
) -> None:
    from runner.hudi.mdt.check import consistency_problems

    base = _copy(mdt_tables, F9, tmp_path)
    storage = storage_for(str(base))
    # the MDT deltacommit mirroring F9's clustering replacecommit
    newest = next((base / ".hoodie/metadata/.hoodie/timeline").glob("20260307162454799_*.deltacommit"))
    newest.unlink()
    problems = consistency_problems(read_table_metadata(storage), read_metadata_table(storage))
    assert any("behind the data table" in p and newest.name.split("_")[0] in p for p in problems)
    assert any("pending or failed write" in p for p in problems)


def test_version_6_slices_by_the_base_instant_in_log_names() -> None:
    from runner.hudi.mdt.view import latest_slices

    mdt = Timeline.from_file_names(
        ["00000000000000010.deltacommit", "20240101000000000.deltacommit", "20240101000000000001.commit"], folder="m")
    names = [
        "files-0000-0_0-0-0_00000000000000010.hfile", ".files-0000-0_00000000000000010.log.1_0-0-0",
        ".files-0000-0_00000000000000010.log.2_1-2-3",
        # MDT compaction (0.14: `<deltacommit>001`) opened a new slice; later logs carry its instant
        "files-0000-0_4-5-6_20240101000000000001.hfile", ".files-0000-0_20240101000000000001.log.1_7-8-9",
        # a log-only group: its latest base instant's logs
        ".col-stats-0000-0_00000000000000010.log.1_0-0-0", ".col-stats-0000-0_20240101000000000001.log.1_0-0-0",
        ".col-stats-0000-0_20240101000000000001.log.2_0-1-0",
    ]
    slices = {s.file_id: s for s in latest_slices([(n, 1) for n in names], mdt, table_version=6)}
    files = slices["files-0000-0"]
    assert files.base_file is not None and files.base_file.instant_time == "20240101000000000001"
    assert [log.name for log in files.log_files] == [".files-0000-0_20240101000000000001.log.1_7-8-9"]
    stats = slices["col-stats-0000-0"]
    assert stats.base_file is None
    assert [log.version for log in stats.log_files] == [1, 2]
    assert {log.instant_time for log in stats.log_files} == {"20240101000000000001"}
