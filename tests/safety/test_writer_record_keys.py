"""Record keys as Hudi's key generators render them, and keys that render alike.

ComplexKeyGenerator joins `field:value` pairs with `,` and escapes nothing, so values holding `,`
or `:` render as Hudi renders them, and an upsert of the same values finds the stored record. A
timestamp key is its epoch microseconds: the same instant given at nanosecond precision (exactly a
microsecond multiple) is the same key and updates in place, while one that is not is refused
rather than truncated into another record's key.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from tests.writer.writer_helpers import oracle_rows


def _project(tmp_path: Path, record_key: str) -> Path:
    root = tmp_path / "proj"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: keys\n")
    (root / "tables" / "t.yml").write_text(
        f"name: t\npath: warehouse/t\ntable:\n  type: COPY_ON_WRITE\n  record_key: {record_key}\n"
        "  partition_by: [region]\n  precombine_field: ts\n")
    return root


def test_complex_key_values_with_separators_render_as_hudi_and_update_in_place(tmp_path: Path) -> None:
    root = _project(tmp_path, "[a, b]")
    schema = pa.schema([("a", pa.string()), ("b", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
                        ("v", pa.string())])
    rows = [{"a": "x,b:y", "b": "z", "region": "r", "ts": 1, "v": "first"},
            {"a": "p:q", "b": None, "region": "r", "ts": 1, "v": "first"}]
    runner.write(pa.Table.from_pylist(rows, schema), "t", operation="insert", project_dir=root)
    runner.write(pa.Table.from_pylist([{**r, "ts": 2, "v": "second"} for r in rows], schema), "t", project_dir=root)
    found = oracle_rows(root / "warehouse" / "t", columns=("_hoodie_record_key", "v"))
    assert found == [{"_hoodie_record_key": "a:p:q,b:__null__", "v": "second"},
                     {"_hoodie_record_key": "a:x,b:y,b:z", "v": "second"}]


def test_a_timestamp_key_at_another_precision_is_the_same_key_or_refused(tmp_path: Path) -> None:
    root = _project(tmp_path, "[k]")
    micros = pa.schema([("k", pa.timestamp("us", tz="UTC")), ("region", pa.string()), ("ts", pa.int64())])
    nanos = pa.schema([("k", pa.timestamp("ns", tz="UTC")), ("region", pa.string()), ("ts", pa.int64())])
    moment = datetime(2024, 1, 1, tzinfo=UTC)
    runner.write(pa.Table.from_pylist([{"k": moment, "region": "r", "ts": 1}], micros), "t", operation="insert",
                 project_dir=root)
    same = runner.write(pa.Table.from_pylist([{"k": moment, "region": "r", "ts": 2}], nanos), "t", project_dir=root)
    assert (same.num_updates, same.num_inserts) == (1, 0)
    finer = pa.table({"k": pa.array([1_704_067_200_000_000_001], pa.timestamp("ns", tz="UTC")), "region": ["r"],
                      "ts": [3]})
    with pytest.raises(RefusedError, match="would lose data"):
        runner.write(finer, "t", project_dir=root)
    found = oracle_rows(root / "warehouse" / "t", columns=("_hoodie_record_key", "ts"))
    assert found == [{"_hoodie_record_key": "1704067200000000", "ts": 2}]
