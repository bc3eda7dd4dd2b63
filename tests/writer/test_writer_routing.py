"""How an upsert finds and routes its records on real local Spark: the partition-scoped index,
insert routing with and without numbering, one task per target file group."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import runner
from runner.sizing import assign_inserts
from runner.writer.spark_hash import hash_int, partition_keys
from tests.writer.writer_helpers import oracle_rows, table_yaml

SCHEMA = "id long, region string, name string, ts long"
COLUMNS = ("id", "region", "name", "ts")


def _stats(base: Path, instant: str) -> list[dict[str, Any]]:
    meta = json.loads((base / ".hoodie" / f"{instant}.commit").read_text())
    return [s for stats in meta["partitionToWriteStats"].values() for s in stats]


def test_spark_hash_and_partition_keys_agree_with_spark(spark: Any) -> None:
    got = spark.range(-3, 300).selectExpr("cast(id as int) as k", "hash(cast(id as int)) as h").collect()
    assert [hash_int(r["k"]) for r in got] == [r["h"] for r in got]
    for n in (1, 2, 7, 64):
        keys = partition_keys(n)
        frame = spark.createDataFrame([(k,) for k in keys], "k int").repartition(n, "k")
        placed = frame.rdd.mapPartitionsWithIndex(lambda i, rows: [(i, r["k"]) for r in rows]).collect()
        assert sorted(placed) == sorted(enumerate(keys))  # each key alone in the partition it was picked for


def test_the_index_finds_updates_per_partition(spark: Any, project: Callable[..., Path], engine: str) -> None:
    root = project(t=table_yaml("t"))
    base = root / "warehouse" / "t"
    first = [(i, ("eu", "us", "ap")[i % 3], f"v1-{i}", 1) for i in range(60)]
    runner.write(spark.createDataFrame(first, SCHEMA), "t", operation="bulk_insert", project_dir=root)
    second = [(i, ("eu", "us", "ap")[i % 3], f"v2-{i}", 2) for i in range(30, 90)]
    # A key of `eu` arriving in `us` is another record: the index is partition-scoped.
    second.append((0, "us", "moved", 2))
    result = runner.write(spark.createDataFrame(second, SCHEMA), "t", project_dir=root)
    assert (result.num_updates, result.num_inserts, result.engine) == (30, 31, engine)
    expected = {(i, ("eu", "us", "ap")[i % 3]): f"v1-{i}" for i in range(30)}
    expected |= {(i, ("eu", "us", "ap")[i % 3]): f"v2-{i}" for i in range(30, 90)}
    expected[(0, "us")] = "moved"
    assert sorted((r["id"], r["region"], r["name"]) for r in oracle_rows(base, columns=COLUMNS)) == sorted(
        (k[0], k[1], v) for k, v in expected.items())


def test_one_write_routes_single_and_split_insert_partitions_exactly_as_planned(
    spark: Any, project: Callable[..., Path], engine: str
) -> None:
    split = 25
    sizing = f"file_sizing:\n  max_file_size: 600000\n  small_file_limit: 550000\n  insert_split_size: {split}\n"
    root = project(t=table_yaml("t", sizing=sizing))
    base = root / "warehouse" / "t"
    # `eu` gets 130 inserts (split over new groups, numbered in input order), `us` 7 (one bucket).
    rows = [(i, "eu", f"n{i}", 1) for i in range(130)] + [(1000 + i, "us", f"m{i}", 1) for i in range(7)]
    result = runner.write(spark.createDataFrame(rows, SCHEMA), "t", project_dir=root)
    assert result.engine == engine
    stats = _stats(base, result.instant)
    planned = {
        region: sorted(b.records for b in assign_inserts(
            [], count, max_file_size=600000, small_file_limit=550000, insert_split_size=split, avg_record_size=1024))
        for region, count in (("eu", 130), ("us", 7))
    }
    got: dict[str, list[int]] = {}
    for s in stats:
        got.setdefault(s["partitionPath"].removeprefix("region="), []).append(s["numInserts"])
    assert {k: sorted(v) for k, v in got.items()} == planned
    assert len(planned["eu"]) > 1 and len(planned["us"]) == 1
    by_file: dict[str, list[int]] = {}
    for row in oracle_rows(base, columns=("id", "_hoodie_file_name")):
        by_file.setdefault(row["_hoodie_file_name"], []).append(row["id"])
    # Split inserts take consecutive runs of the input order: every file holds a contiguous id range.
    for ids in by_file.values():
        assert sorted(ids) == list(range(min(ids), min(ids) + len(ids)))
    assert sorted(i for ids in by_file.values() for i in ids) == [r[0] for r in rows]
