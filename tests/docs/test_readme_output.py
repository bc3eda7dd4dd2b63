"""The README's sample `runner plan` output is what the runner prints: the command it shows, run as
written on the demo project, gives the block below it (the README shortens file ids and shows the
project at /home/me/demo)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from runner.cli import main
from tests.docs.conftest import REPO

SAMPLE = re.compile(r"^`(runner plan [^`]+)` on the demo project.*?\n```\n(.*?)```", re.S | re.M)
FILE_ID = re.compile(r"\b([0-9a-f]{8}-[0-9a-f]{4})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def test_the_readme_sample_plan_is_what_plan_prints(demo_project: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    match = SAMPLE.search((REPO / "README.md").read_text(encoding="utf-8"))
    assert match, "README.md has no sample `runner plan` output"
    command, shown = match.groups()
    argv = shlex.split(command)[1:]
    monkeypatch.chdir(demo_project)  # run as written, inside the project
    assert main(argv) == 2
    printed = FILE_ID.sub(r"\1…", capsys.readouterr().out).replace(str(demo_project), "/home/me/demo")
    assert printed == shown


IMPORT_SAMPLE = re.compile(r"^`(runner import [^`]+)` in the demo project, after deleting `([^`]+)`.*?\n```\n(.*?)```\n"
                           r"\nand `([^`]+)`:\n\n```yaml\n(.*?)```", re.S | re.M)


def test_the_readme_sample_import_is_what_import_prints_and_writes(demo_project: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    match = IMPORT_SAMPLE.search((REPO / "README.md").read_text(encoding="utf-8"))
    assert match, "README.md has no sample `runner import` output"
    command, deleted, shown, written, text = match.groups()
    project = tmp_path / "demo"  # a copy: the shared demo project stays as it is
    shutil.copytree(demo_project, project, symlinks=True)
    (project / deleted).unlink()
    monkeypatch.chdir(project)
    assert main(shlex.split(command)[1:]) == 0
    assert capsys.readouterr().out.replace(str(project), "/home/me/demo") == shown
    assert (project / written).read_text(encoding="utf-8") == text
