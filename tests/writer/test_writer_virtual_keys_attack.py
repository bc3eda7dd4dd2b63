"""Attacks on tables without meta fields (`hoodie.populate.meta.fields=false`, virtual keys).

A virtual-key table stores no keys: an upsert computes the stored records' keys with the Arrow rule
(`arrow_input.record_keys`) and the arriving records' keys with Spark's expressions (a DataFrame)
or the Arrow rule (an Arrow input). Any value the two render differently is written a second time
by an upsert. The oracles: the `hudi` reader (one record per key, the newest values) and a twin
table with meta fields (the same writes give the same data and counts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import runner
from runner.errors import RefusedError
from runner.writer import local
from runner.writer.schema import META_COLUMNS
from tests.writer.writer_helpers import oracle_rows, table_yaml

KEY_FOOTER = {b"org.apache.hudi.bloomfilter", b"hoodie_bloom_filter_type_code", b"hoodie_min_record_key",
              b"hoodie_max_record_key"}


def _virtual(name: str, **kwargs: Any) -> str:
    return table_yaml(name, **kwargs) + "  meta_fields: false\n"


def _oracle(base: Path) -> pa.Table:
    """The `hudi` reader's snapshot as Arrow (no Python conversion: dates past 9999 have none)."""
    from hudi import HudiReadOptions, HudiTable

    return pa.Table.from_batches(HudiTable(str(base)).read(HudiReadOptions()))


def _assert_virtual_files(base: Path, files: tuple[str, ...]) -> None:
    for name in files:
        parquet = pq.ParquetFile(base / name)
        table = parquet.read(columns=list(META_COLUMNS))
        assert all(table.column(c).null_count == table.num_rows for c in META_COLUMNS), name
        assert not set(parquet.metadata.metadata or {}) & KEY_FOOTER, name


@pytest.fixture
def session_time_zone(spark: Any) -> Iterator[Callable[[str], None]]:
    """Set the shared session's `spark.sql.session.timeZone` for one test, restored afterwards."""
    before = spark.conf.get("spark.sql.session.timeZone")
    yield lambda zone: spark.conf.set("spark.sql.session.timeZone", zone)
    spark.conf.set("spark.sql.session.timeZone", before)


# Key values per allowed key type, as Arrow arrays (dates past year 9999 have no Python value).
_DAYS_0001 = -719162  # 0001-01-01
KEY_CASES: dict[str, pa.Array] = {
    "string": pa.array(["plain", "ünïcødé ✓ 日本語", "a,b", "k:v,x:y", "__null__", "__empty__",
                        "__HIVE_DEFAULT_PARTITION__", " ", "null", "x" * 5000, "tab\tnew\nline", "'q\"\\"]),
    "byte": pa.array([-128, -1, 0, 1, 127], pa.int8()),
    "short": pa.array([-32768, -1, 0, 32767], pa.int16()),
    "integer": pa.array([-(2**31), -1, 0, 2**31 - 1], pa.int32()),
    "long": pa.array([-(2**63), -1, 0, 2**63 - 1], pa.int64()),
    "boolean": pa.array([True, False]),
    "date": pa.array([_DAYS_0001 - 400, _DAYS_0001, -141427, -1, 0, 19782, 2932896, 2932897, 3000000],
                     pa.date32()),
    "timestamp": pa.array([-62135596800000001, -12219292800000000, -1, 0, 1, 1700000000123456,
                           253402300799999999], pa.timestamp("us", tz="UTC")),
}


def _key_rows(keys: pa.Array, ts: int, name: str) -> pa.Table:
    n = len(keys)
    return pa.table({"k": keys, "region": pa.array([f"r{i % 2}" for i in range(n)]),
                     "name": pa.array([f"{name}-{i}" for i in range(n)]), "ts": pa.array([ts] * n, pa.int64())})


@pytest.mark.parametrize("kind", list(KEY_CASES))
def test_each_key_type_is_rendered_alike_by_spark_and_arrow_so_upserts_update_in_place(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch,
    session_time_zone: Callable[[str], None], kind: str,
) -> None:
    """Insert by a DataFrame, then upsert every key again from the Spark engine, an Arrow input
    and a DataFrame on the driver: each upsert updates every record and inserts none."""
    session_time_zone("America/Los_Angeles")  # a non-UTC session: timestamps must not shift
    keys = KEY_CASES[kind]
    root = project(v=_virtual("v", record_key="[k]"))
    base = root / "warehouse" / "v"
    first = runner.write(spark.createDataFrame(_key_rows(keys, 1, "v1")), "v", operation="insert", project_dir=root)
    assert first.num_inserts == len(keys)
    zone = "Asia/Kolkata"  # an Arrow input in yet another zone: the same instants
    arrow_keys = keys.cast(pa.timestamp("us", tz=zone)) if kind == "timestamp" else keys
    writes: list[tuple[str, Any]] = [
        ("spark", spark.createDataFrame(_key_rows(keys, 2, "v2"))),
        ("driver", _key_rows(arrow_keys, 3, "v3")),
        ("driver", spark.createDataFrame(_key_rows(keys, 4, "v4"))),
    ]
    for step, (engine, data) in enumerate(writes, start=2):
        monkeypatch.setattr(local, "PINNED", "spark" if engine == "spark" else None)
        result = runner.write(data, "v", project_dir=root)
        assert result.engine == engine
        assert (result.num_updates, result.num_inserts) == (len(keys), 0), (kind, step)
        _assert_virtual_files(base, result.files)
        found = _oracle(base)
        assert found.num_rows == len(keys), (kind, step)  # no key written twice
        assert sorted(found.column("name").to_pylist()) == sorted(f"v{step}-{i}" for i in range(len(keys)))
    assert sorted(_comparable(_oracle(base).column("k").cast(keys.type))) == sorted(_comparable(keys))


def _comparable(values: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Python values of key values; dates and timestamps as their integers (no year-0 datetimes)."""
    if pa.types.is_date32(values.type):
        return values.cast(pa.int32()).to_pylist()
    if pa.types.is_timestamp(values.type):
        return values.cast(pa.int64()).to_pylist()
    return values.to_pylist()


def test_a_new_virtual_key_table_without_its_key_column_is_refused_by_name(
    spark: Any, project: Callable[..., Path]
) -> None:
    """The key rules' own refusal (`The DataFrame has no column ...`), as for a table with meta
    fields, not an internal error from computing the virtual keys' types."""
    root = project(m=table_yaml("m", record_key="[order_id]"), v=_virtual("v", record_key="[order_id]"))
    df = spark.createDataFrame([(1, "r0", "a", 1)], "id long, region string, name string, ts long")
    for name in "mv":
        with pytest.raises(RefusedError) as refused:
            runner.write(df, name, project_dir=root)
        assert "has no column 'order_id'" in str(refused.value), name
    arrow = pa.table({"id": [1], "region": ["r0"], "name": ["a"], "ts": [1]})
    with pytest.raises(RefusedError, match="has no column 'order_id'"):
        runner.write(arrow, "v", project_dir=root)
    assert not list((root / "warehouse" / "v").rglob("*.parquet"))
    assert oracle_rows(root / "warehouse" / "m") == []


# --- twin tables: the same writes into a table with meta fields (`m`) and one without (`v`) -------

COUNTS = ("num_inserts", "num_updates", "num_writes", "operation")
Rows = list[tuple[Any, ...]]


def _twin_project(project: Callable[..., Path], **kwargs: Any) -> Path:
    return project(m=table_yaml("m", **kwargs), v=_virtual("v", **kwargs))


def _as_input(spark: Any, source: str, rows: Rows, schema: str, arrow_schema: pa.Schema) -> Any:
    if source == "arrow":
        return pa.Table.from_pylist([dict(zip(arrow_schema.names, r, strict=True)) for r in rows], arrow_schema)
    return spark.createDataFrame(rows, schema)


def _twin_writes(spark: Any, root: Path, source: str, writes: list[tuple[str, Rows]], schema: str,
                 arrow_schema: pa.Schema) -> list[dict[str, Any]]:
    """Each write into `m` then `v`: the same counts and the same records after each; `v`'s files
    hold null meta columns and no key footer. Returns `v`'s final records."""
    columns = tuple(arrow_schema.names)
    for step, (operation, rows) in enumerate(writes):
        twin = runner.write(_as_input(spark, source, rows, schema, arrow_schema), "m", operation=operation,
                            project_dir=root)
        virtual = runner.write(_as_input(spark, source, rows, schema, arrow_schema), "v", operation=operation,
                               project_dir=root)
        assert [getattr(virtual, c) for c in COUNTS] == [getattr(twin, c) for c in COUNTS], step
        _assert_virtual_files(root / "warehouse" / "v", virtual.files)
        found = oracle_rows(root / "warehouse" / "v", columns=columns)
        assert found == oracle_rows(root / "warehouse" / "m", columns=columns), step
    return found


@pytest.fixture(params=["driver", "spark", "arrow"])
def source(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "spark":
        monkeypatch.setattr(local, "PINNED", "spark")
    return str(request.param)


CK_SCHEMA = "name string, code int, region string, v string, ts long"
CK_ARROW = pa.schema([("name", pa.string()), ("code", pa.int32()), ("region", pa.string()), ("v", pa.string()),
                      ("ts", pa.int64())])


def test_complex_keys_with_null_and_empty_fields_hold_what_the_twin_holds(
    spark: Any, project: Callable[..., Path], source: str
) -> None:
    root = _twin_project(project, record_key="[name, code]")
    keys = [("a", 1), (None, 2), ("", 3), ("b", None), ("c", 0), ("__empty__", 3), ("x,code:1", 1)]
    first = [(n, c, f"r{i % 2}", "v1", 1) for i, (n, c) in enumerate(keys)]
    # Every key again (with new values), keys that differ only in which field is null, and new ones.
    second = [(n, c, f"r{i % 2}", "v2", 2) for i, (n, c) in enumerate(keys)] + [
        (None, 1, "r0", "v2", 2), ("a", None, "r1", "v2", 2)]
    # `__null__` as a value gives Hudi's key for null (`name:__null__,code:2`): it updates (None, 2).
    third = [*second[:4], ("__null__", 2, "r1", "v3", 3)]
    found = _twin_writes(spark, root, source, [("insert", first), ("upsert", second), ("upsert", third)],
                         CK_SCHEMA, CK_ARROW)
    assert len(found) == len(second)
    assert {(r["name"], r["code"], r["v"]) for r in found if r["code"] == 2} == {("__null__", 2, "v3")}


def test_a_complex_key_with_every_field_null_or_empty_is_refused_and_nothing_is_committed(
    spark: Any, project: Callable[..., Path], source: str
) -> None:
    root = _twin_project(project, record_key="[name, code]")
    base = root / "warehouse" / "v"
    _twin_writes(spark, root, source, [("upsert", [("a", 1, "r0", "v1", 1)])], CK_SCHEMA, CK_ARROW)
    for bad in [(None, None, "r0", "x", 2), ("", None, "r1", "x", 2)]:
        with pytest.raises(RefusedError, match="are all null or empty in a row"):
            runner.write(_as_input(spark, source, [("a", 1, "r0", "v2", 2), bad], CK_SCHEMA, CK_ARROW), "v",
                         project_dir=root)
    assert oracle_rows(base, columns=("name", "code", "v")) == [{"name": "a", "code": 1, "v": "v1"}]
    # The next write rolls back whatever the refused ones left pending and reads right.
    result = runner.write(_as_input(spark, source, [("a", 1, "r0", "v3", 3)], CK_SCHEMA, CK_ARROW), "v",
                          project_dir=root)
    assert (result.num_updates, result.num_inserts) == (1, 0)
    assert oracle_rows(base, columns=("name", "code", "v")) == [{"name": "a", "code": 1, "v": "v3"}]


SCHEMA = "id long, region string, name string, ts long"
ARROW = pa.schema([("id", pa.int64()), ("region", pa.string()), ("name", pa.string()), ("ts", pa.int64())])


def _rows(ids: range, name: str, ts: int) -> Rows:
    return [(i, f"r{i % 3}", f"{name}-{i}", ts) for i in ids]


@pytest.mark.parametrize("record_key", ["[id]", "[id, name]"])
def test_a_non_partitioned_virtual_key_table_holds_what_its_twin_holds(
    spark: Any, project: Callable[..., Path], source: str, record_key: str
) -> None:
    root = _twin_project(project, record_key=record_key, partition_by="[]")
    writes = [("insert", _rows(range(30), "a", 1)), ("upsert", _rows(range(20, 40), "a", 2)),
              ("upsert", _rows(range(0, 40, 3), "a", 3))]
    found = _twin_writes(spark, root, source, writes, SCHEMA, ARROW)
    assert len(found) == 40
    assert "NonpartitionedKeyGenerator" in (root / "warehouse" / "v" / ".hoodie" / "hoodie.properties").read_text()


def test_inserts_into_small_files_with_keys_already_present_and_a_key_held_twice_then_upserts(
    spark: Any, project: Callable[..., Path], source: str
) -> None:
    """`insert` merges into small files without de-duplicating against them (`keys_distinct` False);
    a bulk insert then gives keys a second file group; upserts meet them all. (Inserts are routed to
    one small file per partition here: with several, the twins' random file ids order them.)"""
    root = _twin_project(project)
    writes = [
        ("insert", _rows(range(20), "a", 1)),
        ("insert", [*_rows(range(10, 30), "b", 2), (5, "r2", "b-5-again", 2)]),  # keys present, one given twice
        ("upsert", _rows(range(0, 50, 2), "d", 3)),
        ("insert", _rows(range(40, 55), "e", 4)),
        ("bulk_insert", _rows(range(25, 45), "c", 5)),  # keys held by two file groups from here on
        ("upsert", _rows(range(5, 55, 5), "f", 6)),
    ]
    found = _twin_writes(spark, root, source, writes, SCHEMA, ARROW)
    assert {r["id"] for r in found} == {r[0] for _, rows in writes for r in rows}
    ids = [r["id"] for r in found]
    # 15 of the bulk insert's 20 keys were present: those are held twice, and the upsert updated both.
    assert len(ids) == len(set(ids)) + 15
    assert sorted(r["name"] for r in found if r["id"] in (25, 30, 40)) == ["f-25", "f-25", "f-30", "f-30", "f-40",
                                                                           "f-40"]


@pytest.mark.parametrize("row_group_rows", [None, 7])
def test_merges_that_read_old_files_again_and_files_of_many_row_groups(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, row_group_rows: int | None
) -> None:
    """No old file kept by the driver's index (the merge reads each again and computes its keys per
    batch), and optionally row groups of 7 rows (many batches per file)."""
    from runner.writer import files

    monkeypatch.setattr(local, "OLD_FILES_MAX_BYTES", 0)
    if row_group_rows:
        monkeypatch.setattr(files, "ROW_GROUP_ROWS", row_group_rows)
    root = _twin_project(project)
    writes = [("insert", _rows(range(60), "a", 1)), ("upsert", _rows(range(0, 80, 2), "b", 2)),
              ("insert", _rows(range(70, 90), "c", 3)), ("upsert", _rows(range(1, 90, 3), "d", 4))]
    found = _twin_writes(spark, root, "driver", writes, SCHEMA, ARROW)
    assert len(found) == len({r[0] for _, rows in writes for r in rows})  # inserts here give new keys only
    if row_group_rows:
        groups = [pq.ParquetFile(p).metadata.num_row_groups for p in (root / "warehouse" / "v").rglob("*.parquet")]
        assert max(groups) > 1
