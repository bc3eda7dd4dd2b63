"""A live runner's lock is never taken over because its pid is not visible from here.

The lock is taken over at once when its holder ran "on this host" and its pid no longer exists.
But a host name does not name a process table: two containers sharing the host's network (docker
`--network host`, Kubernetes `hostNetwork: true`) share its host name and each has its own pid
namespace. A runner in one then sees the other's live holder as a dead pid, takes its lock over,
and both apply to the same table at once. Only a holder in the same pid namespace of the same boot
can be judged by its pid; any other by its heartbeat alone.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner.storage.lock import LOCK_PATH, LockHolder, process_namespace
from runner.testing.tables import TableBuilder
from tests.safety.conftest import apply_json, digest, project_for


@pytest.fixture(scope="module")
def invisible_pid() -> int:
    """A pid no process has here: a reaped child's (in another namespace it may be a live runner)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _table_with_work(tmp_path: Path) -> tuple[Path, Path]:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    builder.commit(updates={"p=a": 1})  # one old version for the clean to delete
    return table, project_for(table, tmp_path / "project")


def _plant(table: Path, holder: LockHolder) -> bytes:
    lock = table / LOCK_PATH
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_bytes(holder.to_json_bytes())
    return lock.read_bytes()


def test_a_live_holder_in_another_pid_namespace_keeps_its_lock(invisible_pid, tmp_path, capsys):
    table, root = _table_with_work(tmp_path)
    now = datetime.now(UTC)
    other = LockHolder("runner apply", socket.gethostname(), invisible_pid, now, "theirs", now,
                       pid_namespace="pid:[4026532999]@another-container")
    planted = _plant(table, other)
    before = digest(table)

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 1, report
    assert "locked by another runner" in report["tables"][0]["error"]["message"]
    assert (table / LOCK_PATH).read_bytes() == planted
    assert digest(table) == before


def test_a_lock_that_names_no_namespace_is_judged_by_its_heartbeat(invisible_pid, tmp_path, capsys):
    """A lock written by a runner that did not record its namespace: its pid proves nothing either."""
    table, root = _table_with_work(tmp_path)
    now = datetime.now(UTC)
    planted = _plant(table, LockHolder("runner apply", socket.gethostname(), invisible_pid, now, "theirs", now))
    raw = json.loads(planted)
    raw.pop("pid_namespace", None)
    (table / LOCK_PATH).write_text(json.dumps(raw))
    before = digest(table)

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 1, report
    assert digest(table) == before


def test_a_dead_holder_in_this_namespace_is_still_taken_over(invisible_pid, tmp_path, capsys):
    table, root = _table_with_work(tmp_path)
    now = datetime.now(UTC)
    _plant(table, LockHolder("runner apply", socket.gethostname(), invisible_pid, now, "theirs", now,
                             pid_namespace=process_namespace()))

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 1
