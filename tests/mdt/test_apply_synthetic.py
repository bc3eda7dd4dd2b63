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
from runner.errors import RefusedError
from runner.execute.apply import apply_table, plan_one
from runner.hudi.instant import Action
from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.mdt.keys import bloom_filter_key
from runner.hudi.mdt.logfile import HeaderKey, LogBlock, encode_log_block, read_log_blocks
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table, read_partition
from runner.hudi.state import read_table_metadata, read_table_state
from runner.plan.model import TableStatus
from runner.plan.steps import StepKind, UpdateMetadataTable
from runner.storage import storage_for
from runner.testing import COPY_ON_WRITE, TableBuilder
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
    _check_clean_is_recorded(tmp_path, spark_deleter, version, table_type, partitioned, indexes_for(version))


@pytest.mark.parametrize("version", [6, 8])
def test_clean_is_recorded_in_a_metadata_table_of_files_only(tmp_path: Path, spark_deleter, version: int) -> None:
    # No index partition: nothing of the column-stats or bloom-filter records is built (a version-6
    # schema need not hold their fields).
    _check_clean_is_recorded(tmp_path, spark_deleter, version, COPY_ON_WRITE, True, ())


def _check_clean_is_recorded(tmp_path: Path, spark_deleter, version: int, table_type: str, partitioned: bool,
                             indexes: tuple[str, ...]) -> None:
    b = build_with_mdt(tmp_path / "t", version, table_type, partitioned, indexes)
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


@pytest.mark.parametrize("partitioned", [True, False])
def test_a_clean_tombstones_what_expression_indexes_hold_for_the_cleaned_files(
    tmp_path: Path, spark_deleter, partitioned: bool,
) -> None:
    # ExpressionIndexer.buildClean writes only tombstones into each expression index's partition:
    # bloom-filter ones (type bloom_filters) or column-stats ones of its source field (type
    # column_stats). The runner tombstones what the partition holds for each cleaned file.
    from runner.testing.metadata_indexes import ExpressionIndex

    stats_index = ExpressionIndex("expr_index_amount_stats", "column_stats", "amount")
    bloom_index = ExpressionIndex("expr_index_ts_bloom", "bloom_filters", "ts")
    partitions = ("region=eu", "region=us") if partitioned else ()
    b = TableBuilder(tmp_path / "t", name="orders", partitions=partitions, version=8, table_type="COPY_ON_WRITE",
                     metadata_table=True, metadata_indexes=("column_stats",),
                     expression_indexes=(stats_index, bloom_index))
    b.commit(writes=2)
    b.commit(updates=1)
    b.commit(writes=1, updates=1)
    storage = storage_for(b.path)
    decl = _decl(b.path)
    rows = expected_rows(b)
    planned = plan_one(decl, storage, now=NOW)
    assert planned.clean is not None and not planned.clean.is_empty
    deleted = {f.path for f in planned.clean.files_to_delete}
    update = planned.step(StepKind.UPDATE_METADATA_TABLE)
    assert isinstance(update, UpdateMetadataTable) and not update.refusals
    assert {stats_index.name, bloom_index.name} <= set(update.partitions)

    result = apply_table(decl, None, now=NOW, spark_settings=SparkSettings(), deleter_factory=spark_deleter)

    assert result.status == "success", result
    assert latest_rows(b.path) == rows
    assert check_metadata_table(storage, read_table_state(storage)).ok
    assert plan_one(decl, storage, now=NOW).status is TableStatus.IN_SYNC
    meta = read_table_metadata(storage)
    mdt = read_metadata_table(storage)
    where = {p.rpartition("/")[2]: p.rpartition("/")[0] for p in deleted}
    names = set(where)
    live = {p.name for p in Path(b.path).rglob("*.parquet")}
    where |= {p.name: str(p.parent.relative_to(b.path)).replace(".", "") for p in Path(b.path).rglob("*.parquet")}
    stats = read_partition(storage, meta, mdt, stats_index.name, with_names=True)[0].values()
    by_file = {s["ColumnStatsMetadata"]["fileName"]: s["ColumnStatsMetadata"] for s in stats}
    assert set(by_file) == names | live
    assert all(by_file[n]["isDeleted"] == (n in names) for n in by_file)
    assert all(by_file[n]["columnName"] == "amount" for n in by_file)
    blooms = read_partition(storage, meta, mdt, bloom_index.name)[0]
    for name in names | live:
        record = blooms[bloom_filter_key(where[name] or ".", name)]["BloomFilterMetadata"]
        assert record["isDeleted"] == (name in names), name


def test_an_expression_index_of_another_type_or_without_definition_is_refused_with_the_reason(tmp_path: Path) -> None:
    import json

    from runner.hudi.mdt.maintain import refusal_reasons
    from runner.testing.metadata_indexes import ExpressionIndex

    b = TableBuilder(tmp_path / "t", name="orders", version=8, metadata_table=True,
                     expression_indexes=(ExpressionIndex("expr_index_ts", "bloom_filters", "ts"),))
    b.commit(writes=1)
    storage = storage_for(b.path)
    assert refusal_reasons(storage, read_table_metadata(storage)) == []
    defs = Path(b.path, ".hoodie/.index_defs/index.json")
    text = json.loads(defs.read_text())
    text["indexDefinitions"]["expr_index_ts"]["indexType"] = "vector"
    defs.write_text(json.dumps(text))
    (reason,) = refusal_reasons(storage, read_table_metadata(storage))
    assert "expr_index_ts (vector)" in reason
    del text["indexDefinitions"]["expr_index_ts"]
    defs.write_text(json.dumps(text))
    (reason,) = refusal_reasons(storage, read_table_metadata(storage))
    assert "expr_index_ts (no definition)" in reason


def test_index_definitions_nested_too_deeply_are_a_reason_naming_the_file(tmp_path: Path) -> None:
    # json.loads raised RecursionError, which the reader did not catch: an internal error for the table.
    from runner.hudi.mdt.maintain import refusal_reasons
    from runner.testing.metadata_indexes import ExpressionIndex

    b = TableBuilder(tmp_path / "t", name="orders", version=8, metadata_table=True,
                     expression_indexes=(ExpressionIndex("expr_index_ts", "bloom_filters", "ts"),))
    b.commit(writes=1)
    storage = storage_for(b.path)
    defs = Path(b.path, ".hoodie/.index_defs/index.json")
    defs.write_text('{"indexDefinitions": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (reason,) = refusal_reasons(storage, read_table_metadata(storage))
    assert "cannot read the expression indexes' definitions in .hoodie/.index_defs/index.json" in reason
    assert "nested too deeply to read" in reason


@pytest.mark.parametrize(
    ("schema", "found"),
    [
        ("{not json", "is not JSON"),
        ('{"type": "record", "name": "r", "fields": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('["null", "string"]', "found list"),
        ('{"type": "record", "name": "r", "fields": [{"name": "a", "type": "no_such_type"}]}', "not a valid Avro"),
    ],
    ids=["not-json", "deep", "a-union", "unknown-type"],
)
def test_a_damaged_record_schema_in_the_files_partition_refuses_the_clean_by_name(
    tmp_path: Path, schema: str, found: str
) -> None:
    # The schema is bytes from storage (a log block's header): whatever is wrong with it, the
    # clean is refused naming the file before anything is deleted, never with a decoder's error.
    b = build_with_mdt(tmp_path / "t", 8, COPY_ON_WRITE, True)
    folder = Path(b.path, ".hoodie/metadata/files")
    newest = max((p for p in folder.iterdir() if ".log." in p.name), key=lambda p: p.stat().st_mtime_ns)
    blocks = list(read_log_blocks(newest.read_bytes(), where=str(newest)))
    damaged = [LogBlock(block.block_type, {**block.header, HeaderKey.SCHEMA: schema}, block.content, block.footer)
               if HeaderKey.SCHEMA in block.header else block for block in blocks]
    newest.write_bytes(b"".join(encode_log_block(block) for block in damaged))
    before = sorted(str(p.relative_to(b.path)) for p in Path(b.path).rglob("*") if p.is_file())

    with pytest.raises(RefusedError) as refused:
        apply_table(_decl(b.path), None, now=NOW, spark_settings=SparkSettings(),
                    deleter_factory=lambda: lambda store, paths: store.delete_many(paths))

    message = refused.value.message
    assert found in message and ".hoodie/metadata/files/" in message, message
    assert sorted(str(p.relative_to(b.path)) for p in Path(b.path).rglob("*") if p.is_file()) == before
