"""Nested schema changes: refused naming the column, before anything is written.

The writer does no schema evolution (README): a struct that gains a field, retypes one, renames
one by case or makes one required differs from the table's schema and is refused naming the
top-level column, leaving the table as it was; a narrower integer Spark stores as the same Avro
`int` (short into int) is the same schema and is written.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from tests.safety.conftest import digest
from tests.writer.writer_helpers import oracle_rows

BASE = [("id", pa.int64()), ("region", pa.string()), ("ts", pa.int64())]


def _write(root: Path, kind: pa.DataType, value: object, key: int) -> None:
    records = pa.Table.from_pylist([{"id": key, "region": "a", "ts": 1, "s": value}], pa.schema([*BASE, ("s", kind)]))
    runner.write(records, "t", project_dir=root)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: nested\n")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: warehouse/t\ntable:\n  type: COPY_ON_WRITE\n  record_key: [id]\n"
        "  partition_by: [region]\n  precombine_field: ts\n")
    _write(root, pa.struct([("a", pa.int32())]), {"a": 1}, 1)
    return root


@pytest.mark.parametrize("kind, value", [
    (pa.struct([("a", pa.int32()), ("b", pa.int32())]), {"a": 1, "b": 2}),
    (pa.struct([("a", pa.int64())]), {"a": 1}),
    (pa.struct([("A", pa.int32())]), {"A": 1}),
    (pa.struct([pa.field("a", pa.int32(), nullable=False)]), {"a": 1}),
    (pa.list_(pa.int32()), [1]),
], ids=["field added", "field retyped", "field recased", "field required", "struct to list"])
def test_a_changed_nested_schema_is_refused_naming_the_column(root: Path, kind: pa.DataType, value: object) -> None:
    table = root / "warehouse" / "t"
    before, rows = digest(table), oracle_rows(table)
    with pytest.raises(RefusedError, match="column 's'"):
        _write(root, kind, value, 2)
    assert digest(table) == before
    assert oracle_rows(table) == rows


def test_a_short_into_an_int_field_is_the_same_schema(root: Path) -> None:
    _write(root, pa.struct([("a", pa.int16())]), {"a": 7}, 2)
    assert oracle_rows(root / "warehouse" / "t", columns=("id", "s")) == [{"id": 1, "s": {"a": 1}},
                                                                          {"id": 2, "s": {"a": 7}}]
