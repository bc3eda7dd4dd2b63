"""Partition folders named by data values: values that would name no partition of the table.

A table Hudi created with `hive_style_partitioning=false` (Hudi's default) names each partition
folder by the value alone, and with `partitionpath.urlencode=false` (also the default; the writer
refuses URL-encoded tables) nothing escapes it. So a value `..` would put the records' folder
outside the table, `.` in the table's root, `.hoodie` (or `.hoodie_partition_metadata`) into the
timeline folder or onto a partition marker's name, and a nested `.hoodie` turns the folder above
it into what the runner's listing takes for a nested table (`runner.hudi.view.nested_table_roots`),
hiding every partition below it. A control character (newline, NUL, DEL) in any partition value,
hive style or not, makes the `hudi` reader (object_store's path parser) fail on the whole table.
Each is refused, naming the field, before anything is written; ordinary odd values (spaces,
`%`, `=`, a leading `.` or `_`, both Unicode forms) are written and read back as given.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from tests.safety.conftest import digest
from tests.writer.writer_helpers import oracle_rows

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
SPARK_SCHEMA = "id long, region string, part string, ts long"


def _project(tmp_path: Path, *, hive_style: bool, partition_by: str = "[region]") -> Path:
    """A project whose table exists, empty; without hive style as Hudi's default creates it."""
    root = tmp_path / "proj"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: values\n")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: warehouse/t\ntable:\n  type: COPY_ON_WRITE\n  record_key: [id]\n"
        f"  partition_by: {partition_by}\n  precombine_field: ts\n")
    runner.write(pa.Table.from_pylist([], SCHEMA), "t", operation="insert", project_dir=root)
    runner.write(pa.Table.from_pylist([{"id": 1, "region": "ok", "part": "ok", "ts": 1}], SCHEMA), "t",
                 operation="insert", project_dir=root)
    if not hive_style:
        properties = root / "warehouse" / "t" / ".hoodie" / "hoodie.properties"
        text = properties.read_text()
        properties.write_text(text.replace("hoodie.datasource.write.hive_style_partitioning=true",
                                           "hoodie.datasource.write.hive_style_partitioning=false"))
    return root


def _records(source: str, spark: Any, rows: list[dict[str, Any]]) -> Any:
    if source == "arrow":
        return pa.Table.from_pylist(rows, SCHEMA)
    return spark.createDataFrame([tuple(r.values()) for r in rows], SPARK_SCHEMA)


def _assert_refused_and_unchanged(root: Path, records: Any, operation: str, field: str, why: str = "") -> None:
    warehouse = root / "warehouse"
    before_rows = oracle_rows(warehouse / "t")
    before = set(digest(warehouse))
    with pytest.raises(RefusedError, match=f"partition field '{field}'{why}"):
        runner.write(records, "t", operation=operation, project_dir=root)
    # No data file anywhere, in or outside the table (the timeline's own files aside: a DataFrame's
    # keys are computed in Spark, after the instant is requested, which the next write rolls back).
    after = digest(warehouse)
    assert not [p for p in after if p.endswith(".parquet") and p not in before]
    assert not [p for p in after if "hoodie_partition_metadata" in p and p not in before]
    assert oracle_rows(warehouse / "t") == before_rows
    # and the next write goes through, reading the same records
    runner.write(pa.Table.from_pylist([{"id": 2, "region": "ok", "part": "ok", "ts": 1}], SCHEMA), "t",
                 project_dir=root)
    assert sorted(r["id"] for r in oracle_rows(warehouse / "t")) == [1, 2]


@pytest.mark.parametrize("value", [".", "..", ".hoodie", ".hoodie_partition_metadata"])
@pytest.mark.parametrize("operation", ["upsert", "bulk_insert"])
def test_a_value_naming_no_partition_folder_is_refused_without_hive_style(
    value: str, operation: str, tmp_path: Path
) -> None:
    root = _project(tmp_path, hive_style=False)
    rows = [{"id": 7, "region": value, "part": "p", "ts": 1}]
    _assert_refused_and_unchanged(root, pa.Table.from_pylist(rows, SCHEMA), operation, "region")
    assert not (tmp_path / "proj" / "warehouse" / ".hoodie_partition_metadata").exists()


def test_a_nested_hoodie_folder_is_refused_in_a_later_partition_field(tmp_path: Path) -> None:
    """`x/.hoodie/...` would make `x` look like another table's root to the runner's listing."""
    root = _project(tmp_path, hive_style=False, partition_by="[region, part]")
    rows = [{"id": 7, "region": "ok", "part": ".hoodie", "ts": 1}]
    _assert_refused_and_unchanged(root, pa.Table.from_pylist(rows, SCHEMA), "insert", "part")


@pytest.mark.parametrize("value", ["a\nb", "a\x00b", "\x7f", "tab\there"])
@pytest.mark.parametrize("hive_style", [True, False])
def test_a_control_character_in_a_partition_value_is_refused(value: str, hive_style: bool, tmp_path: Path) -> None:
    root = _project(tmp_path, hive_style=hive_style)
    rows = [{"id": 7, "region": value, "part": "p", "ts": 1}]
    _assert_refused_and_unchanged(root, pa.Table.from_pylist(rows, SCHEMA), "insert", "region")


@pytest.mark.parametrize("value", ["..", "a\nb"])
def test_a_dataframe_is_refused_alike(value: str, spark: Any, tmp_path: Path) -> None:
    root = _project(tmp_path, hive_style=False)
    rows = [{"id": 7, "region": value, "part": "p", "ts": 1}]
    _assert_refused_and_unchanged(root, _records("spark", spark, rows), "upsert", "region")


ODD = [".foo", "_foo", "a%20b", "a%2Fb", " a ", "a=b", "*?#", unicodedata.normalize("NFC", "é"),
       unicodedata.normalize("NFD", "é"), "x" * 200]


@pytest.mark.parametrize("hive_style", [True, False])
@pytest.mark.parametrize("source", ["arrow", "spark"])
def test_odd_but_valid_values_are_written_as_given_and_updated_in_place(
    hive_style: bool, source: str, spark: Any, tmp_path: Path
) -> None:
    values = ODD + ([".", "..", ".hoodie"] if hive_style else [])  # `region=..` is an ordinary folder
    root = _project(tmp_path, hive_style=hive_style)
    rows = [{"id": 10 + i, "region": v, "part": "p", "ts": 1} for i, v in enumerate(values)]
    runner.write(_records(source, spark, rows), "t", operation="insert", project_dir=root)
    runner.write(_records(source, spark, [{**r, "part": "new"} for r in rows]), "t", project_dir=root)
    found = oracle_rows(root / "warehouse" / "t", columns=("id", "region", "part", "_hoodie_partition_path"))
    expected = [{"id": 1, "region": "ok", "part": "ok", "_hoodie_partition_path": "region=ok"}] + [
        {"id": 10 + i, "region": v, "part": "new", "_hoodie_partition_path": f"region={v}" if hive_style else v}
        for i, v in enumerate(values)]
    if not hive_style:
        expected[0]["_hoodie_partition_path"] = "region=ok"  # written before the table was switched
    assert found == sorted(expected, key=repr)
    table = root / "warehouse" / "t"
    assert all(p.resolve().is_relative_to(table) for p in table.rglob("*.parquet"))


def _longest(hive_style: bool) -> int:
    return 255 - (len("region=") if hive_style else 0)


@pytest.mark.parametrize("hive_style", [True, False])
@pytest.mark.parametrize("source", ["arrow", "spark"])
def test_a_value_too_long_for_a_folder_name_is_refused_before_anything_is_written(
    hive_style: bool, source: str, spark: Any, tmp_path: Path
) -> None:
    """A folder name has at most 255 bytes on every common file system; one byte more used to
    fail in storage with the data file's write, the instant already requested, naming no field."""
    root = _project(tmp_path, hive_style=hive_style)
    longest = _longest(hive_style)
    too_long = "é" * (longest // 2) + "x" * (longest % 2 + 1)  # an é is two bytes: fewer characters than bytes
    assert len(too_long) <= longest < len(too_long.encode()) == longest + 1
    rows = [{"id": 7, "region": too_long, "part": "p", "ts": 1}]
    _assert_refused_and_unchanged(root, _records(source, spark, rows), "insert", "region",
                                  f" has a value longer than {longest} bytes")


@pytest.mark.parametrize("hive_style", [True, False])
def test_a_value_exactly_as_long_as_a_folder_name_allows_is_written(hive_style: bool, tmp_path: Path) -> None:
    root = _project(tmp_path, hive_style=hive_style)
    longest = "x" * _longest(hive_style)
    runner.write(pa.Table.from_pylist([{"id": 7, "region": longest, "part": "p", "ts": 1}], SCHEMA), "t",
                 operation="insert", project_dir=root)
    found = oracle_rows(root / "warehouse" / "t", columns=("id", "region"))
    assert {"id": 7, "region": longest} in found
