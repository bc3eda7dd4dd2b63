"""The driver engine and the Spark engine write the same commit, and the size of a write picks one.

Two copies of one table receive the same write, one through each engine; both must hold the same
records in the same file groups, in the same order, with the same `_hoodie_commit_seqno`, and
commit the same counts. New file groups get random ids, so they are compared by content.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import runner
from runner.errors import StepFailed
from runner.hudi.state import read_table_state
from runner.storage import storage_for
from runner.writer import files as files_module
from runner.writer import local
from tests.writer.writer_helpers import oracle_rows, table_yaml

SCHEMA = "id long, region string, name string, ts long"
COLUMNS = ("_hoodie_record_key", "_hoodie_partition_path", "id", "region", "name", "ts")
# Every file is a small file (Hudi's bloom filter alone is ~431 KB) and new groups take 25 records,
# so one write tops up small files, splits a new partition over several groups and merges updates.
SIZING = "file_sizing:\n  max_file_size: 600000\n  small_file_limit: 550000\n  insert_split_size: 25\n"


def _instant_file(base: Path, name: str) -> dict[str, Any]:
    return json.loads((base / ".hoodie" / name).read_text())


def _groups(base: Path, instant: str) -> list[tuple[Any, ...]]:
    """Per file written by `instant`: its write stat's counts and its records in file order."""
    meta = _instant_file(base, f"{instant}.commit")
    found = []
    for stat in (s for stats in meta["partitionToWriteStats"].values() for s in stats):
        existing = stat["prevCommit"] != "null"
        table = pq.read_table(base / stat["path"])
        records = tuple(
            (r["_hoodie_record_key"], r["id"], r["name"], r["ts"],
             r["_hoodie_commit_time"].replace(instant, "NEW"), r["_hoodie_commit_seqno"].replace(instant, "NEW"))
            for r in table.to_pylist()
        )
        found.append((stat["partitionPath"], stat["fileId"] if existing else "new", stat["prevCommit"],
                       stat["numWrites"], stat["numInserts"], stat["numUpdateWrites"], records))
    return sorted(found)


def _profile(base: Path, instant: str) -> list[tuple[Any, ...]]:
    meta = _instant_file(base, f"{instant}.inflight")
    return sorted((s["partitionPath"], s["fileId"], s["numInserts"], s["numUpdateWrites"])
                  for stats in meta["partitionToWriteStats"].values() for s in stats)


def two_copies_and_a_write(spark: Any, project: Callable[..., Path], tmp_path: Path
                           ) -> tuple[Path, Path, list[tuple[Any, ...]]]:
    """Two projects holding copies of one bulk-inserted table (90 keys over three partitions), and
    the rows of a second write to send to both: updates to every partition, new keys there, a new
    partition split over several groups, and duplicate keys (de-duplicated by `ts` for upsert, kept
    by insert)."""
    first = project(t=table_yaml("t", sizing=SIZING))
    regions = ("eu", "us", "ap")
    initial = [(i, regions[i % 3], f"v1-{i}", 1) for i in range(90)]
    runner.write(spark.createDataFrame(initial, SCHEMA), "t", operation="bulk_insert", project_dir=first)
    second = shutil.copytree(first, tmp_path / "copy", symlinks=True)
    rows: list[tuple[Any, ...]] = [(i, regions[i % 3], f"v2-{i}", 2) for i in range(45, 120)]
    rows += [(1000 + i, "sa", f"new-{i}", 2) for i in range(60)]
    rows += [(50, "ap", "late", 3), (51, "eu", "stale", 0), (1000, "sa", "again", 5)]
    return first, second, rows


@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_both_engines_write_the_same_records_to_the_same_file_groups(
    spark: Any, project: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    first, second, rows = two_copies_and_a_write(spark, project, tmp_path)
    df = spark.createDataFrame(rows, SCHEMA)

    on_driver = runner.write(df, "t", operation=operation, project_dir=first)
    monkeypatch.setattr(local, "PINNED", "spark")
    on_spark = runner.write(df, "t", operation=operation, project_dir=second)

    assert (on_driver.engine, on_spark.engine) == ("driver", "spark")
    assert on_driver.executors == on_spark.executors == ("driver",)  # local mode
    counts = ("num_inserts", "num_updates", "num_writes")
    assert [getattr(on_driver, c) for c in counts] == [getattr(on_spark, c) for c in counts]
    a, b = first / "warehouse" / "t", second / "warehouse" / "t"
    groups = _groups(a, on_driver.instant)
    assert groups == _groups(b, on_spark.instant)
    assert len([g for g in groups if g[0] == "region=sa"]) > 1  # the split partition took several groups
    assert any(g[1] != "new" for g in groups)  # existing file groups were merged into
    assert _profile(a, on_driver.instant) == _profile(b, on_spark.instant)
    assert oracle_rows(a, columns=COLUMNS) == oracle_rows(b, columns=COLUMNS)
    if operation == "upsert":  # keys 45..89 exist; 90..119 and the 60 of `sa` are new
        assert (on_driver.num_updates, on_driver.num_inserts) == (45, 90)
        names = {r["id"]: r["name"] for r in oracle_rows(a, columns=("id", "name"))}
        assert (names[50], names[51], names[1000]) == ("late", "v2-51", "again")


def test_the_size_estimate_picks_the_engine_and_the_result_and_log_say_which(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = project(t=table_yaml("t"))
    df = spark.range(2).selectExpr("id", "if(id = 0, 'eu', 'us') as region", "'a' as name", "1L as ts")
    estimate = local.estimated_bytes(df)
    assert estimate is not None and 0 < estimate < local.DRIVER_MAX_BYTES

    caplog.set_level(logging.INFO, logger="runner.writer.write")
    small = runner.write(df, "t", project_dir=root)
    assert small.engine == "driver" and "runs on the driver" in caplog.text and "MiB estimated" in caplog.text

    caplog.clear()
    monkeypatch.setattr(local, "DRIVER_MAX_BYTES", 1)  # every input is now above the limit
    large = runner.write(df.selectExpr("id", "region", "'c' as name", "2L as ts"), "t", project_dir=root)
    assert large.engine == "spark" and "runs on the spark" in caplog.text and "limit 0 MiB" in caplog.text
    assert (large.num_updates, large.num_inserts) == (2, 0)
    assert sorted(r["name"] for r in oracle_rows(root / "warehouse" / "t")) == ["c", "c"]


def test_without_an_estimate_only_rows_the_driver_held_stay_on_the_driver(spark: Any, tmp_path: Path) -> None:
    listed = spark.createDataFrame([(1, "eu", "a", 1)], SCHEMA)  # parallelized Python rows: no statistics
    assert (local.estimated_bytes(listed) or 0) >= local.UNKNOWN_SIZE
    choice = local.choose_engine(listed)
    assert choice.engine == "driver" and "held by the driver" in choice.reason

    lines = tmp_path / "rows.txt"
    lines.write_text("1,eu\n2,us\n")
    from_files = spark.createDataFrame(
        spark.sparkContext.textFile(str(lines)).map(lambda line: (int(line.split(",")[0]), line.split(",")[1])),
        "id long, region string",
    )
    assert (local.estimated_bytes(from_files) or 0) >= local.UNKNOWN_SIZE
    assert local.choose_engine(from_files) == local.Choice("spark", "Spark has no size estimate of the input")


def test_a_driver_write_failing_in_one_thread_is_rolled_back_by_the_next_write(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(t=table_yaml("t"))
    base = root / "warehouse" / "t"
    runner.write(spark.createDataFrame([(1, "eu", "a", 1), (2, "us", "b", 1)], SCHEMA), "t", project_dir=root)
    before = oracle_rows(base)
    real_merge = files_module.merge

    def merge_failing_in_us(ctx: Any, partition: str, *args: Any) -> Any:
        if partition == "region=us":
            raise OSError("disk full")
        return real_merge(ctx, partition, *args)

    # `tasks` imported `merge` by name: patch it there, where the write threads call it.
    monkeypatch.setattr("runner.writer.tasks.merge", merge_failing_in_us)
    update = spark.createDataFrame([(1, "eu", "a2", 2), (2, "us", "b2", 2)], SCHEMA)
    with pytest.raises(StepFailed, match="The write failed: disk full"):
        runner.write(update, "t", project_dir=root)
    monkeypatch.undo()

    assert oracle_rows(base) == before  # an eu file the other thread may have written is invisible
    state = read_table_state(storage_for(str(base)))
    # Whether the eu task ran depends on timing: `Executor.map` cancels the tasks not yet started
    # once the us task's error is raised. What it wrote, if anything, is an uncommitted eu file.
    assert len(state.uncommitted_files) <= 1
    assert all(path.startswith("region=eu/") for path in state.uncommitted_files)
    result = runner.write(update, "t", project_dir=root)
    assert result.engine == "driver" and len(result.rolled_back) == 1
    assert read_table_state(storage_for(str(base))).uncommitted_files == ()
    assert sorted(r["name"] for r in oracle_rows(base)) == ["a2", "b2"]


def test_a_driver_upsert_runs_one_spark_job_and_deduplicates_like_spark(
    spark: Any, project: Callable[..., Path], tmp_path: Path
) -> None:
    """The driver engine collects the keyed records without the window's shuffle (one job) and
    de-duplicates them in Arrow; the Spark engine's window keeps the same records."""
    first = project(t=table_yaml("t"))
    second = shutil.copytree(first, tmp_path / "copy", symlinks=True)
    rows = [(1, "eu", "old", 1), (1, "eu", "new", 2), (1, "eu", "tie-late", 2), (2, "us", "null-ts", None),
            (2, "us", "kept", 0), (3, "us", "only", None), (3, "us", "only-later", None)]
    df = spark.createDataFrame(rows, SCHEMA)
    sc = spark.sparkContext
    sc.setJobGroup("driver-upsert", "counted by the test")
    try:
        on_driver = runner.write(df, "t", project_dir=first)
    finally:
        sc.setJobGroup(None, None)  # type: ignore[arg-type]
    assert on_driver.engine == "driver"
    assert len(sc.statusTracker().getJobIdsForGroup("driver-upsert")) == 1
    local.PINNED = "spark"
    try:
        on_spark = runner.write(df, "t", project_dir=second)
    finally:
        local.PINNED = None
    assert on_spark.engine == "spark"
    driver_rows = oracle_rows(first / "warehouse" / "t", columns=("id", "name"))
    assert driver_rows == oracle_rows(second / "warehouse" / "t", columns=("id", "name"))
    assert driver_rows == [{"id": 1, "name": "tie-late"}, {"id": 2, "name": "kept"}, {"id": 3, "name": "only-later"}]
