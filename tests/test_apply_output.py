"""What `runner apply` tells the user once it is done."""

from __future__ import annotations

import json

from runner.cli import main
from tests.execute.test_cli_plan_apply import WITH_MDT, project


def test_after_disabling_the_metadata_table_the_report_says_so(tmp_path, capsys, spark):
    root = project(tmp_path / "p", WITH_MDT, extra="metadata_table: disable\n")
    assert main(["plan", "--project-dir", str(root)]) == 2
    assert "metadata table: apply will first disable the metadata table" in capsys.readouterr().out
    assert main(["apply", "--auto-approve", "--project-dir", str(root), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)["tables"][0]
    disabled, engine = result["notes"]
    assert disabled == "disabled the metadata table before cleaning"
    assert engine.startswith("deleted ") and "threads in-process" in engine  # which engine deleted
    assert (root / "target" / "run_results.json").exists()
