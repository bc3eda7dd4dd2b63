"""Acceptance on synthetic tables with a metadata table (table versions 6 and 8, COW and MOR,
partitioned and not, with bloom_filters and, on version 8, column_stats partitions): `apply`
resizes the small files, recording the clustering in the MDT, then cleans the replaced files.
After each: hudi-rs reads the same latest rows, every completed instant still reads (fewer rows at
most, never NotFound), our MDT reader agrees with storage, and a second plan is in sync; the new
files' index records are their footers' statistics and bloom filters, the cleaned files' tombstones."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table, plan_one
from runner.hudi.instant import Action
from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table
from runner.hudi.state import read_table_metadata, read_table_state
from runner.plan.model import TableStatus
from runner.storage import storage_for
from tests.mdt.synthetic import (
    VARIANT_IDS,
    VARIANTS,
    assert_indexed,
    assert_tombstoned,
    build_with_mdt,
    expected_rows,
    indexes_for,
    latest_rows,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
MIB = 1024 * 1024
SIZING = FileSizing(max_file_size=128 * MIB, small_file_limit=100 * MIB)
KEEP_ALL = CleanPolicy(CleanPolicyName.KEEP_LATEST_COMMITS, commits_retained=1000)
VERSIONS_1 = CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)


def _decl(base: str, policy: CleanPolicy) -> TableDeclaration:
    return TableDeclaration(name="t", path=base, source_file="tables/t.yml", clean=policy, file_sizing=SIZING,
                            file_sizing_declared=True)


def _readers_agree(base: str, rows: list[dict[str, object]], before: dict[str, list[dict[str, object]]]) -> None:
    storage = storage_for(base)
    assert latest_rows(base) == rows
    for t, old in before.items():  # a cleaned instant may lose rows, but never fails with NotFound
        assert all(row in old for row in latest_rows(base, as_of=t)), t
    health = check_metadata_table(storage, read_table_state(storage))
    assert health.ok, health.to_json()


@pytest.mark.parametrize(("version", "table_type", "partitioned"), VARIANTS, ids=VARIANT_IDS)
def test_resize_then_clean_keep_the_metadata_table_in_step(
    tmp_path: Path, spark_deleter, version: int, table_type: str, partitioned: bool,
) -> None:
    b = build_with_mdt(tmp_path / "t", version, table_type, partitioned, indexes_for(version, resize=True))
    storage = storage_for(b.path)
    rows = expected_rows(b)
    writes = [i.time for i in read_table_metadata(storage).timeline.completed_writes]
    before = {t: latest_rows(b.path, as_of=t) for t in writes}
    planned = plan_one(_decl(b.path, KEEP_ALL), storage, now=NOW)
    assert planned.sizing is not None and not planned.sizing.is_empty

    resized = apply_table(_decl(b.path, KEEP_ALL), None, now=NOW, spark_settings=SparkSettings(),
                          deleter_factory=spark_deleter)

    assert resized.status == "success" and resized.files_rewritten > 0, resized
    _readers_agree(b.path, rows, before)
    meta = read_table_metadata(storage)
    (replace,) = meta.timeline.completed(Action.REPLACE_COMMIT)[-1:]
    mdt = read_metadata_table(storage)
    assert any(i.time == replace.time for i in mdt.timeline.completed(Action.DELTA_COMMIT))
    listed = read_files_listing(storage, meta, mdt).files
    new_files = [p for p in Path(b.path).rglob(f"*_{replace.time}.parquet")]
    assert new_files and all(p.name in listed[str(p.parent.relative_to(b.path)).replace(".", "")] for p in new_files)
    assert_indexed(b, new_files, str(replace.time))
    assert plan_one(_decl(b.path, KEEP_ALL), storage, now=NOW).status is TableStatus.IN_SYNC
    planned_clean = plan_one(_decl(b.path, VERSIONS_1), storage, now=NOW).clean
    assert planned_clean is not None
    deleted = {f.path for f in planned_clean.files_to_delete}

    cleaned = apply_table(_decl(b.path, VERSIONS_1), None, now=NOW, spark_settings=SparkSettings(),
                          deleter_factory=spark_deleter)

    assert cleaned.status == "success" and cleaned.files_deleted > 0, cleaned
    _readers_agree(b.path, rows, before)
    assert_tombstoned(b, deleted)
    assert plan_one(_decl(b.path, VERSIONS_1), storage, now=NOW).status is TableStatus.IN_SYNC
