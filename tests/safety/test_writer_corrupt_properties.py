"""`runner.write` into a table whose `hoodie.properties` is damaged: refused before anything is written.

Hudi loads `hoodie.properties` only if its `hoodie.table.checksum` (CRC32 of `<database>.<table>`)
matches, else it falls back to `hoodie.properties.backup` and fails when neither is valid
(`HoodieTableConfig.fetchConfigs`); every table of version 4 and later has one. A file cut short
(a crash or a partial copy) loses its last lines, the checksum among them, and with them the
partition fields: the writer then took a partitioned table for a non-partitioned one and wrote its
records into the table's root. A boolean the writer reads (`hive_style_partitioning`,
`populate.meta.fields`, ...) holding neither `true` nor `false` is something Java's
`Boolean.parseBoolean` reads as false while a person meant otherwise: refused too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from tests.safety.conftest import digest
from tests.writer.writer_helpers import oracle_rows

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("ts", pa.int64())])

DAMAGE: dict[str, tuple[Callable[[str], str], str]] = {
    "cut short": (lambda text: text[: text.index("hoodie.table.partition.fields")], "hoodie.table.checksum"),
    "checksum off by one": (lambda text: text.replace("hoodie.table.checksum=", "hoodie.table.checksum=1"),
                            "hoodie.table.checksum"),
    "renamed table": (lambda text: text.replace("hoodie.table.name=t\n", "hoodie.table.name=u\n"),
                      "hoodie.table.checksum"),
    "hive style maybe": (lambda text: text.replace("hive_style_partitioning=true", "hive_style_partitioning=maybe"),
                         "hoodie.datasource.write.hive_style_partitioning"),
    "meta fields yes": (lambda text: text.replace("populate.meta.fields=true", "populate.meta.fields=yes"),
                        "hoodie.populate.meta.fields"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("declared", [True, False])
def test_a_damaged_properties_file_refuses_the_write_and_nothing_is_written(
    damage: str, declared: bool, tmp_path: Path
) -> None:
    root = tmp_path / "proj"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: damaged\n")
    table_block = ("table:\n  type: COPY_ON_WRITE\n  record_key: [id]\n  partition_by: [region]\n"
                   "  precombine_field: ts\n")
    (root / "tables" / "t.yml").write_text("name: t\npath: warehouse/t\n" + table_block)
    runner.write(pa.Table.from_pylist([{"id": 1, "region": "a", "ts": 1}], SCHEMA), "t", operation="insert",
                 project_dir=root)
    if not declared:  # a declaration without `table:` checks nothing against the file
        (root / "tables" / "t.yml").write_text("name: t\npath: warehouse/t\n")
    table = root / "warehouse" / "t"
    properties = table / ".hoodie" / "hoodie.properties"
    change, named = DAMAGE[damage]
    rows, good = oracle_rows(table), properties.read_text()
    properties.write_text(change(good))
    before = digest(table)

    with pytest.raises(RefusedError, match=named):
        runner.write(pa.Table.from_pylist([{"id": 2, "region": "a", "ts": 1}], SCHEMA), "t", project_dir=root)

    assert digest(table) == before
    properties.write_text(good)  # the hudi reader refuses some of these files too
    assert oracle_rows(table) == rows


def test_a_table_without_a_database_name_checks_its_checksum_without_one(tmp_path: Path) -> None:
    """The runner's own tables record no database: their checksum is CRC32 of `.<table>`, as Hudi
    computes it with an empty database; a write into one goes through (and into Hudi's fixtures,
    whose database is `default`: tests/writer/test_writer_merge.py)."""
    root = tmp_path / "proj"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: plain\n")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: warehouse/t\ntable:\n  type: COPY_ON_WRITE\n  record_key: [id]\n  partition_by: [region]\n"
        "  precombine_field: ts\n")
    for i in (1, 2):
        runner.write(pa.Table.from_pylist([{"id": i, "region": "a", "ts": 1}], SCHEMA), "t", project_dir=root)
    assert "hoodie.database.name" not in (root / "warehouse" / "t" / ".hoodie" / "hoodie.properties").read_text()
    assert sorted(r["id"] for r in oracle_rows(root / "warehouse" / "t")) == [1, 2]
