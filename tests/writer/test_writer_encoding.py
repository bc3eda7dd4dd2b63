"""Dictionary encoding as Hudi's parquet-mr writer chooses it: kept where it pays on the first page.

A real Hudi file (the hudi-rs fixtures, written by Hudi's Spark writer) shows parquet-mr's rule: a
column whose dictionary would not be smaller than its plain values is written plain. Our writer's
files follow the same rule (`runner.writer.encoding`), on both engines, and stay readable by the
`hudi` reader.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import runner
from runner.writer.encoding import PAGE_ROWS, dictionary_columns
from tests.writer.writer_helpers import oracle_rows, table_yaml

DISTINCT = ("_hoodie_commit_seqno", "_hoodie_record_key", "id", "name", "amount")
FEW = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name", "region", "ts")


def _dictionary_pages(path: Path) -> dict[str, bool]:
    meta = pq.ParquetFile(path).metadata
    group = meta.row_group(0)
    return {group.column(i).path_in_schema: group.column(i).has_dictionary_page for i in range(group.num_columns)}


def test_hudis_own_writer_drops_a_dictionary_that_does_not_pay(hudi_fixture: Callable[[str], Path]) -> None:
    # The reference: a one-record file from Hudi's Spark writer has no dictionary page at all, since a
    # one-value dictionary plus its index is larger than the value written plain.
    base = hudi_fixture("sample_table/cow/v6_simplekeygen_nonhivestyle")
    files = [p for p in base.rglob("*.parquet") if ".hoodie" not in p.parts]
    one_record = [p for p in files if pq.ParquetFile(p).metadata.num_rows == 1]
    assert one_record
    for path in one_record:
        assert not any(_dictionary_pages(path).values()), path
    one_row = pa.table({"k": ["a"], "n": pa.array([7], pa.int64())})
    assert dictionary_columns(one_row) == []


@pytest.mark.usefixtures("engine")
def test_written_files_keep_a_dictionary_only_for_columns_of_few_values(
        spark: object, project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"))
    rows = [(i, f"r{i % 2}", f"customer-{i}", i * 1.5, 1) for i in range(3000)]
    df = spark.createDataFrame(rows, "id long, region string, name string, amount double, ts long")  # type: ignore[attr-defined]
    runner.write(df, "orders", project_dir=root)
    updates = [(i, f"r{i % 2}", f"customer-{i}-v2", i * 2.5, 2) for i in range(0, 3000, 3)]
    result = runner.write(spark.createDataFrame(updates, df.schema), "orders", project_dir=root)  # type: ignore[attr-defined]

    assert result.num_updates == 1000 and result.files
    for relative in result.files:
        pages = _dictionary_pages(root / "warehouse" / "orders" / relative)
        assert {c for c in DISTINCT if pages[c]} == set(), relative
        assert {c for c in FEW if not pages[c]} == set(), relative
    expected = sorted(
        ({"id": i, "name": f"customer-{i}-v2" if i % 3 == 0 else f"customer-{i}"} for i in range(3000)), key=repr)
    assert oracle_rows(root / "warehouse" / "orders", columns=("id", "name")) == expected


def test_the_choice_follows_parquet_mrs_first_page_rule() -> None:
    n = PAGE_ROWS + 5000
    distinct = pa.array(np.arange(n, dtype=np.int64))
    table = pa.table({
        "constant": pa.repeat(pa.scalar("x"), n),
        "distinct_text": distinct.cast(pa.string()),
        "distinct_long": distinct,
        "few_longs": pa.array(np.arange(n, dtype=np.int64) % 16),
        # Few values on the first page, then distinct ones: only the first page decides.
        "distinct_later": pc.if_else(pc.less(distinct, PAGE_ROWS), pa.scalar(1, pa.int64()), distinct),
        "flag": pa.array(np.arange(n) % 2 == 0),
        "no_values": pa.nulls(n, pa.string()),
        "nested": pa.array([{"a": 1}] * n, pa.struct([("a", pa.int64())])),
    })
    assert dictionary_columns(table) == ["constant", "few_longs", "distinct_later", "nested.a"]


def test_a_column_whose_dictionary_would_be_as_large_as_its_values_is_plain() -> None:
    # 1,000 values of 2 distinct 1-byte strings: 10 dictionary bytes + 126 index bytes < 5,000 plain.
    assert dictionary_columns(pa.table({"s": ["a", "b"] * 500})) == ["s"]
    # 4 distinct 8-byte longs among 4 rows: 32 + 2 bytes is not below 32 plain.
    assert dictionary_columns(pa.table({"v": pa.array([1, 2, 3, 4], pa.int64())})) == []
