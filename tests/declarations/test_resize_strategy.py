"""`file_sizing.strategy`: declared per table or as a project default, shown by `runner ls`,
carried by the plan (text and JSON), and rejected with its location when misspelt."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from runner.cli import main
from runner.commands.render import render_plan
from runner.declarations.loader import load_project
from runner.declarations.model import ResizeStrategy
from runner.plan.model import Plan, TablePlan, TableStatus
from runner.plan.steps import FileToRewrite, Resize, RewriteGroup, step_from_json, step_to_json

from .conftest import WriteProject

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "plan.schema.json").read_text())
STEP = Resize(1000, 500, (RewriteGroup("p", (FileToRewrite("f1", "p/f1.parquet", 100),
                                             FileToRewrite("f2", "p/f2.parquet", 100))),),
              ResizeStrategy.BINARY_COPY)


def test_a_table_or_the_project_default_chooses_binary_copy(
    write_project: WriteProject, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_project(
        {"tables/a.yml": "name: a\npath: a\nfile_sizing:\n  strategy: binary_copy\n",
         "tables/b.yml": "name: b\npath: b\n",
         "tables/c.yml": "name: c\npath: c\nfile_sizing: {strategy: rewrite}\n"},
        project="name: p\ndefaults:\n  file_sizing:\n    strategy: binary_copy\n",
    )
    tables = {t.name: t for t in load_project(root).tables}
    assert {name: t.file_sizing.strategy for name, t in tables.items()} == {
        "a": ResizeStrategy.BINARY_COPY, "b": ResizeStrategy.BINARY_COPY, "c": ResizeStrategy.REWRITE}
    assert main(["ls", "--project-dir", str(root)]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines() if "file_sizing.strategy" in line]
    assert lines == [["file_sizing.strategy", "binary_copy", "table"],
                     ["file_sizing.strategy", "binary_copy", "project", "default"],
                     ["file_sizing.strategy", "rewrite", "table"]]


def test_a_misspelt_strategy_is_a_validate_error_with_its_location(
    write_project: WriteProject, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_project({"tables/t.yml": "name: t\npath: t\nfile_sizing:\n  strategy: binarycopy\n"})
    assert main(["validate", "--project-dir", str(root)]) == 1
    out, err = capsys.readouterr()
    assert 't.yml:4:3: file_sizing.strategy: expected one of rewrite, binary_copy, got "binarycopy"' in out + err


def test_the_plan_carries_the_strategy_in_json_and_text() -> None:
    data = step_to_json(STEP)
    assert data["strategy"] == "binary_copy"
    assert step_from_json(json.loads(json.dumps(data))) == STEP
    plan = Plan("g", "20240101000010000", (TablePlan("t", "/t", TableStatus.CHANGES, steps=(STEP,)),))
    jsonschema.validate(json.loads(json.dumps(plan.to_json())), SCHEMA)
    text = render_plan(plan, "p")
    assert "resize: 2 small files" in text and "strategy: binary copy" in text
    rewrite = Plan("g", "20240101000010000", (TablePlan("t", "/t", TableStatus.CHANGES,
                                                        steps=(Resize(1000, 500, STEP.groups),)),))
    assert "strategy" not in render_plan(rewrite, "p")


def test_a_plan_saved_before_the_choice_existed_reads_as_rewrite() -> None:
    data = step_to_json(STEP)
    del data["strategy"]
    assert step_from_json(data).strategy is ResizeStrategy.REWRITE
