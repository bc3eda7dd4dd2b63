"""An Arrow input (`pyarrow.Table` or `RecordBatchReader`) writes what a DataFrame of the same rows writes.

Two copies of one table receive the same write, one as a Spark DataFrame (the driver engine, after
its Spark action) and one as Arrow (no Spark): both must hold the same records in the same file
groups, in the same order, with the same meta columns, commit the same counts, and read the same
through the `hudi` reader. Refusals are the DataFrame path's, and come before anything is written.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import runner
from runner.errors import LockError, RefusedError
from runner.storage import storage_for
from runner.storage.lock import TableLock
from tests.writer.test_writer_engines import SCHEMA, _groups, _profile, two_copies_and_a_write
from tests.writer.writer_helpers import oracle_rows, table_yaml

ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("name", pa.string()), ("ts", pa.int64())])


def _arrow(rows: list[tuple[Any, ...]], schema: pa.Schema = ARROW_SCHEMA) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema=schema)


def _files(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("operation", "reader"), [("upsert", False), ("insert", False), ("upsert", True),
                                                   ("bulk_insert", False)])
def test_arrow_and_dataframe_inputs_write_the_same_commit(
    spark: Any, project: Callable[..., Path], tmp_path: Path, operation: str, reader: bool
) -> None:
    first, second, rows = two_copies_and_a_write(spark, project, tmp_path)
    table = _arrow(rows)
    arrow: pa.Table | pa.RecordBatchReader = (
        pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=40)) if reader else table
    )

    from_df = runner.write(spark.createDataFrame(rows, SCHEMA), "t", operation=operation, project_dir=first)
    from_arrow = runner.write(arrow, "t", operation=operation, project_dir=second)

    assert (from_df.engine, from_arrow.engine) == ("driver", "driver")
    assert from_arrow.executors == ("driver",)
    counts = ("num_inserts", "num_updates", "num_writes", "operation")
    assert [getattr(from_arrow, c) for c in counts] == [getattr(from_df, c) for c in counts]
    a, b = first / "warehouse" / "t", second / "warehouse" / "t"
    assert _groups(b, from_arrow.instant) == _groups(a, from_df.instant)
    if operation != "bulk_insert":
        assert _profile(b, from_arrow.instant) == _profile(a, from_df.instant)
    # Every column as hudi-rs reads it, meta columns included (this write's instant named alike;
    # file names left out: new file groups get random ids, compared by content above).
    assert _read(b, from_arrow.instant) == _read(a, from_df.instant)
    # The commit's schema and each file's schema and footer keys are the same.
    commit_a = (a / ".hoodie" / f"{from_df.instant}.commit").read_text()
    commit_b = (b / ".hoodie" / f"{from_arrow.instant}.commit").read_text()
    assert _schema_of(commit_a) == _schema_of(commit_b)
    file_a, file_b = (pq.ParquetFile(base / f[0]) for base, f in ((a, from_df.files), (b, from_arrow.files)))
    assert file_a.schema_arrow == file_b.schema_arrow
    assert set(file_a.metadata.metadata) == set(file_b.metadata.metadata)
    if operation == "upsert":
        names = {r["id"]: r["name"] for r in oracle_rows(b, columns=("id", "name"))}
        assert (names[50], names[51], names[1000]) == ("late", "v2-51", "again")


def _read(base: Path, instant: str) -> list[dict[str, Any]]:
    rows = oracle_rows(base)
    for row in rows:
        del row["_hoodie_file_name"]
        for meta in ("_hoodie_commit_time", "_hoodie_commit_seqno"):
            row[meta] = row[meta].replace(instant, "NEW")
    return sorted(rows, key=repr)


def _schema_of(commit_json: str) -> str:
    import json

    return str(json.loads(commit_json)["extraMetadata"]["schema"])


KEY_SCHEMA = pa.schema([
    ("k1", pa.int32()), ("k2", pa.string()), ("day", pa.date32()), ("at", pa.timestamp("us", tz="UTC")),
    ("flag", pa.bool_()), ("small", pa.int16()), ("v", pa.string()),
])
KEY_ROWS = [
    (1, "a", dt.date(2024, 1, 5), dt.datetime(2024, 1, 5, 12, 30, tzinfo=dt.UTC), True, 7, "x"),
    (2, None, dt.date(1999, 12, 31), dt.datetime(1970, 1, 1, tzinfo=dt.UTC), False, -3, "y"),
    (3, "", None, dt.datetime(2030, 6, 1, 0, 0, 0, 123456, tzinfo=dt.UTC), None, 0, "z"),
]


@pytest.mark.parametrize(("record_key", "partition_by"), [
    ("[k1, k2]", "[day, flag]"),  # complex keys with __null__ / __empty__, default partition for nulls
    ("[at]", "[small]"),  # a timestamp key (epoch microseconds), a short partition value
    ("[k2, day]", "[]"),  # non-partitioned
    ("[small]", "[day]"),  # simple key
])
def test_keys_and_partition_paths_of_every_key_type_match_the_dataframe_path(
    spark: Any, project: Callable[..., Path], tmp_path: Path, record_key: str, partition_by: str
) -> None:
    declaration = table_yaml("t", record_key=record_key, partition_by=partition_by, precombine=None)
    first = project(t=declaration)
    second = shutil.copytree(first, tmp_path / "copy", symlinks=True)
    # The third row's k2 and day are both missing: a key of those two alone would be refused.
    table = _arrow(KEY_ROWS if record_key != "[k2, day]" else KEY_ROWS[:2], KEY_SCHEMA)
    df = spark.createDataFrame(table)
    runner.write(df, "t", project_dir=first)
    runner.write(table, "t", project_dir=second)
    keys = ("_hoodie_record_key", "_hoodie_partition_path", "k1", "v")
    found = oracle_rows(second / "warehouse" / "t", columns=keys)
    assert found == oracle_rows(first / "warehouse" / "t", columns=keys)
    assert len(found) == table.num_rows
    if record_key == "[k1, k2]":
        assert {r["_hoodie_record_key"] for r in found} == {"k1:1,k2:a", "k1:2,k2:__null__", "k1:3,k2:__empty__"}
        assert "day=__HIVE_DEFAULT_PARTITION__/flag=__HIVE_DEFAULT_PARTITION__" in {
            r["_hoodie_partition_path"] for r in found}
    if record_key == "[at]":
        assert "1704457800000000" in {r["_hoodie_record_key"] for r in found}


@pytest.mark.parametrize(("rows", "match"), [
    ([(None, "eu", "a", 1)], "record key field 'id' is null or empty in a row of table 't'; Hudi requires a value"),
    ([(1, "e/u", "a", 1)], "partition field 'region' has a value containing '/', which would nest folders"),
    # A ':' in the partition path's first folder reads as a URI scheme to Hudi's paths (and to apply's
    # checks of a clean plan): Hudi could not read or write the partition, nor the runner clean it.
    ([(1, "10:00", "a", 1)], "partition field 'region' has a value containing ':', which Hudi reads as a URI scheme"),
])
def test_bad_keys_are_refused_as_the_dataframe_path_refuses_them_and_nothing_is_written(
    spark: Any, project: Callable[..., Path], rows: list[tuple[Any, ...]], match: str
) -> None:
    root = project(t=table_yaml("t"))
    base = root / "warehouse" / "t"
    runner.write(_arrow([(1, "eu", "a", 1)]), "t", project_dir=root)
    before = _files(base)
    with pytest.raises(RefusedError) as from_arrow:
        runner.write(_arrow(rows), "t", project_dir=root)
    assert _files(base) == before  # refused before the instant was requested
    with pytest.raises(RefusedError) as from_df:
        runner.write(spark.createDataFrame(rows, SCHEMA), "t", project_dir=root)
    # Spark appends its SQLSTATE to the DataFrame path's message; the text before it is the same.
    assert str(from_df.value).startswith(str(from_arrow.value).rstrip("."))
    assert match in str(from_arrow.value)


def test_an_empty_string_key_is_refused(project: Callable[..., Path]) -> None:
    root = project(t=table_yaml("t", record_key="[name]"))
    with pytest.raises(RefusedError, match="record key field 'name' is null or empty"):
        runner.write(_arrow([(1, "eu", "", 1)]), "t", project_dir=root)
    assert not list((root / "warehouse" / "t").glob("region=*"))


@pytest.mark.parametrize(("schema", "declaration", "match"), [
    (pa.schema([("id", pa.float64()), ("region", pa.string()), ("name", pa.string()), ("ts", pa.int64())]),
     table_yaml("t"), "Column 'id' of type double cannot be a record key or partition field of an Arrow input"),
    (pa.schema([("id", pa.uint32()), ("region", pa.string()), ("name", pa.string()), ("ts", pa.int64())]),
     table_yaml("t"), "Cannot write column 'id' of Arrow type uint32"),
    (pa.schema([("id", pa.int64()), ("region", pa.string()), ("name", pa.string())]),
     table_yaml("t"), "has no column 'ts', the table's precombine field"),
    (pa.schema([("key", pa.int64()), ("region", pa.string()), ("name", pa.string()), ("ts", pa.int64())]),
     table_yaml("t"), "has no column 'id', which the table uses as a key or partition field"),
])
def test_inputs_the_writer_cannot_key_are_refused_in_one_line(
    project: Callable[..., Path], schema: pa.Schema, declaration: str, match: str
) -> None:
    root = project(t=declaration)
    rows = [tuple(1 if f.type != pa.string() else "eu" for f in schema)]
    with pytest.raises(RefusedError, match=match):
        runner.write(_arrow(rows, schema), "t", project_dir=root)
    assert not list((root / "warehouse" / "t").glob("region=*"))


def test_columns_that_differ_from_the_table_are_refused_and_the_order_is_the_tables(
    project: Callable[..., Path]
) -> None:
    root = project(t=table_yaml("t"))
    base = root / "warehouse" / "t"
    runner.write(_arrow([(1, "eu", "a", 1)]), "t", project_dir=root)
    before = _files(base)
    extra = _arrow([(2, "eu", "b", 1)]).append_column("more", pa.array([1]))
    with pytest.raises(RefusedError, match="column\\(s\\) 'more' are not in the table"):
        runner.write(extra, "t", project_dir=root)
    retyped = _arrow([(2, "eu", "b", 1)]).set_column(3, "ts", pa.array(["1"]))
    with pytest.raises(RefusedError, match="column 'ts' is string in the records but long in the table"):
        runner.write(retyped, "t", project_dir=root)
    assert _files(base) == before

    # Another column order and meta columns (as a Hudi read gives them): reconciled.
    shuffled = _arrow([(2, "us", "b", 2)]).select(["name", "ts", "region", "id"])
    shuffled = shuffled.append_column("_hoodie_commit_time", pa.array(["0"]))
    result = runner.write(shuffled, "t", project_dir=root)
    assert result.num_inserts == 1
    assert oracle_rows(base, columns=("id", "region", "name", "ts")) == [
        {"id": 1, "region": "eu", "name": "a", "ts": 1}, {"id": 2, "region": "us", "name": "b", "ts": 2}]


def test_an_arrow_write_is_refused_while_another_runner_holds_the_lock(project: Callable[..., Path]) -> None:
    root = project(t=table_yaml("t"))
    base = root / "warehouse" / "t"
    runner.write(_arrow([(1, "eu", "a", 1)]), "t", project_dir=root)
    with TableLock(storage_for(str(base)), owner="a test"), pytest.raises(LockError):
        runner.write(_arrow([(2, "eu", "b", 1)]), "t", project_dir=root)
    assert [r["id"] for r in oracle_rows(base)] == [1]


def test_an_arrow_write_starts_no_spark(project: Callable[..., Path]) -> None:
    """In a fresh interpreter, an upsert of Arrow records never imports pyspark."""
    root = project(t=table_yaml("t"))
    code = (
        "import sys, pyarrow as pa, runner\n"
        "rows = pa.table({'id': [1, 2], 'region': ['eu', 'us'], 'name': ['a', 'b'], 'ts': [1, 1]})\n"
        f"runner.write(rows, 't', project_dir={str(root)!r})\n"
        "r = runner.write(rows.set_column(2, 'name', pa.array(['c', 'd'])), 't', project_dir=" + repr(str(root)) + ")\n"
        "assert (r.num_updates, r.engine) == (2, 'driver'), r\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
    assert sorted(r["name"] for r in oracle_rows(root / "warehouse" / "t")) == ["c", "d"]


def test_the_spark_schema_of_an_arrow_input_is_the_one_spark_gives_its_dataframe(spark: Any) -> None:
    """`arrow_input.spark_schema` maps Arrow types as Spark's `createDataFrame` of the same table does,
    nullability included: the Avro schema, the reconciliation and the files' types follow from it."""
    from runner.writer import arrow_input

    fields = [
        pa.field("b", pa.int8()), pa.field("s", pa.int16(), nullable=False), pa.field("i", pa.int32()),
        pa.field("l", pa.int64()), pa.field("f", pa.float32()), pa.field("d", pa.float64()),
        pa.field("t", pa.string()), pa.field("bin", pa.binary()), pa.field("ok", pa.bool_()),
        pa.field("day", pa.date32()), pa.field("at", pa.timestamp("us", tz="UTC")),
        pa.field("dec", pa.decimal128(12, 3)),
        pa.field("st", pa.struct([pa.field("x", pa.int64()), pa.field("y", pa.string(), nullable=False)])),
        pa.field("arr", pa.list_(pa.field("element", pa.int32(), nullable=False))),
        pa.field("m", pa.map_(pa.string(), pa.float64())),
    ]
    schema = pa.schema(fields)
    table = schema.empty_table()
    assert arrow_input.spark_schema(schema) == spark.createDataFrame(table).schema.jsonValue()
    # A timestamp without a time zone: Spark's default reads it in the session's time zone, which a
    # write without Spark has not got; it is kept a local timestamp, as TIMESTAMP_NTZ types it.
    naive = arrow_input.spark_schema(pa.schema([pa.field("local", pa.timestamp("us"))]))
    assert naive["fields"] == [{"name": "local", "type": "timestamp_ntz", "nullable": True, "metadata": {}}]
