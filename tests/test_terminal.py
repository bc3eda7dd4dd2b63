"""Terminal output: colour and progress on a TTY (through a real pseudo-terminal), plain text otherwise."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from runner.cli import main
from runner.commands.terminal import style_of
from tests.execute.test_cli_plan_apply import project

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RUNNER = str(Path(sys.executable).with_name("runner"))


def run_in_pty(argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 300) -> tuple[int, str]:
    """Run the CLI with stdin, stdout and stderr on a pseudo-terminal; return (exit code, all output)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                            env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", **(env or {})})
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")


def test_plan_on_a_tty_is_coloured_terraform_style(tmp_path):
    root = project(tmp_path / "p")
    code, out = run_in_pty([RUNNER, "plan", "--project-dir", str(root)], env={"NO_COLOR": ""})
    assert code == 2
    assert "\x1b[1;33m~ t (" in out  # the changed table: bold yellow `~`
    assert re.search(r"\x1b\[31m\s+- \S+\.parquet", out)  # each file to delete: red `-`
    assert "\x1b[1mPlan: 1 to change" in out


def test_no_color_on_a_tty_gives_the_plain_text(tmp_path, capsys):
    root = project(tmp_path / "p")
    code, out = run_in_pty([RUNNER, "plan", "--project-dir", str(root)], env={"NO_COLOR": "1"})
    assert code == 2
    assert not ANSI.search(out)
    assert main(["plan", "--project-dir", str(root)]) == 2
    plain = capsys.readouterr().out.strip().splitlines()
    # the same lines (bar the header's timestamp-free first line), with the summary table (its title
    # and box lines) above the closing `Plan:` and `Next:` lines
    shown = out.replace("\r\n", "\n").strip().splitlines()
    table = [i for i, line in enumerate(shown) if line == "Plan" or (line and line[0] in "┏┃┡│└")]
    assert table and table == list(range(table[0], table[-1] + 1)) and shown[table[-1] + 1:] == plain[-2:]
    assert [line for i, line in enumerate(shown) if i not in table][1:] == plain[1:]


def test_captured_output_has_no_escape_codes(tmp_path, capsys):
    root = project(tmp_path / "p")
    assert main(["plan", "--project-dir", str(root)]) == 2
    out = capsys.readouterr().out
    assert not ANSI.search(out) and "~ t (" in out


def test_line_styles():
    assert style_of("~ orders (/w/orders)") == "bold yellow"
    assert style_of("      - region=eu/a.parquet  (1.0 KiB)") == "red"
    assert style_of("      ~ region=eu: 3 files -> 1 (2.0 KiB)") == "yellow"
    assert style_of("= customers (/w/c): in sync") == "green"
    assert style_of("! events (/w/e)") == "bold red"
    assert style_of("    wrote 1.clean") == ""


@pytest.mark.spark  # `runner apply` starts Spark in a child process: no fixture says so
def test_apply_on_a_tty_shows_progress_and_no_spark_noise(tmp_path):
    """A real apply in its own process. A clean on a local master deletes on the runner's thread
    pool, so no JVM starts at all (runner.execute.deleter); when Spark does start, its lines go to
    target/spark.log (the mechanism is tested below)."""
    root = project(tmp_path / "p")
    code, out = run_in_pty([RUNNER, "apply", "--auto-approve", "--project-dir", str(root)])
    assert code == 0, out
    text = ANSI.sub("", out)
    assert "starting Spark" not in text  # sizing is off and the deletes ran on threads
    assert re.search(r"t: deleting \(4/4 files, (\S+ \S+)/\1\)", text)  # the bar's last frame
    assert "~ t: 4 files deleted" in text
    assert "WARN" not in text and "log4j" not in text
    assert f"Report: {root / 'target' / 'run_results.json'}" in text  # absolute with --project-dir


def test_status_and_plan_show_a_summary_table_on_a_tty_only(tmp_path, capsys):
    root = project(tmp_path / "p")
    code, out = run_in_pty([RUNNER, "status", "--project-dir", str(root)])
    text = ANSI.sub("", out)
    assert code == 0 and "Tables" in text
    assert re.search(r"│ t\s+│\s+COW │\s+6 │\s+3 │\s+1 │", text), text
    code, out = run_in_pty([RUNNER, "plan", "--project-dir", str(root)])
    assert code == 2 and re.search(r"│ t\s+│ changes\s+│\s+4 │", ANSI.sub("", out))
    assert main(["status", "--project-dir", str(root)]) == 0
    assert "│" not in capsys.readouterr().out  # piped: the text only


def test_a_child_started_inside_jvm_output_to_writes_to_the_log_for_its_whole_life(tmp_path, capfd):
    """The mechanism that quiets Spark: the child keeps the log as its stderr after the block ends."""
    from runner.commands.terminal import jvm_output_to

    log = tmp_path / "target" / "spark.log"
    with jvm_output_to(str(log)):
        child = subprocess.Popen(["sh", "-c", "echo starting >&2; read line; echo later: $line >&2"],
                                 stdin=subprocess.PIPE, text=True)
    print("ours", file=sys.stderr)
    child.communicate("still quiet\n", timeout=30)
    assert log.read_text() == "starting\nlater: still quiet\n"
    assert capfd.readouterr().err == "ours\n"
    with jvm_output_to(None):  # --debug: the child's output stays on the terminal
        subprocess.run(["sh", "-c", "echo visible >&2"], check=True)
    assert capfd.readouterr().err == "visible\n"


@pytest.mark.parametrize("command", ["plan", "status"])
def test_a_terminal_too_narrow_for_the_summary_table_gets_the_text_without_it(command, tmp_path):
    """At 30 columns rich squeezed the table's columns to nothing (empty headers, empty cells);
    the text above it says everything, so the table is left out rather than shown mangled."""
    root = project(tmp_path / "p")
    code, out = run_in_pty([RUNNER, command, "--project-dir", str(root)], env={"COLUMNS": "30"})
    text = ANSI.sub("", out)
    assert code in (0, 2), text
    assert "│" not in text and "━" not in text, text
    assert ("Plan: 1 to change" if command == "plan" else "Status: 1 table read") in text, text
    code, wide = run_in_pty([RUNNER, command, "--project-dir", str(root)], env={"COLUMNS": "120"})
    assert "│" in ANSI.sub("", wide)  # a terminal wide enough still gets it
