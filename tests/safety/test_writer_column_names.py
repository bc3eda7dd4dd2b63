"""Column names that are not Avro names: refused before anything is written.

Hudi keeps a table's schema as Avro (the commit's `extraMetadata.schema`, each file's
`parquet.avro.schema`), and Avro (`Schema.validateName`, which Hudi's readers run when they parse
that schema, as Spark's Avro conversion does when Hudi's writer builds it) takes a name only if it
is non-empty, starts with a letter or `_` and goes on with letters, digits or `_`. The Avro
specification's letters and digits are ASCII (`[A-Za-z_][A-Za-z0-9_]*`), and the `hudi` reader
(the apache-avro crate) holds to it: `Größe` fails its read of the whole table, though Java's
Avro would take it. A name such as `order id`, `1st`, `a.b`, `a-b` or `Größe` was written into the
schema as given, and Hudi or the hudi reader could not read the table. Nested field names are
names too.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from tests.writer.writer_helpers import oracle_rows


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: names\n")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: warehouse/t\ntable:\n  type: COPY_ON_WRITE\n  record_key: [id]\n"
        "  partition_by: [region]\n  precombine_field: ts\n")
    return root


def _records(name: str, *, nested: bool) -> pa.Table:
    kind = pa.struct([(name, pa.int64())]) if nested else pa.int64()
    value = {name: 1} if nested else 1
    return pa.Table.from_pylist([{"id": 1, "region": "a", "ts": 1, "col" if nested else name: value}],
                                pa.schema([("id", pa.int64()), ("region", pa.string()), ("ts", pa.int64()),
                                           ("col" if nested else name, kind)]))


@pytest.mark.parametrize("name", ["order id", "1st", "a.b", "a-b", "", "Größe", "é1", "日付", "\U0001d465"])
@pytest.mark.parametrize("nested", [False, True])
def test_a_column_name_avro_refuses_is_refused_before_the_table_is_created(
    name: str, nested: bool, tmp_path: Path
) -> None:
    root = _project(tmp_path)
    with pytest.raises(RefusedError, match="Avro name") as refused:
        runner.write(_records(name, nested=nested), "t", project_dir=root)
    assert repr(f"col.{name}" if nested else name) in refused.value.message
    assert not (root / "warehouse").exists()


def test_a_dataframe_column_name_avro_refuses_is_refused(spark: object, tmp_path: Path) -> None:
    root = _project(tmp_path)
    df = spark.createDataFrame([(1, "a", 1, 2)], "id long, region string, ts long, `order id` long")  # type: ignore[attr-defined]
    with pytest.raises(RefusedError, match="'order id' is not an Avro name"):
        runner.write(df, "t", project_dir=root)
    assert not (root / "warehouse").exists()


@pytest.mark.parametrize("name", ["_x", "x_1", "X", "_1"])
def test_names_avro_takes_are_written(name: str, tmp_path: Path) -> None:
    root = _project(tmp_path)
    runner.write(_records(name, nested=False), "t", project_dir=root)
    assert [r[name] for r in oracle_rows(root / "warehouse" / "t")] == [1]
