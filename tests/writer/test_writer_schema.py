"""A write whose columns differ from the table's is refused in the driver before anything is written,
for every operation; harmless differences (column order, stricter nullability) are reconciled.
Checked with the independent `hudi` reader."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import runner
from runner.errors import RefusedError
from tests.writer.writer_helpers import oracle_rows, table_yaml

SCHEMA = "id long, region string, name string, ts long"
COLUMNS = ("id", "region", "name", "ts")


def snapshot(base: Path) -> list[str]:
    """Every file of the table except the runner's lock folder (which a refused write never keeps)."""
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and ".locks" not in p.parts)


@pytest.fixture
def orders(spark: Any, project: Callable[..., Path]) -> Path:
    root = project(orders=table_yaml("orders"))
    runner.write(spark.createDataFrame([(1, "eu", "a", 1), (2, "us", "b", 1)], SCHEMA), "orders", project_dir=root)
    return root


ADDED = (SCHEMA + ", extra int", (3, "eu", "c", 2, 7), r"column\(s\) 'extra' are not in the table .* not supported")
MISSING = ("id long, region string, ts long", (3, "eu", 2), r"the records lack the table's column\(s\) 'name'")
RETYPED = ("id long, region string, name string, ts string", (3, "eu", "c", "2"),
           r"column 'ts' is string in the records but long in the table")


@pytest.mark.parametrize(
    ("operation", "case"),
    [("bulk_insert", ADDED), ("insert", ADDED), ("upsert", ADDED), ("bulk_insert", MISSING), ("upsert", RETYPED)],
    ids=["bulk_insert-added", "insert-added", "upsert-added", "bulk_insert-missing", "upsert-retyped"],
)
def test_a_different_schema_is_refused_before_anything_is_written(
    spark: Any, orders: Path, operation: str, case: tuple[str, tuple[Any, ...], str]
) -> None:
    schema, row, message = case
    base = orders / "warehouse" / "orders"
    before = snapshot(base)

    with pytest.raises(RefusedError, match=message) as error:
        runner.write(spark.createDataFrame([row], schema), "orders", operation=operation, project_dir=orders)

    assert str(error.value).splitlines()[0].endswith("nothing was written.")
    assert "Exception" not in str(error.value) and "at org." not in str(error.value)
    assert snapshot(base) == before
    assert [r["id"] for r in oracle_rows(base, columns=COLUMNS)] == [1, 2]


def test_columns_in_another_order_are_written_in_the_tables_order(spark: Any, orders: Path) -> None:
    shuffled = spark.createDataFrame(
        [(5, "x", "eu", 3), (3, "a2", "eu", 1)], "ts long, name string, region string, id long"
    )

    runner.write(shuffled.select("ts", "name", "region", "id"), "orders", operation="upsert", project_dir=orders)
    runner.write(shuffled.withColumn("id", shuffled["id"] + 10), "orders", operation="bulk_insert", project_dir=orders)

    rows = oracle_rows(orders / "warehouse" / "orders", columns=COLUMNS)
    assert sorted((r["id"], r["name"]) for r in rows) == [(1, "a2"), (2, "b"), (3, "x"), (11, "a2"), (13, "x")]


def test_a_non_nullable_column_goes_into_a_nullable_table_column(spark: Any, orders: Path) -> None:
    from pyspark.sql import functions as F

    strict = spark.createDataFrame([(7, "eu", "g")], "id long, region string, name string").withColumn("ts", F.lit(9))
    strict = strict.withColumn("ts", F.col("ts").cast("long"))
    assert strict.schema["ts"].nullable is False

    runner.write(strict, "orders", operation="bulk_insert", project_dir=orders)

    rows = oracle_rows(orders / "warehouse" / "orders", columns=COLUMNS)
    assert sorted((r["id"], r["ts"]) for r in rows) == [(1, 1), (2, 1), (7, 9)]


def test_nulls_into_a_required_column_are_refused(spark: Any, project: Callable[..., Path]) -> None:
    from pyspark.sql import functions as F

    root = project(orders=table_yaml("orders"))
    strict = spark.createDataFrame([(1, "eu", "a")], "id long, region string, name string")
    strict = strict.withColumn("ts", F.lit(1).cast("long"))
    runner.write(strict, "orders", project_dir=root)
    base = root / "warehouse" / "orders"
    before = snapshot(base)

    with pytest.raises(RefusedError, match="column 'ts' is nullable in the records but required in the table"):
        runner.write(spark.createDataFrame([(2, "eu", "b", None)], SCHEMA), "orders", project_dir=root)
    assert snapshot(base) == before


def test_a_table_folder_that_lost_its_properties_is_not_created_over(spark: Any, orders: Path) -> None:
    from runner.errors import NotAHudiTableError

    base = orders / "warehouse" / "orders"
    (base / ".hoodie" / "hoodie.properties").unlink()
    before = snapshot(base)

    with pytest.raises(NotAHudiTableError, match=re.escape("hoodie.properties is missing or unreadable")):
        runner.write(spark.createDataFrame([(3, "eu", "c", 2)], SCHEMA), "orders", project_dir=orders)
    assert snapshot(base) == before
