"""Shared by the kill tests: a one-table project on a fixture, and `runner apply` run as a real process
that exits at a named failpoint (`os._exit`, so nothing is cleaned up, as after SIGKILL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
