"""With --project-dir the user stands elsewhere: every command names the project's files by
absolute path, since a path relative to the project would point at the wrong place from the cwd."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.cli import main
from tests.execute.test_cli_plan_apply import project

COMMANDS = (["validate"], ["ls"], ["status"], ["plan"], ["apply", "--auto-approve"], ["docs", "generate"])


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project, with the current directory somewhere else."""
    root = project(tmp_path / "p")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return root


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_problem_names_its_file_by_absolute_path(elsewhere: Path, capsys: pytest.CaptureFixture[str],
                                                   command: list[str]) -> None:
    table = elsewhere / "tables" / "t.yml"
    table.write_text(table.read_text().replace("file_versions_retained: 1", "file_versions_retained: 0"))
    code = main([*command, "--project-dir", str(elsewhere)])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"{table}:5:3: clean.file_versions_retained: must be >= 1, got 0" in out + err
    assert " tables/t.yml" not in out + err


def test_files_named_inside_a_problem_are_absolute_too(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A duplicate name is reported in each file, naming the other one inside the message.
    first, second = elsewhere / "tables" / "t.yml", elsewhere / "tables" / "u.yml"
    second.write_text(first.read_text())
    assert main(["validate", "--project-dir", str(elsewhere)]) == 1
    out, err = capsys.readouterr()
    assert f"{first}:1:1: name: duplicate table name \"t\", also declared in {second}" in out + err
    assert f"same location as \"t\" ({first})" in out + err
    assert "tables/u.yml;" not in (out + err).replace(str(second), "")


def test_validate_lists_declarations_by_absolute_path(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--project-dir", str(elsewhere)]) == 0
    assert f"  t  {elsewhere / 'tables' / 't.yml'}\n" in capsys.readouterr().out


def test_validate_from_inside_the_project_keeps_relative_names(elsewhere: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(elsewhere)
    assert main(["validate"]) == 0
    assert "  t  tables/t.yml\n" in capsys.readouterr().out


def test_ls_shows_where_each_table_is_declared_by_absolute_path(elsewhere: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", "--project-dir", str(elsewhere)]) == 0
    assert str(elsewhere / "tables" / "t.yml") in capsys.readouterr().out


def test_status_and_plan_show_the_table_by_absolute_path(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--project-dir", str(elsewhere)]) == 0
    assert f"t ({elsewhere / 'table'})" in capsys.readouterr().out
    assert main(["plan", "--project-dir", str(elsewhere)]) == 2
    assert f"~ t ({elsewhere / 'table'})" in capsys.readouterr().out


def test_a_stale_plan_names_the_changed_declaration_by_absolute_path(elsewhere: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    plan_file = elsewhere.parent / "plan.json"
    assert main(["plan", "--project-dir", str(elsewhere), "--out", str(plan_file)]) == 2
    table = elsewhere / "tables" / "t.yml"
    table.write_text(table.read_text().replace("file_versions_retained: 1", "file_versions_retained: 2"))
    capsys.readouterr()
    assert main(["apply", str(plan_file), "--project-dir", str(elsewhere)]) == 1
    assert f"the declaration of table t ({table}) changed since the plan was made" in capsys.readouterr().err


@pytest.mark.spark
def test_apply_names_its_report_by_absolute_path(elsewhere: Path, capsys: pytest.CaptureFixture[str],
                                                 spark: object) -> None:
    assert main(["apply", "--auto-approve", "--project-dir", str(elsewhere)]) == 0
    assert f"Report: {elsewhere / 'target' / 'run_results.json'}" in capsys.readouterr().out


def test_docs_names_the_page_by_absolute_path(elsewhere: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "generate", "--project-dir", str(elsewhere)]) == 0
    assert f"wrote {elsewhere / 'target' / 'docs' / 'index.html'}" in capsys.readouterr().out
