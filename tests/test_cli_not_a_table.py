"""A declaration whose `path` is no Hudi table: every command names the path, what it found there
and the declaration to fix, exits 1 and changes nothing. A path naming a file said "it has no
.hoodie folder", as if it were a folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _project(root: Path, path: str) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: p\n")
    (root / "tables" / "a.yml").write_text(f"name: a\npath: {path}\n")
    (root / "notes.txt").write_text("not a table\n")
    (root / "folder").mkdir()
    return root


@pytest.mark.parametrize(("path", "found"), [
    ("notes.txt", "it is a file, not a table's folder"),
    ("folder", "it has no .hoodie folder"),
    ("missing", "it does not exist"),
])
@pytest.mark.parametrize("command", [["plan"], ["status"], ["apply", "--auto-approve"]])
def test_a_path_that_is_no_table_names_what_was_found_there(command: list[str], path: str, found: str,
                                                           tmp_path: Path) -> None:
    root = _project(tmp_path / "p", path)
    done = subprocess.run([sys.executable, "-m", "runner", *command, "--project-dir", str(root)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{root / path}" in done.stdout and found in done.stdout, done.stdout
    assert f"declared in {root / 'tables' / 'a.yml'}" in done.stdout, done.stdout
    assert (root / "notes.txt").read_text() == "not a table\n" and not any((root / "folder").iterdir())
