"""Reading a plan's JSON in tests: the one table a project plans, the step of one kind of a table entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main


def planned_table(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """`runner plan --format json` of the project at `root` (in sync or changes pending): its one table."""
    code = main(["plan", "--project-dir", str(root), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code in (0, 2), data
    table: dict[str, Any] = data["tables"][0]
    return table


def step(table: dict[str, Any], kind: str) -> Any:
    """The table's step of `kind` (`clean`, `resize`, `update_metadata_table`, ...), or None."""
    return next((s for s in table["steps"] if s["kind"] == kind), None)
