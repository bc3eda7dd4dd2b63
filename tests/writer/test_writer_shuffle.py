"""The Spark engine's shuffles follow the write's file groups, not the session's shuffle partitions."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import runner
from runner.writer import local
from runner.writer.prepare import DEFAULT_SHUFFLE_PARTITIONS, shuffle_partitions_cap, shuffle_width
from tests.writer.writer_helpers import oracle_rows, oracle_slices, table_yaml

SCHEMA = "id long, region string, name string, ts long"
REGIONS = ("eu", "us", "ap")
SPARK_DEFAULT = 200  # spark.sql.shuffle.partitions when a user's session does not set it


@contextmanager
def shuffle_partitions(spark: Any, n: int) -> Iterator[None]:
    """The shared session at `n` shuffle partitions for the block, as it was afterwards."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(n))
    try:
        yield
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


def counted_write(spark: Any, group: str, *args: Any, **kwargs: Any) -> tuple[Any, list[int]]:
    """`runner.write` under a job group, and the tasks each stage it ran completed."""
    sc = spark.sparkContext
    sc.setJobGroup(group, "counted by the test")
    try:
        result = runner.write(*args, **kwargs)
    finally:
        sc.setJobGroup(None, None)  # type: ignore[arg-type]
    tracker = sc.statusTracker()
    stages = {s for j in tracker.getJobIdsForGroup(group) if (job := tracker.getJobInfo(j)) for s in job.stageIds}
    return result, [info.numCompletedTasks for s in sorted(stages) if (info := tracker.getStageInfo(s))]


def _rows(ids: range, name: str, ts: int) -> list[tuple[Any, ...]]:
    return [(i, REGIONS[i % 3], f"{name}{i}", ts) for i in ids]


@pytest.fixture
def spark_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "PINNED", "spark")


@pytest.mark.usefixtures("spark_engine")
def test_an_upsert_on_a_session_of_200_shuffle_partitions_runs_tasks_per_file_group(
    spark: Any, project: Callable[..., Path], tmp_path: Path
) -> None:
    wide = project(t=table_yaml("t"))
    runner.write(spark.createDataFrame(_rows(range(30), "a", 1), SCHEMA), "t", operation="insert", project_dir=wide)
    narrow = shutil.copytree(wide, tmp_path / "narrow", symlinks=True)
    # Half updates, half inserts, and a key given twice for the de-duplication to settle.
    upsert = [*_rows(range(15, 45), "b", 2), (16, "us", "b16-late", 3)]
    with shuffle_partitions(spark, SPARK_DEFAULT):
        result, tasks = counted_write(spark, "wide-upsert", spark.createDataFrame(upsert, SCHEMA), "t",
                                      project_dir=wide)
    base_narrow = narrow / "warehouse" / "t"
    with shuffle_partitions(spark, 2):
        runner.write(spark.createDataFrame(upsert, SCHEMA), "t", project_dir=narrow)

    assert result.engine == "spark" and len(result.files) == len(REGIONS)  # one file group per region
    # No stage is wider than the file groups written or the input's partitions (the session's cores).
    bound = max(len(result.files), spark.sparkContext.defaultParallelism)
    assert max(tasks) <= bound, tasks
    assert sum(tasks) < SPARK_DEFAULT, tasks  # it ran 1,016 when the shuffles took the session's 200
    base_wide = wide / "warehouse" / "t"
    expected = {**{r[0]: r for r in _rows(range(30), "a", 1)}, **{r[0]: r for r in _rows(range(15, 45), "b", 2)}}
    expected[16] = (16, "us", "b16-late", 3)
    columns = ("id", "region", "name", "ts")
    assert oracle_rows(base_wide, columns=columns) == sorted(
        (dict(zip(columns, r, strict=True)) for r in expected.values()), key=repr)
    assert oracle_rows(base_wide, columns=columns) == oracle_rows(base_narrow, columns=columns)
    assert [s[:2] for s in oracle_slices(base_wide)] == [s[:2] for s in oracle_slices(base_narrow)]


@pytest.mark.usefixtures("spark_engine")
def test_inserts_split_over_new_groups_are_numbered_in_a_shuffle_of_their_partitions(
    spark: Any, project: Callable[..., Path]
) -> None:
    sizing = "file_sizing:\n  insert_split_size: 10\n"
    root = project(t=table_yaml("t", partition_by="[region]", sizing=sizing))
    rows = [(i, "eu", f"n{i}", 1) for i in range(35)]
    with shuffle_partitions(spark, SPARK_DEFAULT):
        result, tasks = counted_write(spark, "split-insert", spark.createDataFrame(rows, SCHEMA), "t",
                                      operation="insert", project_dir=root)
    assert len(result.files) == 4  # 35 inserts at 10 per new group
    assert max(tasks) <= max(len(result.files), spark.sparkContext.defaultParallelism), tasks
    assert sorted(r["id"] for r in oracle_rows(root / "warehouse" / "t")) == list(range(35))


def test_the_width_is_the_groups_a_write_may_touch_within_the_session_limit() -> None:
    files = {"eu": ["f1", "f2", "f3"], "us": ["f4"]}
    # eu: its three files outnumber the one group of records; us: 25 records fill 3 groups of 10.
    assert shuffle_width({"eu": 5, "us": 25}, files, records_per_group=10, limit=200) == 6
    assert shuffle_width({"ap": 1}, files, records_per_group=10, limit=200) == 1  # a new partition
    assert shuffle_width({"eu": 10**9}, files, records_per_group=10, limit=200) == 200
    assert shuffle_width({}, files, records_per_group=0, limit=200) == 1



def test_the_session_limit_is_its_count_or_spark_default_when_it_is_no_count() -> None:
    assert shuffle_partitions_cap("64") == 64
    assert shuffle_partitions_cap(" 8 ") == 8
    assert shuffle_partitions_cap("0") == 1
    # Managed platforms take `auto` there; open-source Spark refuses to set it, so no session test.
    assert shuffle_partitions_cap("auto") == DEFAULT_SHUFFLE_PARTITIONS == 200
    assert shuffle_partitions_cap(None) == 200

@contextmanager
def session_conf(spark: Any, **settings: str) -> Iterator[None]:
    """The shared session with `settings` (dots written as underscores) for the block."""
    names = {k.replace("_", "."): v for k, v in settings.items()}
    before = {k: spark.conf.get(k) for k in names}
    for k, v in names.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)


def _duplicated_batch() -> tuple[list[tuple[Any, ...]], dict[tuple[str, int], tuple[Any, ...]]]:
    """An upsert batch whose keys come two or three times, in different input partitions, and the
    rows Hudi's rule keeps: the greatest `ts` wins, null the smallest; on a tie the later record.
    Keys 0-5 move to another region (an insert there; the old region's record stays)."""
    first, second, third = [], [], []
    for k in range(60):
        region = REGIONS[(k + 1) % 3] if k < 6 else REGIONS[k % 3]
        a, b = {0: (5, 5), 1: (6, 4), 2: (None, 0), 3: (None, None)}[k % 4]
        first.append((k, region, f"first{k}", a))
        second.append((k, region, f"second{k}", b))
        if k % 10 == 0:
            third.append((k, region, f"third{k}", b))  # ties the second again: the third wins
    batch = [*first, *second, *third]
    kept: dict[tuple[str, int], tuple[Any, ...]] = {(REGIONS[i % 3], i): (i, REGIONS[i % 3], f"a{i}", 1)
                                                    for i in range(60)}
    for k in range(60):
        versions = [r for r in batch if r[0] == k]
        best = versions[0]
        for r in versions[1:]:  # HoodieWriteHelper's reduce: the older wins only if strictly greater
            older, newer = best[3], r[3]
            best = best if (older is not None and (newer is None or older > newer)) else r
        kept[(best[1], k)] = best
    return batch, kept


@pytest.mark.usefixtures("spark_engine")
@pytest.mark.parametrize(("width", "adaptive"), [(1, "false"), (200, "false"), (2, "true")])
def test_duplicates_ties_nulls_and_moved_keys_settle_alike_at_any_shuffle_width(
    spark: Any, project: Callable[..., Path], width: int, adaptive: str
) -> None:
    # The table has 12 file groups (4 per region), more than a width of 1 or 2 lets the shuffles
    # have; the batch's duplicates span 5 input partitions, so their order is the input's.
    root = project(t=table_yaml("t", sizing="file_sizing:\n  insert_split_size: 5\n  small_file_limit: 0\n"))
    runner.write(spark.createDataFrame(_rows(range(60), "a", 1), SCHEMA), "t", operation="insert",
                 project_dir=root)
    base = root / "warehouse" / "t"
    groups = {s[1] for s in oracle_slices(base)}
    assert len(groups) == 12, groups
    batch, kept = _duplicated_batch()
    frame = spark.createDataFrame(spark.sparkContext.parallelize(batch, 5), SCHEMA)
    assert frame.rdd.getNumPartitions() == 5

    with session_conf(spark, spark_sql_shuffle_partitions=str(width), spark_sql_adaptive_enabled=adaptive):
        result = runner.write(frame, "t", project_dir=root)

    assert result.engine == "spark"
    columns = ("id", "region", "name", "ts")
    assert oracle_rows(base, columns=columns) == sorted(
        (dict(zip(columns, r, strict=True)) for r in kept.values()), key=repr)
    assert {s[1] for s in oracle_slices(base)} >= groups  # updates stayed in their file groups


@pytest.mark.usefixtures("spark_engine")
def test_inserts_of_several_split_partitions_are_numbered_in_input_order_in_one_shuffle_partition(
    spark: Any, project: Callable[..., Path]
) -> None:
    # At 1 shuffle partition, adaptive execution off, two partitions' split inserts share the
    # numbering's one task; each partition is still numbered in input order, across 4 input partitions.
    root = project(t=table_yaml("t", sizing="file_sizing:\n  insert_split_size: 10\n"))
    rows = [(i, "eu" if i % 2 else "us", f"n{i}", 1) for i in range(62)]  # interleaved: 31 each
    frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, 4), SCHEMA)
    with session_conf(spark, spark_sql_shuffle_partitions="1", spark_sql_adaptive_enabled="false"):
        result = runner.write(frame, "t", operation="insert", project_dir=root)

    assert result.engine == "spark"
    by_file: dict[tuple[str, str], list[int]] = {}
    for row in oracle_rows(root / "warehouse" / "t", columns=("id", "region", "_hoodie_file_name")):
        by_file.setdefault((row["region"], row["_hoodie_file_name"]), []).append(row["id"])
    for region in ("eu", "us"):
        order = [r[0] for r in rows if r[1] == region]
        runs = sorted((sorted(ids, key=order.index) for (p, _), ids in by_file.items() if p == region),
                      key=lambda ids: order.index(ids[0]))
        assert [len(r) for r in runs] == [10, 10, 10, 1], runs
        assert [i for run in runs for i in run] == order  # consecutive runs of the input order
