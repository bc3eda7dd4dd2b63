"""FORCE_COLOR / CLICOLOR_FORCE colour piped output (a CI log, `make run | tee`); NO_COLOR wins."""

from __future__ import annotations

import pytest

from runner.cli import main
from tests.execute.test_cli_plan_apply import project
from tests.test_terminal import ANSI


@pytest.fixture(autouse=True)
def _no_colour_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("name", ["FORCE_COLOR", "CLICOLOR_FORCE"])
def test_forced_colour_colours_the_plan_when_piped(tmp_path, capsys, monkeypatch, name):
    root = project(tmp_path / "p")
    monkeypatch.setenv(name, "1")
    assert main(["plan", "--project-dir", str(root)]) == 2
    out = capsys.readouterr().out
    assert "\x1b[1;33m~ t (" in out  # bold yellow, as on a terminal
    assert "│" in out  # and the summary table


@pytest.mark.parametrize("env", [{"FORCE_COLOR": "0"}, {"CLICOLOR_FORCE": "0"}, {"FORCE_COLOR": ""},
                                 {"FORCE_COLOR": "1", "NO_COLOR": "1"}])
def test_zero_empty_or_no_color_leave_piped_output_plain(tmp_path, capsys, monkeypatch, env):
    root = project(tmp_path / "p")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["plan", "--project-dir", str(root)]) == 2
    out = capsys.readouterr().out
    assert not ANSI.search(out) and "~ t (" in out and "│" not in out
