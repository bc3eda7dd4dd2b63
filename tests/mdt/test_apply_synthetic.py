"""Acceptance on synthetic tables with a metadata table: table versions 6 and 8, COW and MOR,
partitioned and not, with bloom_filters and column_stats partitions (on version 6, whose indexed
columns are in no table file, the tombstones are those of the records the MDT holds). `apply`
(metadata_table: keep) cleans and records the clean in the MDT; then hudi-rs reads the same latest
rows, every completed instant still reads (fewer rows at most, never NotFound), our MDT reader
agrees with storage, a second plan is in sync, and every cleaned base file's index records are
tombstones."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table, plan_one
from runner.hudi.instant import Action
from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.mdt.logfile import read_log_blocks
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table
from runner.hudi.state import read_table_metadata, read_table_state
from runner.plan.model import TableStatus
from runner.storage import storage_for
from tests.mdt.synthetic import (
    VARIANT_IDS,
    VARIANTS,
    assert_tombstoned,
    build_with_mdt,
    expected_rows,
    indexes_for,
    latest_rows,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
VERSIONS_1 = CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)


def _decl(base: str) -> TableDeclaration:
    return TableDeclaration(
        name="t", path=base, source_file="tables/t.yml", clean=VERSIONS_1, file_sizing=FileSizing(small_file_limit=0)
    )


@pytest.mark.parametrize(("version", "table_type", "partitioned"), VARIANTS, ids=VARIANT_IDS)
def test_clean_is_recorded_in_the_metadata_table(
    tmp_path: Path,
    spark_deleter,
    version: int,
    table_type: str,
    partitioned: bool,
) -> None:
    b = build_with_mdt(tmp_path / "t", version, table_type, partitioned, indexes_for(version))
    storage = storage_for(b.path)
    decl = _decl(b.path)
    rows = expected_rows(b)
    writes = [i.time for i in read_table_metadata(storage).timeline.completed_writes]
    before = {t: latest_rows(b.path, as_of=t) for t in writes}
    planned = plan_one(decl, storage, now=NOW)
    assert planned.clean is not None and not planned.clean.is_empty
    deleted = {f.path for f in planned.clean.files_to_delete}

    result = apply_table(decl, None, now=NOW, spark_settings=SparkSettings(), deleter_factory=spark_deleter)

    assert result.status == "success", result
    assert not any(Path(b.path, p).exists() for p in deleted)
    assert latest_rows(b.path) == rows
    for t in writes:  # a cleaned instant may lose rows, but never fails with NotFound
        after = latest_rows(b.path, as_of=t)
        assert all(row in before[t] for row in after), t
    health = check_metadata_table(storage, read_table_state(storage))
    assert health.ok, health.to_json()
    assert plan_one(decl, storage, now=NOW).status is TableStatus.IN_SYNC
    meta = read_table_metadata(storage)
    (clean,) = meta.timeline.completed(Action.CLEAN)
    mdt = read_metadata_table(storage)
    mirror = next(i for i in mdt.timeline.completed(Action.DELTA_COMMIT) if i.time == clean.time)
    if version >= 8:
        assert mirror.completion_time < clean.completion_time  # MDT first, then the data instant
    else:  # 0.14/0.15: the next log version over the slice's base instant, whose block is the clean's
        logs = sorted(
            Path(b.path, ".hoodie/metadata/files").glob(".files-0000-0_00000000000000010.log.*"),
            key=lambda p: int(p.name.split(".log.")[1].split("_")[0]),
        )
        assert len(logs) == len(writes) + 2  # the initialization's, one per write, the clean's
        (block,) = read_log_blocks(logs[-1].read_bytes(), where=str(logs[-1]))
        assert block.instant_time == clean.time
    listed = {
        f"{p}/{n}".lstrip("/") for p, names in read_files_listing(storage, meta, mdt).files.items() for n in names
    }
    assert not listed & deleted
    assert_tombstoned(b, deleted)


def test_a_v6_column_stats_index_is_kept_by_clean_but_refuses_a_resize_with_the_reason_in_the_plan(
    tmp_path: Path,
) -> None:
    # Hudi 0.14/0.15 keep the indexed columns in the writer's config, not in the table: a clean
    # tombstones the records the MDT holds, but a resize could not tell which columns the new
    # files' stats need, so the plan announces the refusal and why.
    b = build_with_mdt(tmp_path / "t", 6, "COPY_ON_WRITE", True, ("column_stats",))
    decl = TableDeclaration(name="t", path=b.path, source_file="tables/t.yml", clean=VERSIONS_1,
                            file_sizing=FileSizing(max_file_size=128 * 2**20, small_file_limit=100 * 2**20),
                            file_sizing_declared=True)
    plan = plan_one(decl, storage_for(b.path), now=NOW)
    assert plan.clean is not None and not plan.clean.is_empty and plan.sizing is not None
    note = next(n for n in plan.notes if n.startswith("apply will refuse the resize"))
    assert "hoodie.metadata.index.column.stats.column.list" in note and "metadata_table: disable" in note
