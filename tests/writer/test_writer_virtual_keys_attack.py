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


NULL_META = META_COLUMNS[:4]  # `_hoodie_file_name` holds the file's name, as Hudi's handles write it


def _assert_virtual_files(base: Path, files: tuple[str, ...]) -> None:
    for name in files:
        parquet = pq.ParquetFile(base / name)
        table = parquet.read(columns=list(META_COLUMNS))
        assert all(table.column(c).null_count == table.num_rows for c in NULL_META), name
        assert set(table.column("_hoodie_file_name").to_pylist()) == {name.rsplit("/", 1)[-1]}, name
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
    hold null meta columns but the file name, and no key footer. Returns `v`'s final records."""
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


# --- refusals: nothing written -------------------------------------------------------------------


def _tree(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()} \
        if base.exists() else {}


@pytest.mark.parametrize(("column", "spark_type", "value"), [
    ("amount", "double", 1.5), ("amount", "float", 2.5), ("amount", "decimal(10,2)", None)])
@pytest.mark.parametrize("source", ["dataframe", "arrow"])
def test_a_float_or_decimal_key_of_a_new_virtual_key_table_is_refused_before_anything_is_written(
    spark: Any, project: Callable[..., Path], column: str, spark_type: str, value: Any, source: str
) -> None:
    from decimal import Decimal

    root = project(v=_virtual("v", record_key=f"[{column}]"))
    row = (1, "r0", Decimal("1.25") if value is None else value, 1)
    df = spark.createDataFrame([row], f"id long, region string, {column} {spark_type}, ts long")
    data = df.toArrow() if source == "arrow" else df
    with pytest.raises(RefusedError) as refused:
        runner.write(data, "v", project_dir=root)
    assert f"key field {column!r} is of type {spark_type}" in str(refused.value)
    assert "Nothing was written" in str(refused.value)
    assert not (root / "warehouse" / "v").exists()


def test_a_float_key_of_an_existing_table_without_meta_fields_is_refused_and_the_table_is_untouched(
    spark: Any, project: Callable[..., Path]
) -> None:
    """A table Hudi made without meta fields, keyed on a double (made here by writing it with meta
    fields, then setting `hoodie.populate.meta.fields=false` as Hudi would have): refused whether
    or not the declaration says `meta_fields: false`, on the Spark engine too; not a byte changes."""
    root = project(v=table_yaml("v", record_key="[amount]"))
    base = root / "warehouse" / "v"
    schema = "id long, region string, amount double, ts long"
    runner.write(spark.createDataFrame([(1, "r0", 1.5, 1), (2, "r1", 1e10, 1)], schema), "v", project_dir=root)
    properties = base / ".hoodie" / "hoodie.properties"
    properties.write_text(properties.read_text().replace("hoodie.populate.meta.fields=true",
                                                         "hoodie.populate.meta.fields=false"))
    before = _tree(base)
    for declared in ("", "  meta_fields: false\n"):
        (root / "tables" / "v.yml").write_text(table_yaml("v", record_key="[amount]") + declared)
        for data in (spark.createDataFrame([(1, "r0", 1.5, 2)], schema), pa.table(
                {"id": [1], "region": ["r0"], "amount": [1.5], "ts": [2]})):
            with pytest.raises(RefusedError, match="key field 'amount' is of type double"):
                runner.write(data, "v", project_dir=root)
            assert _tree(base) == before


def test_a_declared_meta_fields_that_contradicts_the_table_names_file_field_and_values_and_writes_nothing(
    spark: Any, project: Callable[..., Path]
) -> None:
    root = project(m=table_yaml("m"), v=_virtual("v"))
    rows = pa.table({"id": [1], "region": ["r0"], "name": ["a"], "ts": [1]})
    for name in "mv":
        runner.write(rows, name, project_dir=root)
    (root / "tables" / "m.yml").write_text(_virtual("m"))
    (root / "tables" / "v.yml").write_text(table_yaml("v") + "  meta_fields: true\n")
    for name, declared, found in (("m", "False", "True"), ("v", "True", "False")):
        base = root / "warehouse" / name
        before = _tree(base)
        for data in (rows, spark.createDataFrame(rows)):
            with pytest.raises(RefusedError) as refused:
                runner.write(data, name, project_dir=root)
            text = str(refused.value)
            assert f"tables/{name}.yml: table.meta_fields" in text
            assert f"table.meta_fields is {declared.lower()}" in text or f"table.meta_fields is {declared}" in text
            assert f"hoodie.populate.meta.fields = {found.lower()}" in text or \
                f"hoodie.populate.meta.fields = {found}" in text
            assert _tree(base) == before


@pytest.mark.parametrize("value", ['"no"', '"false"', "0", "[false]"])
def test_validate_refuses_a_meta_fields_that_is_not_a_boolean_naming_file_and_field(
    project: Callable[..., Path], capsys: pytest.CaptureFixture[str], value: str
) -> None:
    from runner.cli import main
    from runner.errors import DeclarationError

    root = project(v=table_yaml("v") + f"  meta_fields: {value}\n")
    assert main(["validate", "--project-dir", str(root)]) == 1
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if "meta_fields" in line]
    assert line.startswith(f"{Path('tables') / 'v.yml'}:") or "tables/v.yml:" in line, line
    assert "table.meta_fields" in line
    # The writer refuses the declaration too, before creating the table.
    with pytest.raises(DeclarationError):
        runner.write(pa.table({"id": [1], "region": ["r0"], "name": ["a"], "ts": [1]}), "v", project_dir=root)
    assert not (root / "warehouse" / "v").exists()


# --- Hudi's own virtual-key table: import, plan, a DataFrame upsert --------------------------------

NO_META_FIXTURE = "sample_table/cow/v6_simplekeygen_hivestyle_no_metafields"


def test_import_declares_meta_fields_false_and_plan_reports_a_contradicting_declaration_as_drift(
    hudi_fixture: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from runner.cli import main
    from runner.declarations.loader import load_project

    base = hudi_fixture(NO_META_FIXTURE)
    root = tmp_path / "imported"
    root.mkdir()
    (root / "project.yml").write_text("name: lake\n")
    assert main(["import", str(base), "--project-dir", str(root)]) == 0
    (written,) = list((root / "tables").rglob("*.yml"))
    text = written.read_text()
    assert "\n  meta_fields: false" in text
    capsys.readouterr()
    assert main(["validate", "--project-dir", str(root)]) == 0
    capsys.readouterr()
    (decl,) = load_project(root).tables
    assert decl.table is not None and decl.table.meta_fields is False
    assert main(["plan", "--project-dir", str(root), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["tables"][0]["drift"] == []
    written.write_text(text.replace("meta_fields: false", "meta_fields: true"))
    assert main(["plan", "--project-dir", str(root), "--format", "json"]) == 3
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert table["status"] == "drift"
    assert table["drift"] == ["table.meta_fields: declared true, hoodie.properties has false"]


def test_a_dataframe_upsert_on_the_spark_engine_into_hudis_own_virtual_key_table(
    spark: Any, project: Callable[..., Path], hudi_fixture: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hudi's records, read back and given as a DataFrame: every key updates in place (the Spark
    engine computes the arriving keys with Spark, the stored ones with Arrow, over Hudi's file)."""
    from hudi import HudiReadOptions, HudiTable

    base = hudi_fixture(NO_META_FIXTURE)
    root = project(fx=f"name: fx\npath: {base}\n")  # no table block: the table's own settings
    data = pa.Table.from_batches(HudiTable(str(base)).read(HudiReadOptions()))
    names = pa.array([f"{n}, again" for n in data.column("name").to_pylist()])
    df = spark.createDataFrame(data.set_column(data.schema.get_field_index("name"), "name", names))
    monkeypatch.setattr(local, "PINNED", "spark")
    result = runner.write(df, "fx", project_dir=root)
    assert (result.engine, result.num_updates, result.num_inserts) == ("spark", data.num_rows, 0)
    _assert_virtual_files(base, result.files)
    after = _oracle(base)
    assert after.num_rows == data.num_rows
    assert sorted(after.column("name").to_pylist()) == sorted(names.to_pylist())


def test_spark_reads_the_written_files_with_their_meta_columns(spark: Any, project: Callable[..., Path]) -> None:
    root = project(v=_virtual("v"))
    base = root / "warehouse" / "v"
    runner.write(spark.createDataFrame(_rows(range(10), "a", 1), SCHEMA), "v", operation="insert", project_dir=root)
    result = runner.write(pa.Table.from_pylist([dict(zip(ARROW.names, r, strict=True)) for r in
                                                _rows(range(5, 15), "b", 2)], ARROW), "v", project_dir=root)
    frame = spark.read.parquet(*[str(base / f) for f in result.files])
    assert frame.columns[:5] == list(META_COLUMNS)
    assert frame.where(" OR ".join(f"{c} IS NOT NULL" for c in NULL_META)).count() == 0
    names = {r[0] for r in frame.select("_hoodie_file_name").distinct().collect()}
    assert names == {f.rsplit("/", 1)[-1] for f in result.files}
    got = sorted((r["id"], r["name"]) for r in frame.select("id", "name").collect())
    assert got == sorted((i, f"{'a' if i < 5 else 'b'}-{i}") for i in range(15))


# --- failed and killed writes, object storage ------------------------------------------------------


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_a_failed_virtual_key_write_is_rolled_back_by_the_next_and_the_table_reads_right(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    from runner.errors import StepFailed
    from runner.writer import commit as commit_module

    if engine == "spark":
        monkeypatch.setattr(local, "PINNED", "spark")
    root = project(v=_virtual("v"))
    base = root / "warehouse" / "v"
    runner.write(spark.createDataFrame(_rows(range(10), "a", 1), SCHEMA), "v", project_dir=root)

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(commit_module, "complete", crash)
        with pytest.raises(StepFailed, match="disk full"):
            runner.write(spark.createDataFrame(_rows(range(5, 15), "b", 2), SCHEMA), "v", project_dir=root)
    assert sorted(r["name"] for r in oracle_rows(base)) == sorted(f"a-{i}" for i in range(10))
    result = runner.write(spark.createDataFrame(_rows(range(8, 12), "c", 3), SCHEMA), "v", project_dir=root)
    assert len(result.rolled_back) == 1
    assert (result.num_updates, result.num_inserts) == (2, 2)
    _assert_virtual_files(base, result.files)
    names = {r["id"]: r["name"] for r in oracle_rows(base)}
    assert len(oracle_rows(base)) == len(names) == 12
    assert names == {i: f"a-{i}" if i < 8 else f"c-{i}" for i in range(12)}


def _write_killed_at(root: Path, engine: str, failpoint: str, rows: Rows) -> Any:
    """`runner.write(rows)` into `v` on `engine` in a fresh process that the failpoint kills."""
    import os
    import subprocess
    import sys
    import textwrap

    from runner.failpoints import ENV

    script = textwrap.dedent(f"""
        import runner
        from runner.writer import local
        local.PINNED = {engine!r}
        from runner.declarations.model import SparkSettings
        from runner.execute.spark import get_spark
        spark = get_spark(SparkSettings(master="local[1]", conf=(("spark.sql.shuffle.partitions", "2"),)))
        runner.write(spark.createDataFrame({rows!r}, "{SCHEMA}"), "v", project_dir={str(root)!r})
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")} | {ENV: failpoint}
    return subprocess.run([sys.executable, "-c", script], check=False, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.crash
@pytest.mark.parametrize(("engine", "point"), [("driver", "mid_file"), ("spark", "after_files")])
def test_a_killed_virtual_key_write_is_rolled_back_by_the_next_and_the_table_reads_right(
    spark: Any, project: Callable[..., Path], engine: str, point: str
) -> None:
    root = project(v=_virtual("v"))
    base = root / "warehouse" / "v"
    runner.write(spark.createDataFrame(_rows(range(10), "a", 1), SCHEMA), "v", project_dir=root)
    killed = _write_killed_at(root, engine, point, _rows(range(5, 15), "b", 2))
    assert killed.returncode != 0, killed.stderr[-2000:]
    assert sorted(r["name"] for r in oracle_rows(base)) == sorted(f"a-{i}" for i in range(10))
    result = runner.write(spark.createDataFrame(_rows(range(5, 15), "c", 3), SCHEMA), "v", project_dir=root)
    assert len(result.rolled_back) == 1
    assert (result.num_updates, result.num_inserts) == (5, 5)
    _assert_virtual_files(base, result.files)
    found = oracle_rows(base)
    assert len(found) == 15 and {r["name"] for r in found if r["id"] >= 5} == {f"c-{i}" for i in range(5, 15)}
    assert not list(base.rglob("*.tmp"))


@pytest.mark.s3
@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_upserts_into_a_virtual_key_table_on_object_storage(
    spark: Any, project: Callable[..., Path], s3_server: Any, s3_bucket: str, monkeypatch: pytest.MonkeyPatch,
    engine: str,
) -> None:
    from runner.hudi.state import read_table_state
    from runner.storage import storage_for

    for key, value in s3_server.environment().items():
        monkeypatch.setenv(key, value)
    if engine == "spark":
        monkeypatch.setattr(local, "PINNED", "spark")
    uri = f"s3://{s3_bucket}/warehouse/v"
    root = project(v=_virtual("v").replace("path: warehouse/v", f"path: {uri}"))
    runner.write(spark.createDataFrame(_rows(range(20), "a", 1), SCHEMA), "v", operation="insert", project_dir=root)
    second = runner.write(spark.createDataFrame(_rows(range(10, 25), "b", 2), SCHEMA), "v", project_dir=root)
    assert (second.engine, second.num_updates, second.num_inserts) == (engine, 10, 5)
    storage = storage_for(uri)
    assert "hoodie.populate.meta.fields=false" in storage.read(".hoodie/hoodie.properties").decode()
    state = read_table_state(storage)
    assert state.uncommitted_files == ()
    rows: list[dict[str, Any]] = []
    for group in state.active_groups:
        assert group.latest is not None and group.latest.base_file is not None
        data = pq.read_table(pa.BufferReader(storage.read(f"{group.partition}/{group.latest.base_file.name}")))
        assert all(data.column(c).null_count == data.num_rows for c in NULL_META)
        assert set(data.column("_hoodie_file_name").to_pylist()) == {group.latest.base_file.name}
        rows += data.select(["id", "name"]).to_pylist()
    assert sorted((r["id"], r["name"]) for r in rows) == [(i, f"{'a' if i < 10 else 'b'}-{i}") for i in range(25)]


# --- layouts: partition folders without hive style, one key field with ComplexKeyGenerator --------


def test_a_virtual_key_table_without_hive_style_partitions_holds_what_its_twin_holds(
    spark: Any, project: Callable[..., Path], source: str
) -> None:
    """Hudi's tables may name partition folders by value alone (`hive_style_partitioning=false`);
    the runner creates hive-style ones, so both twins are created empty and then set so, as Hudi
    would have created them."""
    root = _twin_project(project)
    for name in "mv":
        runner.write(pa.Table.from_pylist([], ARROW), name, operation="insert", project_dir=root)
        properties = root / "warehouse" / name / ".hoodie" / "hoodie.properties"
        text = properties.read_text()
        assert "hoodie.datasource.write.hive_style_partitioning=true" in text
        properties.write_text(text.replace("hoodie.datasource.write.hive_style_partitioning=true",
                                           "hoodie.datasource.write.hive_style_partitioning=false"))
    writes = [("insert", _rows(range(30), "a", 1)), ("upsert", _rows(range(20, 40), "b", 2)),
              ("upsert", _rows(range(0, 40, 4), "c", 3))]
    found = _twin_writes(spark, root, source, writes, SCHEMA, ARROW)
    assert len(found) == 40
    assert sorted(p.name for p in (root / "warehouse" / "v").iterdir() if not p.name.startswith(".")) == [
        "r0", "r1", "r2"]


def test_one_key_field_with_the_complex_key_generator(spark: Any, project: Callable[..., Path], source: str) -> None:
    """Two partition fields make a new table's key generator Complex with one key field, whose key
    encoding a table with meta fields settles from a stored key; here none is stored."""
    root = _twin_project(project, partition_by="[region, part]")
    schema = "id long, region string, part int, name string, ts long"
    arrow = pa.schema([("id", pa.int64()), ("region", pa.string()), ("part", pa.int32()), ("name", pa.string()),
                       ("ts", pa.int64())])

    def rows(ids: range, name: str, ts: int) -> Rows:
        return [(i, f"r{i % 2}", i % 3, f"{name}-{i}", ts) for i in ids]

    writes = [("insert", rows(range(24), "a", 1)), ("upsert", rows(range(12, 36), "b", 2)),
              ("upsert", rows(range(0, 36, 5), "c", 3))]
    found = _twin_writes(spark, root, source, writes, schema, arrow)
    assert len(found) == 36
    assert "ComplexKeyGenerator" in (root / "warehouse" / "v" / ".hoodie" / "hoodie.properties").read_text()


# --- generated keys ---------------------------------------------------------------------------------


def test_generated_string_and_integer_keys_update_in_place_from_every_source(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Hypothesis: generated keys (any text but lone surrogates, which Spark cannot encode, with a
    long as the second field), inserted by a DataFrame and upserted from an Arrow input and from the
    Spark engine: one record per key, the newest values."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
    keys = st.lists(st.tuples(text, st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=25, unique=True)
    counter = iter(range(10**6))
    schema = "name string, code long, region string, v string, ts long"
    arrow = pa.schema([("name", pa.string()), ("code", pa.int64()), ("region", pa.string()), ("v", pa.string()),
                       ("ts", pa.int64())])

    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(keys=keys)
    def check(keys: list[tuple[str, int]]) -> None:
        name = f"g{next(counter)}"
        (tmp_path / "proj" / "tables").mkdir(parents=True, exist_ok=True)
        (tmp_path / "proj" / "project.yml").write_text("name: writer_tests\n")
        (tmp_path / "proj" / "tables" / f"{name}.yml").write_text(_virtual(name, record_key="[name, code]"))
        root = tmp_path / "proj"
        keys = [(n, c) for n, c in keys if n != ""]  # "" and a key of `__empty__` text collide by design
        if not keys:
            return
        for step, engine in enumerate(["driver", "arrow", "spark", "driver"]):
            rows = [(n, c, "r0" if c % 2 else "r1", f"v{step}", step) for n, c in keys]
            monkeypatch.setattr(local, "PINNED", "spark" if engine == "spark" else None)
            data = pa.Table.from_pylist([dict(zip(arrow.names, r, strict=True)) for r in rows], arrow) \
                if engine == "arrow" else spark.createDataFrame(rows, schema)
            result = runner.write(data, name, project_dir=root)
            expected = (0, len(keys)) if step == 0 else (len(keys), 0)
            assert (result.num_updates, result.num_inserts) == expected, (engine, keys)
        found = oracle_rows(root / "warehouse" / name, columns=("name", "code", "v"))
        assert sorted((r["name"], r["code"]) for r in found) == sorted(keys)
        assert {r["v"] for r in found} == {"v3"}

    check()


def test_a_date_key_past_9999_from_an_arrow_input_updates_a_table_with_meta_fields_in_place(
    spark: Any, project: Callable[..., Path]
) -> None:
    """The stored key is the DataFrame's (Spark's `+10000-01-01`): an Arrow input's must be the same."""
    root = project(m=table_yaml("m", record_key="[k]"))
    keys = pa.array([2932896, 2932897, 3000000], pa.date32())
    runner.write(spark.createDataFrame(_key_rows(keys, 1, "v1")), "m", operation="insert", project_dir=root)
    stored = sorted(_oracle(root / "warehouse" / "m").column("_hoodie_record_key").to_pylist())
    assert stored[0] == "+10000-01-01" and stored[1].startswith("+1") and stored[2] == "9999-12-31"
    result = runner.write(_key_rows(keys, 2, "v2"), "m", project_dir=root)
    assert (result.num_updates, result.num_inserts) == (3, 0)
    assert _oracle(root / "warehouse" / "m").num_rows == 3


def test_a_refused_float_key_write_does_not_even_roll_back_a_pending_failed_write(
    spark: Any, project: Callable[..., Path]
) -> None:
    """"Refused before anything is written": with a failed write pending, the refused write leaves
    it for the next accepted write to roll back, as every other refusal of the job's inputs does."""
    root = project(v=table_yaml("v", record_key="[amount]"))
    base = root / "warehouse" / "v"
    schema = "id long, region string, amount double, ts long"
    first = runner.write(spark.createDataFrame([(1, "r0", 1.5, 1)], schema), "v", project_dir=root)
    properties = base / ".hoodie" / "hoodie.properties"
    properties.write_text(properties.read_text().replace("hoodie.populate.meta.fields=true",
                                                         "hoodie.populate.meta.fields=false"))
    failed = str(int(first.instant) + 5)  # a failed write, as a killed Hudi writer leaves one
    (base / ".hoodie" / f"{failed}.commit.requested").write_bytes(b"")
    (base / ".hoodie" / f"{failed}.inflight").write_bytes(b"")
    before = _tree(base)
    with pytest.raises(RefusedError, match="key field 'amount' is of type double"):
        runner.write(spark.createDataFrame([(1, "r0", 1.5, 2)], schema), "v", project_dir=root)
    assert _tree(base) == before


# --- a file holding a key twice; after a resize; the other commands over footer-less files -----------


def test_a_new_file_holding_a_key_twice_is_upserted_as_its_twin_is(
    spark: Any, project: Callable[..., Path], source: str
) -> None:
    """An insert or bulk insert into new file groups keeps a key given twice (Hudi does not combine
    inserts), so one file holds it twice; an upsert of that key then meets both rows."""
    root = _twin_project(project)
    twice = [(1, "r1", "a-1", 1), (1, "r1", "a-1b", 1), (2, "r2", "a-2", 1), (2, "r2", "a-2b", 1), (3, "r0", "a-3", 1)]
    writes = [("insert", twice), ("upsert", [(1, "r1", "b-1", 2), (4, "r1", "b-4", 2)]),
              ("bulk_insert", [(7, "r1", "c-7", 3), (7, "r1", "c-7b", 3)]),
              ("upsert", [(2, "r2", "d-2", 4), (7, "r1", "d-7", 4), (1, "r1", "d-1", 4)])]
    found = _twin_writes(spark, root, source, writes, SCHEMA, ARROW)
    assert sorted((r["id"], r["name"]) for r in found) == [
        (1, "d-1"), (1, "d-1"), (2, "d-2"), (2, "d-2"), (3, "a-3"), (4, "b-4"), (7, "d-7"), (7, "d-7")]


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_upserts_after_a_resize_keep_one_record_per_key_and_the_meta_columns(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """The resize keeps its inputs' `_hoodie_file_name`s (as Hudi's row-writer clustering does); the
    upsert that merges such a file computes its keys from the key fields and writes the new file's
    name and null in the other meta columns."""
    from runner.cli import main

    sizing = "file_sizing:\n  max_file_size: 200000\n  small_file_limit: 150000\n  insert_split_size: 10\n"
    root = project(v=_virtual("v", sizing=sizing))
    base = root / "warehouse" / "v"
    for start in (0, 30, 60):
        runner.write(pa.Table.from_pylist([dict(zip(ARROW.names, r, strict=True))
                                           for r in _rows(range(start, start + 30), "a", 1)], ARROW),
                     "v", operation="bulk_insert", project_dir=root)
    assert main(["apply", "--auto-approve", "--project-dir", str(root)]) == 0
    assert len(list(base.glob(".hoodie/*.replacecommit"))) == 1
    if engine == "spark":
        monkeypatch.setattr(local, "PINNED", "spark")
    result = runner.write(spark.createDataFrame(_rows(range(0, 100, 2), "b", 2), SCHEMA), "v", project_dir=root)
    assert (result.engine, result.num_updates, result.num_inserts) == (engine, 45, 5)
    _assert_virtual_files(base, result.files)
    found = oracle_rows(base, columns=("id", "name"))
    assert sorted((r["id"], r["name"]) for r in found) == sorted(
        (i, f"{'b' if i % 2 == 0 else 'a'}-{i}") for i in [*range(90), *range(90, 100, 2)])


def test_status_and_plan_read_a_table_the_writer_wrote_without_meta_fields(
    spark: Any, project: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Files without a record-key footer (no bloom filter, no key range) are read by the other
    commands without error; the table is in sync with its declaration."""
    import json

    from runner.cli import main

    root = project(v=_virtual("v"))
    runner.write(spark.createDataFrame(_rows(range(30), "a", 1), SCHEMA), "v", project_dir=root)
    runner.write(spark.createDataFrame(_rows(range(20, 40), "b", 2), SCHEMA), "v", project_dir=root)
    capsys.readouterr()
    assert main(["status", "--project-dir", str(root), "--format", "json"]) == 0
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert (table["name"], table["instants"], table["file_groups"], table["uncommitted_files"]) == (
        "v", {"commit.completed": 2}, 3, 0)
    assert table["declaration_drift"] == [] and table["pending_instants"] == []
    code = main(["plan", "--project-dir", str(root), "--format", "json"])
    plan = json.loads(capsys.readouterr().out)
    (table,) = plan["tables"]
    assert code in (0, 2) and table["drift"] == [] and table["status"] != "error", table


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_a_stored_record_without_a_key_is_reported_by_file_on_both_engines(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """A file whose records give no key (here: a table keyed on a column that is null in a stored
    record, as no Hudi writer leaves one) stops an upsert with the file named, and commits nothing."""
    root = project(v=table_yaml("v", record_key="[name]") + "  meta_fields: false\n")
    base = root / "warehouse" / "v"
    runner.write(pa.table({"id": [1, 2], "region": ["r0", "r0"], "name": ["a", "b"], "ts": [1, 1]}), "v",
                 project_dir=root)
    (stored,) = list(base.rglob("*.parquet"))
    table = pq.read_table(stored)
    at = table.schema.get_field_index("name")
    pq.write_table(table.set_column(at, table.schema.field(at), pa.array([None, "b"], pa.string())), stored,
                   compression="gzip")
    if engine == "spark":
        monkeypatch.setattr(local, "PINNED", "spark")
    with pytest.raises(runner.errors.RunnerError) as failed:
        runner.write(spark.createDataFrame([(3, "r0", "b", 2)], SCHEMA), "v", project_dir=root)
    text = str(failed.value)
    assert "Cannot compute the record keys of" in text and stored.name in text, text[-3000:]
    assert "record key field 'name' is null or empty" in text
    assert sorted(r["id"] for r in oracle_rows(base)) == [1, 2]
