"""The CLI's own surface: --version, --help for users, clear I/O errors."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from runner import __version__
from runner.cli import COMMANDS, main
from tests.execute.test_cli_plan_apply import project

RUNNER = str(Path(sys.executable).with_name("runner"))


def test_version():
    done = subprocess.run([RUNNER, "--version"], check=False, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, f"runner {__version__}")


def test_help_lists_exit_codes_and_no_internal_notes(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for code in ("0  success", "1  failure", "2  plan only: changes pending", "3  plan only: no changes pending"):
        assert code in out
    assert "argv" not in out and "domain logic" not in out and "--version" in out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_help_states_its_exit_status(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "exit status: 0 " in out


def test_plan_now_help_says_14_digits_mean_the_end_of_the_second(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    assert "end of that second" in capsys.readouterr().out.replace("\n", " ").replace("  ", " ")


def test_plan_out_to_an_unwritable_path_is_a_clear_error(tmp_path, capsys):
    root = project(tmp_path / "p")
    assert main(["plan", "--project-dir", str(root), "--out", "/proc/runner-plan.json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --out: cannot write the plan to /proc/runner-plan.json: ")
    assert "internal error" not in err
    assert main(["plan", "--project-dir", str(root), "--out", "/proc/runner-plan.json", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["type"] == "StorageError"


def test_an_os_error_anywhere_is_reported_as_the_users_io_error(tmp_path, capsys, monkeypatch):
    root = project(tmp_path / "p")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(root / "target" / "run_results.json"))

    monkeypatch.setattr("runner.commands.docs.collect_site", refuse)
    assert main(["docs", "generate", "--project-dir", str(root)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"error: {root / 'target' / 'run_results.json'}: Permission denied"


def test_ls_shows_declaration_paths_relative_only_without_project_dir(tmp_path, capsys, monkeypatch):
    root = project(tmp_path / "p")
    assert main(["ls", "--project-dir", str(root)]) == 0
    assert f"{root}/tables/t.yml" in capsys.readouterr().out
    monkeypatch.chdir(root)
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    assert "tables/t.yml" in out and str(root) + "/tables" not in out


@pytest.mark.parametrize("where", ["a folder", "under a file"])
def test_plan_out_where_a_folder_or_file_is_in_the_way_is_refused_before_planning(where, tmp_path):
    root = project(tmp_path / "p")
    blocker = tmp_path / "blocker"
    if where == "a folder":
        blocker.mkdir()
        out, expected = blocker, f"{blocker} is a folder, but the plan is written to a file of that name"
    else:
        blocker.write_text("x\n")
        out, expected = blocker / "plan.json", f"{blocker} is a file, but the plan needs a folder there"
    done = subprocess.run([sys.executable, "-m", "runner", "plan", "--project-dir", str(root), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith(f"error: --out: cannot write {out}: {expected}"), done.stderr
    assert done.stdout == ""  # refused before any table was read


def test_plan_out_into_a_pipe_writes_into_it_and_leaves_it_a_pipe(tmp_path, capsys):
    # `--out /dev/stdout` or `--out >(jq .)`: the plan went to a temporary file renamed over the
    # path, which as root replaced a device or pipe with a plain file (`--out /dev/full` did).
    root = project(tmp_path / "p")
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    # Held open for reading, so that the plan's open does not wait; this plan (2 KiB) fits the pipe's buffer.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert main(["plan", "--project-dir", str(root), "--out", str(fifo)]) == 2
        try:
            received = os.read(reader, 1 << 20)
        except BlockingIOError:  # nothing was written into the pipe
            received = b""
    finally:
        os.close(reader)
    capsys.readouterr()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(received)["format_version"] == 2
    assert sorted(os.listdir(tmp_path)) == ["p", "plan.fifo"]  # no temporary file left beside it


def test_plan_out_through_a_symbolic_link_writes_the_linked_file(tmp_path, capsys):
    # The rename replaced the link itself: the file it named kept the old plan.
    root = project(tmp_path / "p")
    (tmp_path / "plans").mkdir()
    real = tmp_path / "plans" / "latest.json"
    real.write_text("old\n")
    link = tmp_path / "plan.json"
    link.symlink_to(real)
    assert main(["plan", "--project-dir", str(root), "--out", str(link)]) == 2
    capsys.readouterr()
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text())["format_version"] == 2
    assert sorted(os.listdir(tmp_path / "plans")) == ["latest.json"]
