"""`runner plan` and `runner apply` output for a project of many tables, as a reviewer reads it: the
summary first, changes grouped before failures, the tables in sync folded into one line, and a last
line that says what to do next. Real tables (the demo's customers table, copied), the real CLI."""

from __future__ import annotations

import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from runner.cli import main
from runner.demo import build_customers

IN_SYNC = 14  # more than the 10 names a folded line shows
NOW = "20260106000000"


def _declare(root: Path, name: str, path: str, retained: int) -> None:
    (root / "tables" / f"{name}.yml").write_text(
        f"name: {name}\npath: {path}\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n"
        f"  file_versions_retained: {retained}\n"
    )


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`a_change` has one file to delete, `b_missing` points at no table, and the `t_NN` tables
    keep every version they have (in sync); declared so that the text's order differs from theirs."""
    root = tmp_path_factory.mktemp("many")
    (root / "tables").mkdir()
    (root / "project.yml").write_text("name: many\nallowed_roots: [warehouse]\n")
    source = root / "source"
    build_customers(source, now=datetime(2026, 1, 6))
    for index in range(IN_SYNC):
        shutil.copytree(source, root / "warehouse" / f"t_{index:02d}", symlinks=True)
        _declare(root, f"t_{index:02d}", f"warehouse/t_{index:02d}", 10)
    shutil.copytree(source, root / "warehouse" / "change", symlinks=True)
    _declare(root, "z_change", "warehouse/change", 2)
    _declare(root, "a_missing", "warehouse/missing", 2)
    return root


def _plan(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[str]]:
    code = main(["plan", "--project-dir", str(root), "--now", NOW, *extra])
    return code, capsys.readouterr().out.splitlines()


def test_summary_comes_first_and_last_then_what_to_do(many: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = _plan(many, capsys)
    assert code == 1  # a table failed
    summary = "Plan: 1 to change, 14 in sync, 0 drifted, 1 failed; 1 file (100.2 KiB) to delete."
    assert lines[1] == summary and lines[-2] == summary
    assert lines[-1].startswith("Next: fix the 1 table that could not be planned (marked !)")


def test_changes_come_before_failures_and_in_sync_tables_fold(many: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, lines = _plan(many, capsys)
    heads = [line for line in lines if line[:2] in ("~ ", "! ", "= ")]
    assert [h.split()[1] for h in heads[:2]] == ["z_change", "a_missing"]
    assert heads[2] == ("= 14 tables in sync: " + ", ".join(f"t_{i:02d}" for i in range(10))
                        + ", ... and 4 more (--verbose lists each with why)")
    assert len(heads) == 3
    _, verbose = _plan(many, capsys, "--verbose")
    assert sum(line.startswith("= t_") and ": in sync; " in line for line in verbose) == IN_SYNC


def test_next_step_names_the_saved_plan(many: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plan.json"
    code, lines = _plan(many, capsys, "--out", str(out), "--exclude", "a_missing")
    assert code == 2
    assert lines[-1] == (f"Next: review the plan, then `runner apply {out} --project-dir {many}` applies "
                         "exactly this plan.")
    code, lines = _plan(many, capsys, "--exclude", "a_missing", "z_change")
    assert code == 0 and lines[-1] == "Nothing to do: every table matches its declaration."


def test_apply_report_folds_in_sync_tables_and_says_what_next(
    many: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(many, root, symlinks=True)
    assert main(["apply", "--project-dir", str(root), "--auto-approve", "--threads", "3"]) == 1
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if line[:2] in ("~ ", "! ", "= ")]
    assert [h.split()[1].rstrip(":") for h in heads[:2]] == ["a_missing", "z_change"]  # declaration order
    assert heads[2].startswith("= 14 tables in sync, nothing to do: t_00, t_01, ")
    assert len(heads) == 3
    assert lines[-2].startswith("Apply: 15 ok, 1 failed. Report: ")
    assert lines[-1].startswith("Next: fix what stopped the 1 failed table (marked ! above, with why)")


@pytest.mark.parametrize("command", ["plan", "status"])
def test_a_table_that_is_not_there_says_so_and_names_its_declaration(
    many: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (many / "warehouse" / "plain").mkdir(exist_ok=True)
    (many / "tables" / "b_plain.yml").write_text("name: b_plain\npath: warehouse/plain\n")
    try:
        assert main([command, "--project-dir", str(many), "--select", "a_missing", "b_plain"]) == 1
    finally:
        (many / "tables" / "b_plain.yml").unlink()
    lines = capsys.readouterr().out.splitlines()
    missing = lines.index(f"! a_missing ({many}/warehouse/missing)")
    assert lines[missing + 1:missing + 4] == [
        f"    {many}/warehouse/missing is not a Hudi table: it does not exist",
        "    To fix this, check the table's `path` in its declaration.",
        f"    declared in {many}/tables/a_missing.yml",
    ]
    plain = lines.index(f"! b_plain ({many}/warehouse/plain)")
    assert lines[plain + 1] == f"    {many}/warehouse/plain is not a Hudi table: it has no .hoodie folder"
    assert not (many / "warehouse" / "missing").exists()  # nothing created where the table should be
    assert [p.name for p in (many / "warehouse" / "plain").iterdir()] == []


def test_status_ends_with_what_it_read(many: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--project-dir", str(many)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "Status: 15 tables read (0 drifted from their `table:` block), 1 could not be read; fix the tables "
        "marked ! and run `runner status` again.")
    assert main(["status", "--project-dir", str(many), "--exclude", "a_missing"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "Status: 15 tables read (0 drifted from their `table:` block), 0 could not be read.")


def test_a_table_whose_properties_cannot_be_read_says_so(many: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # As root, permissions never refuse a read; a folder where the file should be fails the same way.
    root = tmp_path / "copy"
    shutil.copytree(many, root, symlinks=True)
    properties = root / "warehouse" / "t_00" / ".hoodie" / "hoodie.properties"
    properties.unlink()
    properties.mkdir()
    assert main(["plan", "--project-dir", str(root), "--select", "t_00"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[4:7] == [
        f"    {root}/warehouse/t_00/.hoodie/hoodie.properties is there but cannot be read (Is a directory); "
        "nothing was changed",
        "    To fix this, make it a file the runner can read (check its permissions: the runner reads the table's "
        "files, and writes them to apply).",
        f"    declared in {root}/tables/t_00.yml",
    ]


def test_the_terminal_summary_table_folds_in_sync_tables_and_the_next_step_stays_last(
    many: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # the coloured view with its table, as on a terminal
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert main(["plan", "--project-dir", str(many), "--now", NOW]) == 1
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in capsys.readouterr().out.splitlines()]
    rows = [line for line in lines if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["a_missing", "z_change", "(14 tables)"]
    assert lines[-2].startswith("Plan: 1 to change") and lines[-1].startswith("Next: ")
    assert lines[-3].startswith("└")  # the table sits above the closing lines
