"""Resize as a Hudi clustering, checked with the independent `hudi` reader on real fixture tables.

The tables are hudi-rs fixtures (written by Hudi 0.14 and 1.1) to which `add_small_files` appends
commits of small file groups written like a Hudi bulk insert, so that sizing has work to do.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing
from runner.errors import RefusedError
from runner.execute.resize import ResizeRunner, finish_pending_resize, run_resize
from runner.execute.resize_job import GroupRewrite, rewrite_group
from runner.execute.resize_plan import MARKER_VALUE, STRATEGY_CLASS, encode_plan, is_runner_plan
from runner.failpoints import EXIT_CODE
from runner.hudi import bloom
from runner.hudi.avro import read_container
from runner.hudi.files import BaseFile, relative_path
from runner.hudi.instant import Action, InstantTime
from runner.hudi.metadata import (
    CommitMetadata,
    RequestedReplace,
    WriteStat,
    decode_commit_metadata,
    decode_requested_replace,
    encode_commit_metadata,
    encode_requested_replace,
)
from runner.hudi.state import TableState, read_table_metadata, read_table_state
from runner.hudi.timeline_writer import TimelineWriter, new_instant_time
from runner.plan.clean import clean_scope, plan_clean
from runner.plan.model import FileToRewrite, RewriteGroup, SizingStep
from runner.plan.sizing import plan_sizing
from runner.storage import LocalStorage, storage_for

V6 = "sample_table/cow/v6_simplekeygen_nonhivestyle"
V9 = "sample_table/cow/v9_txns_simple_nometa"
V9_MDT = "sample_table/cow/v9_txns_simple_meta"
KB = 1024
SIZING = FileSizing(max_file_size=350 * KB, small_file_limit=200 * KB)


def clock() -> datetime:
    return datetime.now(UTC)


# -- building tables with many small files ---------------------------------------------------------


def add_small_files(base: Path, partition: str, count: int, *, rows: int = 2000, seed: int = 0) -> list[str]:
    """Commit `count` new file groups of `rows` rows each in `partition`, as a bulk insert would.

    Rows copy one existing row of the partition with fresh record keys and a random payload string
    (about 50 bytes a row after compression), so file sizes are data, not footer.
    """
    storage = storage_for(str(base))
    state = read_table_state(storage)
    meta = state.metadata
    template = _template_row(storage, state, partition)
    time = new_instant_time(meta.timeline, clock=clock(), table_timezone=meta.config.timezone)
    rng = random.Random(seed)
    stats, paths = [], []
    for n in range(count):
        file_id = f"{rng.getrandbits(128):032x}-0"
        name = BaseFile(file_id, f"{n}-1-{n}", time, "parquet").name
        table = _rows(
            template, meta.config.record_key_fields[0], time, name, rows, rng, offset=10_000 * (seed + 1) + n * rows
        )
        path = relative_path(partition, name)
        pq.write_table(table, base / path, compression="gzip")
        size = (base / path).stat().st_size
        stats.append(
            WriteStat(
                partition,
                file_id,
                path,
                None,
                num_writes=rows,
                num_inserts=rows,
                total_write_bytes=size,
                file_size_in_bytes=size,
            )
        )
        paths.append(path)
    schema = next(
        c.extra_metadata["schema"]
        for _, c in sorted(meta.commits.items(), reverse=True)
        if "schema" in c.extra_metadata
    )
    commit = CommitMetadata("BULK_INSERT", {partition: tuple(stats)}, extra_metadata={"schema": schema})
    writer = TimelineWriter(storage, meta.timeline_folder, meta.config.timeline_layout_version)
    writer.requested(time, Action.COMMIT, b"")
    inflight = writer.inflight(time, Action.COMMIT)
    done = time.plus_millis(5)
    writer.complete(
        inflight, encode_commit_metadata(commit, layout=meta.config.timeline_layout_version), completion=done
    )
    return paths


def _template_row(storage: LocalStorage, state: TableState, partition: str) -> pa.Table:
    group = next(g for g in state.active_groups if g.partition == partition)
    assert group.latest is not None and group.latest.base_file is not None
    data = storage.read(relative_path(partition, group.latest.base_file.name))
    return pq.read_table(pa.BufferReader(data)).slice(0, 1).replace_schema_metadata(None)


def _rows(
    template: pa.Table, key_field: str, time: InstantTime, name: str, rows: int, rng: random.Random, *, offset: int
) -> pa.Table:
    table = template.take([0] * rows)
    keys = list(range(offset, offset + rows))
    key_type = table.schema.field(key_field).type
    values = {
        "_hoodie_commit_time": [str(time)] * rows,
        "_hoodie_commit_seqno": [f"{time}_0_{i}" for i in range(rows)],
        "_hoodie_record_key": [f"K{k:08d}" if pa.types.is_string(key_type) else str(k) for k in keys],
        "_hoodie_file_name": [name] * rows,
        key_field: [f"K{k:08d}" for k in keys] if pa.types.is_string(key_type) else keys,
    }
    payload = next(
        f.name
        for f in table.schema
        if pa.types.is_string(f.type) and f.name not in values and not f.name.startswith("_hoodie")
    )
    values[payload] = [f"{rng.getrandbits(160):040x}" for _ in range(rows)]
    for column, items in values.items():
        index = table.schema.get_field_index(column)
        table = table.set_column(index, table.schema.field(index), pa.array(items, table.schema.field(index).type))
    return table


# -- the oracle ------------------------------------------------------------------------------------


def snapshot(base: Path) -> list[dict[str, Any]]:
    """Rows the `hudi` reader returns, without `_hoodie_file_name` (the one column clustering changes)."""
    from hudi import HudiTable

    table = pa.Table.from_batches(HudiTable(str(base)).read())
    return sorted(table.drop_columns(["_hoodie_file_name"]).to_pylist(), key=repr)


def latest_files(base: Path) -> list[tuple[str, str, int]]:
    from hudi import HudiTable

    return sorted(
        (s.partition_path, s.base_file_name, s.base_file_size) for s in HudiTable(str(base)).get_file_slices()
    )


def plan(base: Path, sizing: FileSizing = SIZING) -> tuple[LocalStorage, TableState, SizingStep]:
    storage = storage_for(str(base))
    state = read_table_state(storage)
    step = plan_sizing(sizing, state)
    assert step is not None and not step.is_empty
    return storage, state, step


@pytest.fixture
def v6_small(hudi_fixture) -> Path:
    """v6 COW, partition 10 with 7 and partition 20 with 4 small file groups (~100 KB each)."""
    base = hudi_fixture(V6)
    add_small_files(base, "10", 4, seed=1)
    add_small_files(base, "10", 3, seed=2)
    add_small_files(base, "20", 4, seed=3)
    return base


# -- end to end, with Spark ------------------------------------------------------------------------


def test_v6_resize_keeps_the_snapshot_and_replaces_the_inputs(v6_small, spark):
    before = snapshot(v6_small)
    storage, state, step = plan(v6_small)
    inputs = {(g.partition, f.file_id) for g in step.groups for f in g.files}

    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    assert snapshot(v6_small) == before
    after = read_table_state(storage)
    assert inputs <= set(after.metadata.replaced)
    assert {after.metadata.replaced[k] for k in inputs} == {InstantTime(outcome.instants[0])}
    time = outcome.instants[0]
    assert outcome.instants_written == (
        f"{time}.replacecommit.requested",
        f"{time}.replacecommit.inflight",
        f"{time}.replacecommit",
    )
    assert outcome.files_rewritten == len(inputs) == sum(len(g.files) for g in step.groups)
    assert outcome.bytes_rewritten == sum(g.total_bytes for g in step.groups)
    assert len(outcome.output_files) == len(step.groups)
    latest = latest_files(v6_small)
    assert {(p, n) for p, n, _ in latest} >= {tuple(f.split("/")) for f in outcome.output_files}
    for partition in ("10", "20"):
        small = [n for p, n, size in latest if p == partition and size < SIZING.small_file_limit]
        assert len(small) <= 1, small


def test_v6_completed_metadata_is_what_hudi_records_for_clustering(v6_small, spark):
    storage, state, step = plan(v6_small)
    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)
    time = outcome.instants[0]
    raw = (v6_small / ".hoodie" / f"{time}.replacecommit").read_bytes()
    document = json.loads(raw)
    meta = decode_commit_metadata(raw, path="t")
    assert document["operationType"] == "CLUSTER" and meta.is_replace
    assert meta.extra_metadata["schema"] == state.metadata.commits[max(state.metadata.commits)].extra_metadata["schema"]
    expected: dict[str, set[str]] = {}
    for g in step.groups:
        expected.setdefault(g.partition, set()).update(f.file_id for f in g.files)
    assert {p: set(ids) for p, ids in meta.partition_to_replace_file_ids.items()} == expected
    for stat in document["partitionToWriteStats"]["10"]:
        size = (v6_small / stat["path"]).stat().st_size
        assert stat["prevCommit"] == "null"
        assert stat["numWrites"] == stat["numInserts"] > 0 and stat["numUpdateWrites"] == stat["numDeletes"] == 0
        assert stat["totalWriteBytes"] == stat["fileSizeInBytes"] == size
        assert BaseFile.parse(stat["path"].split("/")[-1]).instant_time == time
    requested = (v6_small / ".hoodie" / f"{time}.replacecommit.requested").read_bytes()
    assert (v6_small / ".hoodie" / f"{time}.replacecommit.inflight").read_bytes() == b""
    assert is_runner_plan(requested, path="r")


def test_v9_resize_uses_layout_2_names_and_avro(hudi_fixture, spark):
    base = hudi_fixture(V9)
    before = snapshot(base)
    storage, state, step = plan(base, FileSizing(max_file_size=1_000_000, small_file_limit=500_000))

    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    time = outcome.instants[0]
    requested, inflight, done = outcome.instants_written
    assert (requested, inflight) == (f"{time}.clustering.requested", f"{time}.clustering.inflight")
    assert done.startswith(f"{time}_") and done.endswith(".replacecommit")
    timeline = base / ".hoodie" / "timeline"
    assert sorted(p.name for p in timeline.iterdir() if p.name.startswith(time)) == sorted(outcome.instants_written)
    record = read_container((timeline / done).read_bytes(), path=done)
    assert record["operationType"] == "CLUSTER"
    assert set(record["partitionToReplaceFileIds"]) == {"region=eu", "region=us"}
    assert snapshot(base) == before
    from hudi import HudiTable

    replaces = [i.timestamp for i in HudiTable(str(base)).get_timeline().get_completed_replacecommits()]
    assert time in replaces
    assert {p for p, _, _ in latest_files(base)} == {"region=apac", "region=eu", "region=us"}
    assert sum(1 for p, n, _ in latest_files(base) if time in n) == 2


def test_meta_columns_are_preserved_except_the_file_name(v6_small, spark):
    storage, state, step = plan(v6_small)
    inputs = [f.path for g in step.groups for f in g.files]
    original = pa.concat_tables([pq.read_table(v6_small / p) for p in inputs])
    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)
    for path in outcome.output_files:
        table = pq.read_table(v6_small / path)
        assert set(table.column("_hoodie_file_name").to_pylist()) == {path.split("/")[-1]}
        footer = pq.ParquetFile(v6_small / path).metadata.metadata
        keys = table.column("_hoodie_record_key").to_pylist()
        assert footer[b"hoodie_min_record_key"].decode() == min(keys)
        assert footer[b"hoodie_max_record_key"].decode() == max(keys)
        assert footer[b"hoodie_bloom_filter_type_code"] == b"DYNAMIC_V0"
        assert footer[b"org.apache.hudi.bloomfilter"].decode() == bloom.serialize(pa.array(keys, pa.string()))
    written = pa.concat_tables([pq.read_table(v6_small / p) for p in outcome.output_files])
    columns = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path"]
    assert sorted(written.select(columns).to_pylist(), key=repr) == sorted(
        original.select(columns).to_pylist(), key=repr
    )


def test_clean_by_file_versions_then_lists_the_replaced_files(v6_small, spark):
    storage, state, step = plan(v6_small)
    run_resize(storage, state.metadata, step, spark=spark, clock=clock)
    after = read_table_state(storage)
    policy = CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    clean = plan_clean(policy, after, clean_scope(policy, after.metadata, now=clock()))
    deleted = {f.path for f in clean.files_to_delete}
    assert {f.path for g in step.groups for f in g.files} <= deleted


# -- crashes ---------------------------------------------------------------------------------------


def test_a_crash_after_scheduling_is_finished_by_the_next_run(v6_small, spark):
    before = snapshot(v6_small)
    storage, state, step = plan(v6_small)
    runner = ResizeRunner(storage, state.metadata, spark=spark, clock=clock)
    pending, _ = runner.schedule(step)
    group = step.groups[0]
    # what a task killed mid-way leaves behind: an output file of the pending instant
    leftover = relative_path(group.partition, BaseFile("dead-0", "0-9-9", pending.time, "parquet").name)
    (v6_small / leftover).write_bytes(b"half a parquet file")
    assert snapshot(v6_small) == before  # a pending instant's files are invisible

    outcome = finish_pending_resize(storage, read_table_metadata(storage), spark=spark, clock=clock)

    assert outcome is not None and outcome.instants == (str(pending.time),)
    assert leftover in outcome.partial_files_deleted and not (v6_small / leftover).exists()
    assert outcome.instants_written == (f"{pending.time}.replacecommit",)
    assert snapshot(v6_small) == before
    assert finish_pending_resize(storage, read_table_metadata(storage), spark=spark, clock=clock) is None
    written = {p.name for p in v6_small.rglob(f"*_{pending.time}.parquet")}
    assert written == {p.split("/")[-1] for p in outcome.output_files}


RESIZE_SCRIPT = textwrap.dedent("""
    import sys
    from datetime import datetime, timezone
    from runner.declarations.model import FileSizing, SparkSettings
    from runner.execute import resize_engine
    from runner.execute.resize import run_resize
    from runner.execute.spark import get_spark
    from runner.hudi.state import read_table_state
    from runner.storage import storage_for
    from runner.plan.sizing import plan_sizing

    storage = storage_for(sys.argv[1])
    state = read_table_state(storage)
    step = plan_sizing(FileSizing(max_file_size=int(sys.argv[2]), small_file_limit=int(sys.argv[3])), state)
    resize_engine.PINNED = sys.argv[4]
    # On demand, as `runner apply` passes it: the driver engine's runs start no JVM.
    settings = SparkSettings(master="local[1]", conf=())
    spark = resize_engine.SparkOnDemand(settings, lambda: get_spark(settings))
    run_resize(storage, state.metadata, step, spark=spark, clock=lambda: datetime.now(timezone.utc))
""")


@pytest.mark.crash
@pytest.mark.parametrize(("point", "engine"), [
    ("after_replace_requested", "driver"),
    ("after_rewrite", "driver"),
    ("mid_rewrite", "driver"),  # on the driver's threads a crash mid-file takes the whole process
    ("after_rewrite", "spark"),
])
def test_a_killed_process_is_finished_by_the_next_run(point, engine, v6_small, spark, tmp_path):
    before = snapshot(v6_small)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")} | {"RUNNER_FAILPOINT": point}
    script = tmp_path / "resize.py"
    script.write_text(RESIZE_SCRIPT)
    killed = subprocess.run(
        [sys.executable, str(script), str(v6_small), str(SIZING.max_file_size), str(SIZING.small_file_limit), engine],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert killed.returncode == EXIT_CODE, killed.stderr[-3000:]
    storage = storage_for(str(v6_small))
    meta = read_table_metadata(storage)
    (pending,) = meta.timeline.pending(Action.REPLACE_COMMIT)
    orphans = sorted(p.name for p in v6_small.rglob(f"*_{pending.time}.parquet"))
    orphans += sorted(p.name for p in v6_small.rglob(f".*_{pending.time}.parquet.*.tmp"))
    assert bool(orphans) == (point != "after_replace_requested")
    if point == "mid_rewrite":
        assert any(name.endswith(".tmp") for name in orphans)  # the file being written was not published
    assert snapshot(v6_small) == before

    outcome = finish_pending_resize(storage, meta, spark=spark, clock=clock)

    assert outcome is not None and set(orphans) == {p.split("/")[-1] for p in outcome.partial_files_deleted}
    assert not list(v6_small.rglob("*.tmp"))
    assert snapshot(v6_small) == before
    assert not read_table_metadata(storage).timeline.pending()
    assert read_table_state(storage).metadata.replaced


def test_pending_clustering_of_someone_else_is_left_alone(v6_small, spark):
    storage, state, step = plan(v6_small)
    meta = state.metadata
    time = new_instant_time(meta.timeline, clock=clock(), table_timezone=meta.config.timezone)
    writer = TimelineWriter(storage, meta.timeline_folder, 1)
    group = step.groups[0]
    foreign = encode_plan(SizingStep(1, 1, (group,)), base_uri=f"file:{v6_small}")
    record = read_container(foreign, path="p")
    record["clusteringPlan"]["extraMetadata"] = {}  # type: ignore[index]
    from runner.hudi.avro import write_container

    writer.requested(time, Action.REPLACE_COMMIT, write_container("HoodieRequestedReplaceMetadata", record))
    names = sorted(p.name for p in (v6_small / ".hoodie").iterdir())

    assert finish_pending_resize(storage, read_table_metadata(storage), spark=spark, clock=clock) is None
    assert sorted(p.name for p in (v6_small / ".hoodie").iterdir()) == names


# -- without Spark ---------------------------------------------------------------------------------


def test_the_plan_is_a_hudi_clustering_plan_with_the_runner_marker():
    step = SizingStep(
        10 * 1024 * 1024,
        5 * 1024 * 1024,
        (
            RewriteGroup(
                "p=1",
                (
                    FileToRewrite("a-0", "p=1/a-0_0-1-2_20240101000000000.parquet", 3 * 1024 * 1024),
                    FileToRewrite("b-0", "p=1/b-0_0-1-3_20240101000000000.parquet", 1024),
                ),
            ),
        ),
    )
    data = encode_plan(step, base_uri="file:/data/t")
    request = decode_requested_replace(data, path="r")
    assert request.operation_type == "CLUSTER" and request.strategy_class == STRATEGY_CLASS
    assert request.file_groups == {("p=1", "a-0"), ("p=1", "b-0")}
    (group,) = request.clustering_groups or ()
    assert group.num_output_file_groups == 1
    assert group.metrics["TOTAL_IO_READ_MB"] == 3.0 and group.metrics["TOTAL_IO_MB"] == 6.0
    plan_record = read_container(data, path="r")["clusteringPlan"]
    assert plan_record["extraMetadata"]["runner"] == MARKER_VALUE  # type: ignore[index]
    assert plan_record["preserveHoodieMetadata"] is True  # type: ignore[index]
    slice_ = plan_record["inputGroups"][0]["slices"][0]  # type: ignore[index]
    assert slice_["dataFilePath"] == "file:/data/t/p=1/a-0_0-1-2_20240101000000000.parquet"
    assert is_runner_plan(data, path="r")
    hudi_written = encode_requested_replace(RequestedReplace("CLUSTER", request.clustering_groups), base_path="x")
    assert not is_runner_plan(hudi_written, path="r") and not is_runner_plan(b"", path="r")


def test_a_metadata_table_the_resize_cannot_keep_in_step_is_refused(hudi_fixture):
    base = hudi_fixture(V9_MDT)
    props = base / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.metadata.partitions=column_stats,",
                                               "hoodie.table.metadata.partitions=column_stats,expr_index_x,"))
    storage = storage_for(str(base))
    state = read_table_state(storage)
    step = plan_sizing(FileSizing(max_file_size=1_000_000, small_file_limit=500_000), state)
    assert step is not None and not step.is_empty
    with pytest.raises(RefusedError, match="expr_index_x") as caught:
        run_resize(storage, state.metadata, step, spark=None, clock=clock)  # type: ignore[arg-type]
    assert "metadata_table: disable" in caught.value.hint
    assert not read_table_metadata(storage).timeline.pending()


@pytest.mark.parametrize("change", ["deleted", "older_slice", "pending_clustering"])
def test_a_stale_or_edited_step_is_refused_before_anything_is_written(change, hudi_fixture):
    base = hudi_fixture(V6)
    add_small_files(base, "20", 3, seed=5)
    storage, state, step = plan(base, SIZING)
    group = step.groups[0]
    if change == "deleted":
        (base / group.files[0].path).unlink()
    elif change == "older_slice":  # partition 10's first version, superseded by the second commit
        old = "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_1-98-142_20240418172802262.parquet"
        file = FileToRewrite("97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0", old, 1)
        step = SizingStep(step.max_file_size, step.small_file_limit, (RewriteGroup("10", (file,)),))
    else:
        runner = ResizeRunner(storage, state.metadata, spark=None, clock=clock)  # type: ignore[arg-type]
        runner.schedule(step)
    names = sorted(p.name for p in (base / ".hoodie").iterdir())
    with pytest.raises(RefusedError, match=r"no longer the latest base file|pending compaction or clustering"):
        run_resize(storage, read_table_metadata(storage), step, spark=None, clock=clock)  # type: ignore[arg-type]
    assert sorted(p.name for p in (base / ".hoodie").iterdir()) == names


def test_rewrite_unifies_evolved_schemas_newest_first(tmp_path):
    storage = LocalStorage(str(tmp_path))
    old = pa.table({"_hoodie_record_key": ["b"], "_hoodie_file_name": ["x"], "v": pa.array([1], pa.int32())})
    new = pa.table(
        {"_hoodie_record_key": ["a"], "_hoodie_file_name": ["y"], "v": pa.array([2], pa.int64()), "extra": ["e"]}
    )
    (tmp_path / "p").mkdir()
    pq.write_table(old, tmp_path / "p/o-0_0-1-1_20240101000000000.parquet", compression="zstd")
    pq.write_table(new, tmp_path / "p/n-0_0-1-1_20240102000000000.parquet", compression="zstd")
    group = GroupRewrite(
        "p", "new-0", ("p/o-0_0-1-1_20240101000000000.parquet", "p/n-0_0-1-1_20240102000000000.parquet")
    )

    done = rewrite_group(storage, group, "20240103000000000", "0-0-0")

    assert done.path == "p/new-0_0-0-0_20240103000000000.parquet" and done.records == 2
    written = pq.ParquetFile(tmp_path / done.path)
    assert written.metadata.row_group(0).column(0).compression == "ZSTD"
    footer = written.metadata.metadata
    assert (footer[b"hoodie_min_record_key"], footer[b"hoodie_max_record_key"]) == (b"a", b"b")
    assert footer[b"org.apache.hudi.bloomfilter"].decode() == bloom.serialize(pa.array(["a", "b"]))
    assert written.read().to_pylist() == [
        {"_hoodie_record_key": "a", "_hoodie_file_name": "new-0_0-0-0_20240103000000000.parquet", "v": 2, "extra": "e"},
        {
            "_hoodie_record_key": "b",
            "_hoodie_file_name": "new-0_0-0-0_20240103000000000.parquet",
            "v": 1,
            "extra": None,
        },
    ]
    assert done.size == (tmp_path / done.path).stat().st_size
