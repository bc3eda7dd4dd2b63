"""A column name that differs from a real one only in case gets a did-you-mean, wherever the
runner refuses a name the records or the table do not have: the writer's key, partition and
precombine fields, its column check against an existing table, a declaration whose `table:`
block contradicts hoodie.properties, and `runner plan`'s drift. Arrow inputs: no Spark needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from tests.writer.writer_helpers import table_yaml

ROWS = {"id": [1], "region": ["eu"], "name": ["a"], "ts": [1]}


def _files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "warehouse").rglob("*") if p.is_file()) if (root / "warehouse").exists() else []


@pytest.mark.parametrize(("declaration", "refused"), [
    (table_yaml("t", record_key="[ID]"), "has no column 'ID', which the table uses as a key or partition field"),
    (table_yaml("t", partition_by="[Region]"), "has no column 'Region', which the table uses as a key"),
    (table_yaml("t", precombine="TS"), "has no column 'TS', the table's precombine field"),
])
def test_a_key_field_declared_in_another_case_gets_did_you_mean(
        project: Callable[..., Path], declaration: str, refused: str) -> None:
    root = project(t=declaration)
    with pytest.raises(RefusedError) as error:
        runner.write(pa.table(ROWS), "t", project_dir=root)
    wanted = {"ID": "id", "Region": "region", "TS": "ts"}[refused.split("'")[1]]
    assert refused in str(error.value) and f'(did you mean "{wanted}"?)' in str(error.value), str(error.value)
    assert not any(p.suffix == ".parquet" for p in _files(root))


def test_a_record_column_in_another_case_than_the_tables_gets_did_you_mean(project: Callable[..., Path]) -> None:
    root = project(t=table_yaml("t"))
    runner.write(pa.table(ROWS), "t", project_dir=root)
    before = _files(root)
    with pytest.raises(RefusedError) as error:
        runner.write(pa.table({**{k: v for k, v in ROWS.items() if k != "name"}, "Name": ["b"]}), "t",
                     project_dir=root)
    assert "column(s) 'Name' are not in the table" in str(error.value)
    assert '(did you mean "name"?)' in str(error.value), str(error.value)
    assert _files(root) == before


def test_a_declaration_whose_key_differs_from_the_tables_only_in_case_gets_did_you_mean(
        project: Callable[..., Path]) -> None:
    root = project(t=table_yaml("t"))
    runner.write(pa.table(ROWS), "t", project_dir=root)
    (root / "tables" / "t.yml").write_text(table_yaml("t", record_key="[Id]"))
    with pytest.raises(RefusedError) as error:
        runner.write(pa.table(ROWS), "t", project_dir=root)
    assert "table.record_key is ['Id'] but the table" in str(error.value)
    assert '(did you mean "id"?)' in str(error.value), str(error.value)

    plan = subprocess.run([sys.executable, "-m", "runner", "plan", "--project-dir", str(root), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    (drift,) = json.loads(plan.stdout)["tables"][0]["drift"]
    assert drift.startswith("table.record_key: declared ['Id'], hoodie.properties has ['id']")
    assert '(did you mean "id"?)' in drift, drift


@pytest.mark.parametrize(("option", "meant"), [
    ("Hoodie.Parquet.Compression.Codec", "hoodie.parquet.compression.codec"),
    ("hoodie.parquet.compresion.codec", "hoodie.parquet.compression.codec"),
    ("spark.hadoop.zlib.compress.level", "zlib.compress.level"),  # as Hudi users set it in Spark's conf
])
def test_an_option_near_a_supported_one_gets_did_you_mean(project: Callable[..., Path], option: str,
                                                         meant: str) -> None:
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError) as error:
        runner.write(pa.table(ROWS), "t", project_dir=root, options={option: "6"})
    assert f"does not support the option(s) {option} (did you mean \"{meant}\"?)" in str(error.value), \
        str(error.value)
    assert not _files(root)
