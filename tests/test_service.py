"""The service layer as schedulers call it: the README's example, run as written, on a real table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.errors import InternalError, PlanError, RefusedError
from runner.plan.model import TableStatus
from runner.service import apply_tables, load_plan, plan_tables
from tests.execute.conftest import oracle_snapshot
from tests.execute.test_cli_plan_apply import project, tree_digest

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_example() -> str:
    text = README.read_text()
    section = text[text.index("## Calling the runner from Python"):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the README's Python API section has no example"
    return match.group(1)


def run_example(root: Path) -> int:
    code = readme_example().replace('"path/to/project"', repr(str(root)))
    with pytest.raises(SystemExit) as done:
        exec(compile(code, "README.md", "exec"), {})
    return int(done.value.code or 0)


def test_the_readme_example_applies_a_real_table_then_finds_it_in_sync(tmp_path):
    root = project(tmp_path / "p")
    rows_before = oracle_snapshot(root / "table")[1]
    assert run_example(root) == 0
    report = json.loads((root / "target" / "run_results.json").read_text())
    (table,) = report["tables"]
    assert table["status"] == "success" and table["files_deleted"] == 4
    assert oracle_snapshot(root / "table")[1] == rows_before  # the reader sees the same rows
    after = tree_digest(root / "table")
    assert run_example(root) == 0  # in sync: nothing applied, nothing written
    assert tree_digest(root / "table") == after


def test_plan_tables_changes_nothing_and_apply_tables_reports_per_table(tmp_path):
    root = project(tmp_path / "p")
    before = tree_digest(root / "table")
    loaded = load_project(root)
    plan = plan_tables(loaded)
    assert plan.has_changes and not plan.has_errors
    assert tree_digest(root / "table") == before
    report = apply_tables(loaded, plan=plan, report_path=tmp_path / "report.json")
    assert not report.failed and [t.status for t in report.tables] == [TableStatus.SUCCESS]
    assert json.loads((tmp_path / "report.json").read_text())["tables"][0]["status"] == "success"
    again = plan_tables(loaded)
    assert not again.has_changes and again.tables[0].status is TableStatus.IN_SYNC


def test_a_table_that_cannot_be_read_is_its_own_error_entry(tmp_path):
    root = project(tmp_path / "p")
    (root / "tables" / "gone.yml").write_text("name: gone\npath: nowhere\n")
    loaded = load_project(root)
    plan = plan_tables(loaded)
    gone = next(t for t in plan.tables if t.name == "gone")
    assert plan.has_errors and gone.status is TableStatus.ERROR
    assert gone.error is not None and gone.error["type"] == "NotAHudiTableError" and "nowhere" in gone.error["message"]
    report = apply_tables(loaded, plan=plan)  # the other table is still applied
    statuses = {t.name: t.status for t in report.tables}
    assert report.failed and statuses == {"t": TableStatus.SUCCESS, "gone": TableStatus.ERROR}


def test_a_plan_from_another_project_is_refused_before_any_table_is_touched(tmp_path):
    here, there = project(tmp_path / "here"), project(tmp_path / "there")
    plan = plan_tables(load_project(there))
    before = tree_digest(here / "table")
    with pytest.raises(PlanError, match="was made in project"):
        apply_tables(load_project(here), plan=plan)
    assert tree_digest(here / "table") == before and not (here / "target").exists()


def test_load_plan_refuses_a_version_1_plan_as_made_by_an_older_runner(tmp_path):
    root = project(tmp_path / "p")
    data = plan_tables(load_project(root)).to_json()
    data["format_version"] = 1
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError) as refused:
        load_plan(path)
    assert str(path) in str(refused.value) and "older runner" in str(refused.value)
    assert "run `runner plan` again" in str(refused.value)


def test_load_plan_names_the_file_and_the_json_path_of_a_schema_violation(tmp_path):
    root = project(tmp_path / "p")
    data = plan_tables(load_project(root)).to_json()
    clean = next(s for s in data["tables"][0]["steps"] if s["kind"] == "clean")
    clean["files_to_delete"][1]["size"] = "big"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError) as refused:
        load_plan(path)
    message = str(refused.value)
    assert str(path) in message and "$.tables[0].steps[" in message and ".files_to_delete[1].size" in message
    assert "'big' is not of type 'integer'" in message


def test_errors_have_one_json_form():
    assert RefusedError("no", hint="fix it").to_json() == {"type": "RefusedError", "message": "no\nTo fix this, fix it"}
    wrapped = InternalError.wrapping(KeyError("x"))
    assert wrapped.to_json() == {"type": "InternalError", "message": "internal error: KeyError: 'x'"}


def test_apply_of_a_version_1_plan_file_exits_1_and_deletes_nothing(tmp_path, capsys):
    from runner.cli import main

    root = project(tmp_path / "p")
    data = plan_tables(load_project(root)).to_json()
    data["format_version"] = 1
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    before = tree_digest(root / "table")
    assert main(["apply", str(path), "--project-dir", str(root)]) == 1
    out = capsys.readouterr()
    assert "made by an older runner" in out.err + out.out
    assert tree_digest(root / "table") == before


def test_load_plan_refuses_a_plan_from_a_newer_runner(tmp_path):
    data = plan_tables(load_project(project(tmp_path / "p"))).to_json()
    data["format_version"] = 3
    path = tmp_path / "new.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError, match="made by a newer runner"):
        load_plan(path)


def test_a_report_that_cannot_be_written_after_the_tables_were_applied_is_a_failed_run_that_says_what_was_done(
        tmp_path):
    """The tables are applied, then the report's write fails (here /proc refuses the file): the run
    returns its report, failed, with a note naming the path and why, rather than raising an OSError
    that hid what had been deleted."""
    root = project(tmp_path / "p")
    report = apply_tables(load_project(root), report_path=Path("/proc/runner-run-results.json"))
    assert [t.status for t in report.tables] == [TableStatus.SUCCESS] and report.tables[0].files_deleted > 0
    assert report.failed
    assert any(n.startswith("the run report could not be written to /proc/runner-run-results.json: ")
               for n in report.notes), report.notes
    from runner.commands.report import render_report

    text = render_report(report, "/proc/runner-run-results.json")
    assert "note: the run report could not be written to /proc/runner-run-results.json" in text
    assert text.splitlines()[-1] == "Apply: 1 ok, 0 failed. No report: it could not be written (see the note above)"
