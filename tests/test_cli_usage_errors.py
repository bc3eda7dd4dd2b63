"""Usage errors, as a user types them: exit 1 (2 means "changes pending"), one clear error naming
the command, a did-you-mean for a near miss, no traceback, and no abbreviated option taken for
another (argparse would read `--auto` as `--auto-approve`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.cli import main


@pytest.mark.parametrize(("argv", "first_line"), [
    (["stauts"], "error: runner: argument COMMAND: invalid choice: 'stauts' (choose from 'validate', 'ls', "
                 "'status', 'plan', 'apply', 'docs', 'import') (did you mean \"status\"?)"),
    (["plan", "--verbos"], 'error: runner plan: unrecognized arguments: --verbos (did you mean "--verbose"?)'),
    (["plan", "--verbos=1"], 'error: runner plan: unrecognized arguments: --verbos=1 (did you mean "--verbose"?)'),
    (["apply", "--auto"], 'error: runner apply: unrecognized arguments: --auto (did you mean "--auto-approve"?)'),
    (["ls", "--selct", "orders"],
     'error: runner ls: unrecognized arguments: --selct orders (did you mean "--select"?)'),
    (["validate", "--nope"], "error: runner validate: unrecognized arguments: --nope"),
    (["plan", "orders"], "error: runner plan: unexpected argument 'orders'; to pick tables, write --select orders"),
])
def test_a_usage_error_names_the_command_and_the_near_miss(argv: list[str], first_line: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 1
    out, err = capsys.readouterr()
    prog = f"runner {argv[0]}" if argv[0] in ("plan", "apply", "ls", "validate") else "runner"
    assert out == "" and err.splitlines() == [first_line, f"To fix this, see `{prog} --help`."]


def test_an_abbreviated_option_is_never_taken_for_the_full_one(tmp_path) -> None:
    # Run where there is no project: had `--auto` been read as --auto-approve, apply would go on to
    # load the project (and fail on project.yml) instead of stopping at the usage error.
    done = subprocess.run([sys.executable, "-m", "runner", "apply", "--auto"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(
        'error: runner apply: unrecognized arguments: --auto (did you mean "--auto-approve"?)')


@pytest.mark.parametrize("argv", [["ls"], ["validate", "--format", "json"]])
def test_output_piped_into_a_reader_that_stops_early_is_no_traceback(argv: list[str]) -> None:
    # `runner ls | head -1`: the reader closes the pipe; here it is closed before the first write.
    read_end, write_end = os.pipe()
    os.close(read_end)
    repo = Path(__file__).resolve().parents[1]
    try:
        done = subprocess.run([sys.executable, "-m", "runner", *argv, "--project-dir", str(repo)],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.stderr == "" and done.returncode == 0


@pytest.mark.parametrize(("argv", "command", "moved"), [
    (["--project-dir", "proj", "plan"], "plan", "--project-dir proj"),
    (["--project-dir=proj", "status", "--select", "a"], "status", "--project-dir=proj"),
    (["--select", "orders", "apply", "--auto-approve"], "apply", "--select orders"),
    (["--format", "json", "ls"], "ls", "--format json"),
])
def test_an_option_before_the_command_says_where_it_goes(argv: list[str], command: str, moved: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """As dbt users type it (`dbt --debug run` works there): was "invalid choice: 'proj'"."""
    assert main(argv) == 1
    out, err = capsys.readouterr()
    if "json" in argv:  # the error comes as JSON on stdout, as for every --format json run
        err = "error: " + json.loads(out)["error"]["message"]
    option = moved.split()[0].split("=")[0]
    assert f"error: runner: {option} goes after the command" in err, err
    rest = " ".join(a for a in argv if a not in moved.split() and a != command)
    assert f"`runner {command} {moved}{' ' + rest if rest else ''}`" in err, err
    assert "invalid choice" not in err


@pytest.mark.parametrize("argv", [
    ["plan", "--out", ""],                  # `--out "$PLAN"` with PLAN unset: no plan file, and exit 0
    ["docs", "generate", "--out", ""],      # wrote to target/docs instead
    ["plan", "--project-dir", ""],          # planned the project in the current folder instead
    ["apply", "--auto-approve", "--project-dir="],
    ["import", "warehouse", "--project-dir", ""],
    ["plan", "--target", ""],               # was `--target "" is not declared`, as if a name
])
def test_an_empty_path_option_is_refused_not_read_as_the_default(argv: list[str], tmp_path: Path) -> None:
    (tmp_path / "project.yml").write_text("name: here\n")  # a project the empty value would fall back to
    (tmp_path / "tables").mkdir()
    done = subprocess.run([sys.executable, "-m", "runner", *argv], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    option = next(a for a in argv if a.startswith("--") and a != "--auto-approve").rstrip("=")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"argument {option}: the value is empty" in done.stderr, done.stderr
    assert done.stdout == "" and not (tmp_path / "target").exists()
