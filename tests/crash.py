"""Shared by the kill tests: a one-table project on a fixture, and `runner apply` run as a real process
that exits at a named failpoint (`os._exit`, so nothing is cleaned up, as after SIGKILL)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from runner.cli import main
from tests.conftest import extract_fixture

# KEEP_LATEST_FILE_VERSIONS with one version: every fixture has something to clean.
TABLE_YAML = """\
name: t
path: table
clean:
  policy: KEEP_LATEST_FILE_VERSIONS
  file_versions_retained: 1
file_sizing:
  small_file_limit: 0
"""


def crash_project(root: Path, fixture: Path) -> Path:
    """A project at `root` whose one table `t` is `fixture` extracted to `root/table`."""
    root.mkdir(parents=True)
    (root / "project.yml").write_text('name: crash\nspark:\n  master: "local[1]"\n')
    (root / "tables").mkdir()
    (root / "tables" / "t.yml").write_text(TABLE_YAML)
    extract_fixture(fixture, root / "unzip").rename(root / "table")
    return root


def apply_process(project: Path, failpoint: str | None = None) -> subprocess.CompletedProcess[str]:
    """`runner apply --auto-approve` in a new process, exiting at `failpoint` when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")}
    if failpoint:
        env["RUNNER_FAILPOINT"] = failpoint
    return subprocess.run(
        [sys.executable, "-m", "runner", "apply", "--auto-approve", "--project-dir", str(project)],
        capture_output=True, text=True, env=env, timeout=300,
    )


def apply_in_process(project: Path, command: str = "apply") -> subprocess.CompletedProcess[str]:
    """`runner apply --auto-approve` (or `runner plan`) run by `runner.cli.main` in this process,
    its output captured as `apply_process` captures it.

    For the runs that are not killed: the reference run and the run after a kill. What they test is
    what they find on disk (the lock and files the killed process left), not which process they
    are, and a process of their own cost a Python, pyarrow and runner start each. The test
    process's `_isolate` fixture clears `RUNNER_*`, as `apply_process` does for its child.

    On these projects' local master neither a clean's deletes nor a resize need Spark, so no run
    here starts it (the child processes did not either). Should one start a session, that would
    outlive the test with the project's settings, so it is stopped and the test fails."""
    argv = [command, *(["--auto-approve"] if command == "apply" else []), "--project-dir", str(project)]
    before = _active_spark()
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    started = _active_spark()
    if before is None and started is not None:
        started.stop()
        raise AssertionError(f"`runner {command}` started Spark in the test process; run it with apply_process")
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def _active_spark() -> Any:
    if "pyspark.sql" not in sys.modules:  # nothing imported pyspark, so no session can be running
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


# A resize only: the clean keeps everything, so every step a kill test meets belongs to the resize.
RESIZE_YAML = """\
name: t
path: table
clean:
  policy: KEEP_LATEST_COMMITS
  commits_retained: 1000
file_sizing:
  small_file_limit: 100MiB
  max_file_size: 128MiB
"""
# Every crash point of a resize on a table with a metadata table, in the order apply meets them.
RESIZE_POINTS = [
    "after_replace_requested",
    "after_rewrite",
    "after_mdt_requested",
    "after_mdt_inflight",
    "after_mdt_logs",
    "after_resize_metadata_table_commit",
]
