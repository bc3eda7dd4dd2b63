"""Drift from the `table:` block is its own plan status with its own exit code (3), below 1 and 2."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from runner.cli import main
from runner.commands.plan import exit_code
from runner.commands.result import ExitCode
from runner.plan.model import Plan, TablePlan, TableStatus
from tests.execute.test_cli_plan_apply import project, tree_digest

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "plan.schema.json").read_text())
IN_SYNC_POLICY = "clean:\n  policy: KEEP_LATEST_COMMITS\n  commits_retained: 10\nfile_sizing:\n  small_file_limit: 0\n"


def drifting_project(root: Path) -> Path:
    """The fixture table (copy-on-write, nothing to clean under 10 retained commits) declared as MOR."""
    root = project(root)
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: table\n" + IN_SYNC_POLICY + "table:\n  type: MERGE_ON_READ\n"
    )
    return root


def test_drift_only_exits_3_with_its_own_status(tmp_path, capsys):
    root = drifting_project(tmp_path / "p")
    assert main(["plan", "--project-dir", str(root), "--format", "json"]) == 3
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, SCHEMA)
    table = data["tables"][0]
    assert table["status"] == "drift"
    assert table["drift"] == ["table.type: declared 'MERGE_ON_READ', hoodie.properties has 'COPY_ON_WRITE'"]
    assert main(["plan", "--project-dir", str(root)]) == 3
    out = capsys.readouterr().out
    assert "? t (" in out and "    drift: table.type: declared 'MERGE_ON_READ'" in out
    assert "Plan: 0 to change, 0 in sync, 1 drifted, 0 failed" in out


def test_meta_fields_declared_otherwise_than_the_table_is_drift(tmp_path, capsys):
    root = project(tmp_path / "p")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: table\n" + IN_SYNC_POLICY + "table:\n  type: COPY_ON_WRITE\n  meta_fields: false\n"
    )
    assert main(["plan", "--project-dir", str(root), "--format", "json"]) == 3
    drift = json.loads(capsys.readouterr().out)["tables"][0]["drift"]
    assert drift == ["table.meta_fields: declared false, hoodie.properties has true"]


def test_apply_leaves_a_drifted_table_alone(tmp_path, capsys):
    root = drifting_project(tmp_path / "p")
    before = tree_digest(root / "table")
    assert main(["apply", "--auto-approve", "--project-dir", str(root), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["tables"][0]["status"] == "in_sync"
    assert tree_digest(root / "table") == before


def test_no_drift_keeps_exit_0(tmp_path, capsys):
    root = project(tmp_path / "p")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: table\n" + IN_SYNC_POLICY + "table:\n  type: COPY_ON_WRITE\n"
    )
    assert main(["plan", "--project-dir", str(root)]) == 0
    assert "= t (" in capsys.readouterr().out


def test_changes_and_errors_outrank_drift():
    drift = TablePlan("a", "/a", TableStatus.DRIFT, drift=("table.type: ...",))
    changes = TablePlan("b", "/b", TableStatus.CHANGES)
    error = TablePlan("c", "/c", TableStatus.ERROR, error={"type": "X", "message": "m"})
    assert exit_code(Plan("g", "n", (drift,))) is ExitCode.DRIFT
    assert exit_code(Plan("g", "n", (drift, changes))) is ExitCode.CHANGES
    assert exit_code(Plan("g", "n", (drift, changes, error))) is ExitCode.FAILURE
    assert exit_code(Plan("g", "n", ())) is ExitCode.OK
