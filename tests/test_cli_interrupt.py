"""Ctrl-C: `runner apply` stops starting tables, lets no table be half-applied by a thread, writes
the report with an entry for every selected table, says what is left and exits 1 without a
traceback; the next apply finishes what was left. Read-only commands say they changed nothing.

The SIGINT is real: `RUNNER_FAILPOINT=<point>:sigint` makes the runner signal itself at a known
step, as a Ctrl-C at that moment would.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest

from runner.cli import main
from runner.demo import build_customers

NAMES = ("b", "c", "d", "e")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's customers table: one file to clean, six small files to resize."""
    path = tmp_path_factory.mktemp("interrupt") / "customers"
    build_customers(path, now=datetime(2026, 1, 6))
    return path


def _project(root: Path, source: Path) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: ctrlc\nallowed_roots: [warehouse]\nspark:\n  master: "local[1]"\n')
    for name in NAMES:
        shutil.copytree(source, root / "warehouse" / name, symlinks=True)
        (root / "tables" / f"{name}.yml").write_text(
            f"name: {name}\npath: warehouse/{name}\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n"
            "  file_versions_retained: 2\nfile_sizing:\n  max_file_size: 1MiB\n  small_file_limit: 512KiB\n"
        )
    return root


def _runner(root: Path, *argv: str, failpoint: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")}
    if failpoint:
        env["RUNNER_FAILPOINT"] = failpoint
    return subprocess.run([sys.executable, "-m", "runner", *argv, "--project-dir", str(root)],
                          capture_output=True, text=True, env=env, timeout=300)


def _statuses(root: Path) -> dict[str, str]:
    report = json.loads((root / "target" / "run_results.json").read_text())
    jsonschema.validate(report, json.loads((REPO / "schemas" / "run_results.schema.json").read_text()))
    assert "interrupted by the user (Ctrl-C)" in report["notes"]
    return {t["name"]: t["status"] for t in report["tables"]}


def _next_apply_finishes(root: Path) -> None:
    assert not list(root.glob("warehouse/*/.hoodie/.locks/runner.lock"))  # every lock released
    assert _runner(root, "apply", "--auto-approve").returncode == 0
    assert _runner(root, "apply", "--auto-approve").returncode == 0  # the cleaner's second pass
    final = _runner(root, "plan")
    assert final.returncode == 0, final.stdout
    assert final.stdout.splitlines()[-1] == "Nothing to do: every table matches its declaration."


def test_ctrl_c_mid_table_stops_the_run_and_the_next_apply_finishes_it(tmp_path: Path, source: Path) -> None:
    root = _project(tmp_path / "p", source)
    # first in declaration order: a table that fails before the interrupt comes
    (root / "tables" / "a.yml").write_text("name: a\npath: warehouse/gone\n")
    done = _runner(root, "apply", "--auto-approve", failpoint="after_clean_requested:sigint")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: interrupted: 1 of 5 tables done (1 failed), b stopped while being "
                                  "applied, 3 not started; nothing else was changed. Report: ")
    assert "To fix this, plan again and apply the new plan" in done.stderr
    assert _statuses(root) == {"a": "error", **dict.fromkeys(NAMES, "error")}
    (root / "tables" / "a.yml").unlink()
    assert list((root / "warehouse" / "b" / ".hoodie").glob("*.clean.requested"))  # left pending
    assert not list((root / "warehouse" / "c" / ".hoodie").glob("*.clean*"))  # never started
    _next_apply_finishes(root)


def test_ctrl_c_with_threads_finishes_the_tables_in_progress_and_starts_no_other(
    tmp_path: Path, source: Path
) -> None:
    root = _project(tmp_path / "p", source)
    done = _runner(root, "apply", "--auto-approve", "--threads", "2", failpoint="after_clean_requested:sigint")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "error: interrupted: 2 of 4 tables done, 2 not started; " in done.stderr
    statuses = _statuses(root)
    assert statuses == {"b": "success", "c": "success", "d": "error", "e": "error"}
    for name in ("b", "c"):  # applied to the end although the interrupt came mid-clean
        assert list((root / "warehouse" / name / ".hoodie").glob("*.replacecommit"))
    _next_apply_finishes(root)


def test_ctrl_c_in_plan_says_nothing_changed(tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import runner.commands.plan as plan_command

    root = _project(tmp_path / "p", source)
    real = plan_command.plan_tables

    def interrupted_midway(*args: object, **kwargs: object) -> object:
        signal.raise_signal(signal.SIGINT)  # Python's own handler: KeyboardInterrupt right here
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plan_command, "plan_tables", interrupted_midway)
    assert main(["plan", "--project-dir", str(root)]) == 1
    assert capsys.readouterr().err == "error: interrupted; nothing was changed (this command only reads)\n"


def test_ctrl_c_while_the_plan_file_is_written_leaves_the_previous_plan_whole(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path / "p", source)
    out = tmp_path / "plan.json"
    assert main(["plan", "--project-dir", str(root), "--out", str(out)]) == 2
    previous = out.read_text()
    real_write = Path.write_text

    def interrupted_write(path: Path, text: str, *args: object, **kwargs: object) -> int:
        real_write(path, text[: len(text) // 2])  # half the plan is on disk when Ctrl-C comes
        signal.raise_signal(signal.SIGINT)
        return 0

    monkeypatch.setattr(Path, "write_text", interrupted_write)
    assert main(["plan", "--project-dir", str(root), "--out", str(out)]) == 1
    monkeypatch.undo()
    assert out.read_text() == previous  # still the whole earlier plan, which apply can check
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p", "plan.json"]  # no half-written leftover
    assert "interrupted; nothing was changed" in capsys.readouterr().err
