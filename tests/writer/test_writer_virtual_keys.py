"""Tables without meta fields (`hoodie.populate.meta.fields=false`, Hudi's virtual keys).

Such a table's files hold the five `_hoodie_*` columns, all null but `_hoodie_file_name` (the file's
name), and no record-key footer (no bloom filter, no key range), as Hudi writes them (its own
fixture below has them so); the writer computes old records' keys from the record
key fields. The oracle: the same writes into a twin table with meta fields give the same records
(the `hudi` reader's data columns) and the same counts, on both engines and for an Arrow input; and
an upsert into a table Hudi itself wrote without meta fields updates its records in place.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import runner
from runner.errors import RefusedError
from runner.writer import local
from runner.writer.schema import META_COLUMNS
from tests.writer.writer_helpers import oracle_rows, table_yaml

SCHEMA = "id long, region string, name string, ts long"
DATA = ("id", "region", "name", "ts")
FOOTER_WITHOUT_KEYS = {b"parquet.avro.schema", b"writer.model.name"}
KEY_FOOTER = {b"org.apache.hudi.bloomfilter", b"hoodie_bloom_filter_type_code", b"hoodie_min_record_key",
              b"hoodie_max_record_key"}


def _twins(project: Callable[..., Path], *, record_key: str = "[id]", sizing: str = "") -> Path:
    """A project with `m` (meta fields, Hudi's default) and `v` (`meta_fields: false`), declared alike."""
    return project(m=table_yaml("m", record_key=record_key, sizing=sizing),
                   v=table_yaml("v", record_key=record_key, sizing=sizing) + "  meta_fields: false\n")


def _rows(start: int, count: int, name: str, ts: int) -> list[tuple[Any, ...]]:
    return [(i, f"r{i % 3}", f"{name}-{i}", ts) for i in range(start, start + count)]


def _data(base: Path) -> list[dict[str, Any]]:
    return oracle_rows(base, columns=DATA)


def _assert_virtual(base: Path, files: tuple[str, ...]) -> None:
    """Every file written holds null meta columns but its own name in `_hoodie_file_name`, and no
    record-key footer; the table says so."""
    assert "hoodie.populate.meta.fields=false" in (base / ".hoodie" / "hoodie.properties").read_text()
    assert files
    for name in files:
        parquet = pq.ParquetFile(base / name)
        table = parquet.read()
        assert table.column_names[:5] == list(META_COLUMNS)
        assert all(table.column(c).null_count == table.num_rows for c in META_COLUMNS[:4]), name
        assert set(table.column("_hoodie_file_name").to_pylist()) == {name.rsplit("/", 1)[-1]}
        assert set(parquet.metadata.metadata) == FOOTER_WITHOUT_KEYS, name


def _write(spark: Any, source: str, rows: list[tuple[Any, ...]], name: str, root: Path,
           operation: str = "upsert") -> runner.WriteResult:
    if source == "arrow":
        data: Any = pa.Table.from_pylist([dict(zip(DATA, r, strict=True)) for r in rows])
    else:
        data = spark.createDataFrame(rows, SCHEMA)
    return runner.write(data, name, operation=operation, project_dir=root)


COUNTS = ("num_inserts", "num_updates", "num_writes", "operation")


@pytest.mark.parametrize("source", ["driver", "spark", "arrow"])
def test_a_table_without_meta_fields_holds_what_its_twin_with_meta_fields_holds(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    if source == "spark":
        monkeypatch.setattr(local, "PINNED", "spark")
    root = _twins(project)
    writes = [
        ("insert", _rows(0, 60, "v1", 1)),
        # Updates of a third of the records, new ones, and one key given twice (the greater ts wins).
        ("upsert", _rows(0, 20, "v2", 2) + _rows(60, 15, "v2", 2) + [(5, "r2", "late", 9), (5, "r2", "early", 0)]),
        ("upsert", _rows(10, 30, "v3", 3) + _rows(100, 5, "v3", 3)),
    ]
    for operation, rows in writes:
        twin = _write(spark, source, rows, "m", root, operation)
        virtual = _write(spark, source, rows, "v", root, operation)
        assert [getattr(virtual, c) for c in COUNTS] == [getattr(twin, c) for c in COUNTS]
        assert virtual.engine == ("spark" if source == "spark" else "driver")
        _assert_virtual(root / "warehouse" / "v", virtual.files)
        assert _data(root / "warehouse" / "v") == _data(root / "warehouse" / "m")
    names = {r["id"]: r["name"] for r in _data(root / "warehouse" / "v")}
    assert len(names) == 80  # no key written twice
    assert (names[0], names[5], names[15], names[45], names[104]) == ("v2-0", "late", "v3-15", "v1-45", "v3-104")


def test_complex_and_typed_keys_are_computed_alike_by_both_engines(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys of two fields (a string and a date) and a timestamp precombine: the Spark engine's
    DataFrame keys meet the keys the driver computes from the stored files, and the other way round."""
    import datetime as dt

    root = project(v=table_yaml("v", record_key="[name, day]") + "  meta_fields: false\n")
    schema = "id long, region string, name string, day date, ts long"
    day = dt.date(2024, 2, 29)

    def rows(ids: range, ts: int) -> Any:
        return spark.createDataFrame([(i, f"r{i % 2}", f"n{i}", day + dt.timedelta(days=i % 3), ts) for i in ids],
                                     schema)

    runner.write(rows(range(40), 1), "v", operation="insert", project_dir=root)
    monkeypatch.setattr(local, "PINNED", "spark")
    spark_write = runner.write(rows(range(20, 50), 2), "v", project_dir=root)
    monkeypatch.setattr(local, "PINNED", None)
    driver_write = runner.write(rows(range(0, 10), 3), "v", project_dir=root)
    assert (spark_write.engine, spark_write.num_updates, spark_write.num_inserts) == ("spark", 20, 10)
    assert (driver_write.engine, driver_write.num_updates, driver_write.num_inserts) == ("driver", 10, 0)
    found = oracle_rows(root / "warehouse" / "v", columns=("id", "ts"))
    assert len(found) == 50
    assert {r["id"]: r["ts"] for r in found} == {i: 3 if i < 10 else 2 if i >= 20 else 1 for i in range(50)}


def test_an_upsert_into_a_table_hudi_wrote_without_meta_fields_updates_in_place(
    project: Callable[..., Path], hudi_fixture: Callable[[str], Path]
) -> None:
    base = hudi_fixture("sample_table/cow/v6_simplekeygen_hivestyle_no_metafields")
    root = project(fx=f"name: fx\npath: {base}\ntable:\n  record_key: [id]\n  partition_by: [byteField]\n"
                      "  precombine_field: longField\n  meta_fields: false\n")
    before = oracle_rows(base)
    assert sorted(r["id"] for r in before) == [1, 2, 3, 4]
    # The records as the reader gives them (data columns only): one updated, one new.
    from hudi import HudiReadOptions, HudiTable

    data = pa.Table.from_batches(HudiTable(str(base)).read(HudiReadOptions()))
    assert not set(data.column_names) & set(META_COLUMNS)
    bob = data.filter(pc.equal(data["id"], 2))
    bob = bob.set_column(bob.schema.get_field_index("name"), bob.schema.field("name"), pa.array(["Bob, again"]))
    new = data.filter(pc.equal(data["id"], 1))
    new = new.set_column(0, new.schema.field("id"), pa.array([9], pa.int32()))

    result = runner.write(pa.concat_tables([bob, new]), "fx", project_dir=root)

    assert (result.num_updates, result.num_inserts) == (1, 1)
    _assert_virtual(base, result.files)
    after = {r["id"]: r for r in oracle_rows(base)}
    assert sorted(after) == [1, 2, 3, 4, 9]
    assert after[2]["name"] == "Bob, again"
    unchanged = {r["id"]: r for r in before}
    for key in (1, 3, 4):
        assert after[key] == unchanged[key]
    assert {k: v for k, v in after[9].items() if k != "id"} == {k: v for k, v in unchanged[1].items() if k != "id"}


def test_a_key_field_whose_text_only_java_renders_is_refused_before_anything_is_written(
    spark: Any, project: Callable[..., Path]
) -> None:
    root = project(v=table_yaml("v", record_key="[amount]") + "  meta_fields: false\n")
    df = spark.createDataFrame([(1, "r0", 1.5, 1)], "id long, region string, amount double, ts long")
    with pytest.raises(RefusedError) as refused:
        runner.write(df, "v", project_dir=root)
    assert "key field 'amount' is of type double" in str(refused.value)
    assert "hoodie.populate.meta.fields=false" in str(refused.value)
    assert not (root / "warehouse" / "v").exists()  # not even hoodie.properties


def test_the_declaration_and_the_table_must_agree_on_meta_fields(
    spark: Any, project: Callable[..., Path]
) -> None:
    root = _twins(project)
    rows = _rows(0, 5, "v1", 1)
    _write(spark, "arrow", rows, "m", root)
    _write(spark, "arrow", rows, "v", root)
    # Each declaration now says the opposite of its table.
    (root / "tables" / "m.yml").write_text(table_yaml("m") + "  meta_fields: false\n")
    (root / "tables" / "v.yml").write_text(table_yaml("v") + "  meta_fields: true\n")
    timelines = {n: sorted(p.name for p in (root / "warehouse" / n / ".hoodie").iterdir()) for n in "mv"}
    with pytest.raises(RefusedError) as refused:
        _write(spark, "arrow", rows, "m", root)
    assert "table.meta_fields is false but the table at" in str(refused.value)
    assert "hoodie.populate.meta.fields = true" in str(refused.value)
    with pytest.raises(RefusedError) as refused:
        _write(spark, "arrow", rows, "v", root)
    assert "table.meta_fields is true" in str(refused.value)
    assert "hoodie.populate.meta.fields = false" in str(refused.value)
    # Undeclared, it is not checked: the table's own setting is followed.
    (root / "tables" / "v.yml").write_text(table_yaml("v"))
    result = _write(spark, "arrow", _rows(3, 4, "v2", 2), "v", root)
    assert (result.num_updates, result.num_inserts) == (2, 2)
    _assert_virtual(root / "warehouse" / "v", result.files)
    assert {n: sorted(p.name for p in (root / "warehouse" / n / ".hoodie").iterdir()) for n in "m"} == {
        "m": timelines["m"]}


def test_the_commit_records_the_writes_as_for_a_table_with_meta_fields(
    spark: Any, project: Callable[..., Path]
) -> None:
    """The commit metadata (write stats, schema) of a virtual-key write is the twin's, but for sizes."""
    root = _twins(project)
    for name in "mv":
        _write(spark, "arrow", _rows(0, 30, "v1", 1), name, root, "insert")
    results = {name: _write(spark, "arrow", _rows(20, 20, "v2", 2), name, root) for name in "mv"}

    def stats(name: str) -> list[tuple[Any, ...]]:
        meta = json.loads((root / "warehouse" / name / ".hoodie" / f"{results[name].instant}.commit").read_text())
        return sorted((s["partitionPath"], s["numWrites"], s["numInserts"], s["numUpdateWrites"],
                       s["prevCommit"] != "null") for stats in meta["partitionToWriteStats"].values() for s in stats)

    assert stats("v") == stats("m")
    assert results["v"].bytes_written < results["m"].bytes_written  # no bloom filter, null meta columns


@pytest.mark.parametrize("strategy", ["rewrite", "binary_copy"])
def test_a_virtual_key_table_keeps_its_rows_through_the_resize(
    spark: Any, project: Callable[..., Path], strategy: str
) -> None:
    """Small files of a virtual-key table the writer wrote are resized by `runner apply` (both
    strategies), and the reader's rows stay the same; the new files keep every meta column as the
    inputs have it (null, and each input's own file name) and no key footer, while the twin with
    meta fields gets the new file's name in `_hoodie_file_name`."""
    # The twin's files hold a bloom filter of about 430 KB each, hence the limits.
    sizing = ("file_sizing:\n  max_file_size: 3000000\n  small_file_limit: 1000000\n  insert_split_size: 10\n"
              f"  strategy: {strategy}\n")
    root = _twins(project, sizing=sizing)
    for start in (0, 30, 60):
        # Bulk inserts open new file groups: three small files in each partition.
        for name in "mv":
            _write(spark, "arrow", _rows(start, 30, name, start), name, root, "bulk_insert")

    def rows(name: str) -> list[dict[str, Any]]:
        # The reader gives the twin's meta columns too; only the file name may change.
        found = oracle_rows(root / "warehouse" / name)
        return [{k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in found]

    before = {name: rows(name) for name in "mv"}
    inputs = {p.name for p in (root / "warehouse" / "v").rglob("*.parquet")}
    small = {name: len(list((root / "warehouse" / name).rglob("*.parquet"))) for name in "mv"}
    from runner.cli import main

    assert main(["apply", "--auto-approve", "--project-dir", str(root)]) == 0
    for name in "mv":
        base = root / "warehouse" / name
        assert rows(name) == before[name]
        replaced = sorted(base.glob(".hoodie/*.replacecommit"))
        assert len(replaced) == 1
        written = json.loads(replaced[0].read_text())["partitionToWriteStats"]
        paths = [s["path"] for stats in written.values() for s in stats]
        assert len(paths) == 3 and len(list(base.rglob("*.parquet"))) == small[name] + 3  # one per partition
        for path in paths:
            parquet = pq.ParquetFile(base / path)
            table = parquet.read()
            assert table.num_rows == 30
            # The copy keeps its three inputs' row groups; the rewrite writes one.
            assert parquet.metadata.num_row_groups == (3 if strategy == "binary_copy" else 1)
            not_null = [c for c in META_COLUMNS if table.column(c).null_count != table.num_rows]
            if name == "v":
                # Hudi's clustering leaves every meta column as the input has it when meta fields
                # are not populated (`HoodieRowCreateHandle.writeRowNoMetaFields`).
                assert not_null == ["_hoodie_file_name"]
                assert set(table.column("_hoodie_file_name").to_pylist()) <= inputs
                assert not set(parquet.metadata.metadata or {}) & KEY_FOOTER
            else:
                assert not_null == list(META_COLUMNS)
                assert set(table.column("_hoodie_file_name").to_pylist()) == {path.rsplit("/", 1)[-1]}


@pytest.mark.parametrize(("engine", "operation"), [("driver", "upsert"), ("spark", "upsert"), ("spark", "insert")])
def test_files_without_keys_in_a_table_that_says_it_has_meta_fields_are_refused(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, engine: str, operation: str
) -> None:
    """A table written without meta fields whose hoodie.properties was edited to say it has them:
    its records' null keys would match nothing and an upsert (the index) or an insert into a small
    file (the merge's own match) would write them again. The write stops, naming the file, and the
    table is as it was."""
    root = project(v=table_yaml("v"))
    (root / "tables" / "v.yml").write_text(table_yaml("v") + "  meta_fields: false\n")
    _write(spark, "arrow", _rows(0, 10, "v1", 1), "v", root, "insert")
    (root / "tables" / "v.yml").write_text(table_yaml("v"))  # not declared: the table's word is taken
    properties = root / "warehouse" / "v" / ".hoodie" / "hoodie.properties"
    properties.write_text(properties.read_text().replace("hoodie.populate.meta.fields=false",
                                                         "hoodie.populate.meta.fields=true"))
    before = {p: p.read_bytes() for p in (root / "warehouse" / "v").rglob("*") if p.is_file()}
    if engine == "spark":
        monkeypatch.setattr(local, "PINNED", "spark")
    with pytest.raises(runner.errors.RunnerError) as refused:
        _write(spark, "dataframe", _rows(5, 10, "v2", 2), "v", root, operation)
    text = str(refused.value)
    assert "without a _hoodie_record_key" in text and "hoodie.populate.meta.fields" in text, text[-2000:]
    assert ".parquet" in text
    after = {p: p.read_bytes() for p in (root / "warehouse" / "v").rglob("*") if p.is_file()}
    written = [p for p in after if p not in before and ".hoodie" not in p.parts]
    assert written == [] or all(p.name.startswith(".") for p in written), written  # no data file published
    # Put back as it was written, the table reads as before (the reader, like Hudi, trusts the flag).
    properties.write_text(properties.read_text().replace("hoodie.populate.meta.fields=true",
                                                         "hoodie.populate.meta.fields=false"))
    assert sorted(r["id"] for r in _data(root / "warehouse" / "v")) == list(range(10))
