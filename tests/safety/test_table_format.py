"""Attack: a table whose `hoodie.table.format` names another format than Hudi's own (`native`).

Hudi 1.1 (table version 9) lets a table keep its metadata in an external format through a plugin
(`HoodieTableFormat`, Apache XTable's Iceberg or Delta formats): every commit, clean, archive,
rollback and savepoint is handed to the plugin, which keeps the other format's metadata (its
snapshots, the file lists its readers read) in step, and the plugin's timeline is the source of
truth. The runner called no plugin: a clean deleted files the other format's snapshot still lists
(its readers fail), and a write committed records its readers never see. Such a table is refused,
by every command, before anything is read or written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import runner
from runner.cli import main
from runner.errors import RunnerError
from runner.testing.tables import TableBuilder
from tests.safety.conftest import apply_json, digest, new_row, project_for


def _table(tmp_path: Path, table_format: str, *, version: int = 8) -> tuple[TableBuilder, Path, Path]:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=version)
    builder.commit(writes=1)
    builder.commit(updates=1)
    properties = table / ".hoodie" / "hoodie.properties"
    properties.write_text(properties.read_text() + f"hoodie.table.format={table_format}\n")
    return builder, table, project_for(table, tmp_path / "project")


def test_plan_and_apply_refuse_a_table_kept_in_another_format(tmp_path, capsys):
    _, table, root = _table(tmp_path, "iceberg")
    before = digest(table)

    code = main(["plan", "--project-dir", str(root), "--format", "json"])
    (planned,) = json.loads(capsys.readouterr().out)["tables"]
    assert code == 1, planned
    assert "hoodie.table.format" in planned["error"]["message"] and "iceberg" in planned["error"]["message"]

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")
    assert code == 1, report
    assert "hoodie.table.format" in report["tables"][0]["error"]["message"]
    assert digest(table) == before


def test_the_writer_refuses_a_table_kept_in_another_format(tmp_path):
    builder, table, root = _table(tmp_path, "delta", version=6)  # the version the writer writes
    (root / "tables" / "t.yml").write_text(
        (root / "tables" / "t.yml").read_text()
        + "table: {type: COPY_ON_WRITE, record_key: [id], partition_by: [p], precombine_field: ts}\n")
    before = digest(table)

    with pytest.raises(RunnerError, match=r"hoodie\.table\.format"):
        runner.write(new_row(builder), "t", project_dir=root)

    assert digest(table) == before


def test_the_native_format_is_hudis_own(tmp_path, capsys):
    _, _, root = _table(tmp_path, "native")

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 1
