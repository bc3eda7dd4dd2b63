"""Acceptance on synthetic tables with a metadata table: table versions 6 and 8, COW and MOR,
partitioned and not. `apply` (metadata_table: keep) cleans and records the clean in the MDT; then
hudi-rs reads the same latest rows, every completed instant still reads (fewer rows at most, never
NotFound), our MDT reader agrees with storage, and a second plan is in sync."""

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
from tests.mdt.synthetic import VARIANT_IDS, VARIANTS, build_with_mdt, expected_rows, latest_rows

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
    b = build_with_mdt(tmp_path / "t", version, table_type, partitioned)
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


def test_a_v6_column_stats_index_without_index_definitions_is_refused_before_any_delete(tmp_path: Path) -> None:
    # Hudi 0.14/0.15 keep the indexed columns in the writer's config, not in the table, so the
    # runner cannot tell which column-stats tombstones a clean needs: it refuses, deleting nothing.
    from runner.errors import RefusedError

    b = build_with_mdt(tmp_path / "t", 6, "COPY_ON_WRITE", True)
    props = Path(b.path, ".hoodie/hoodie.properties")
    props.write_text(
        props.read_text().replace(
            "hoodie.table.metadata.partitions=files", "hoodie.table.metadata.partitions=column_stats,files"
        )
    )
    stats = Path(b.path, ".hoodie/metadata/column_stats")
    stats.mkdir()
    init = Path(b.path, ".hoodie/metadata/files/.files-0000-0_00000000000000010.log.1_0-0-0")
    (stats / ".col-stats-0000-0_00000000000000010.log.1_0-0-0").write_bytes(init.read_bytes())
    files = sorted(p for p in Path(b.path).rglob("*.parquet"))

    def no_deletes():
        def delete(storage, paths):
            raise AssertionError(f"nothing may be deleted, got {paths}")

        return delete

    with pytest.raises(RefusedError, match="column_stats index covers") as caught:
        apply_table(_decl(b.path), None, now=NOW, spark_settings=SparkSettings(), deleter_factory=no_deletes)
    assert "metadata_table: disable" in (caught.value.hint or "")
    assert sorted(p for p in Path(b.path).rglob("*.parquet")) == files
