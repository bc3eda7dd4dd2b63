"""The writer's commit carries Hudi's heartbeat, so a Hudi writer does not roll back a live write.

A Hudi writer with the LAZY failed-writes policy (several writers) rolls back every pending commit
whose `.hoodie/.heartbeat/<instant>` is missing or older than two intervals. Without one, a runner
write taking minutes would be rolled back, its files deleted, while it still wrote them. The
heartbeat lives for the commit only: a write that fails or completes deletes it, and one killed
(its heartbeat left fresh) is rolled back by the next write, which holds the runner lock the killed
one held; a Hudi writer's fresh heartbeat still refuses the rollback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError, StepFailed
from runner.failpoints import ENV as FAILPOINT_ENV
from runner.failpoints import EXIT_CODE as FAILPOINT_EXIT
from runner.storage import storage_for
from runner.writer import commit as commit_module
from runner.writer.heartbeat import RUNNER_MARK, CommitHeartbeat
from tests.writer.writer_helpers import oracle_rows

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("ts", pa.int64())])


def _rows(*ids: int, ts: int = 1) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "region": "eu", "ts": ts} for i in ids], SCHEMA)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: beats\n")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: warehouse/t\ntable:\n  type: COPY_ON_WRITE\n  record_key: [id]\n"
        "  partition_by: [region]\n  precombine_field: ts\n")
    runner.write(_rows(1), "t", operation="insert", project_dir=root)
    return root


def _beats(root: Path) -> dict[str, bytes]:
    folder = root / "warehouse" / "t" / ".hoodie" / ".heartbeat"
    return {p.name: p.read_bytes() for p in folder.iterdir()} if folder.exists() else {}


def test_a_commit_beats_while_it_is_written_and_its_heartbeat_goes_with_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, bytes]] = []
    complete = commit_module.complete

    def completing(*args: object, **kwargs: object) -> None:
        seen.append(_beats(root))  # what a Hudi writer listing pending commits would find now
        complete(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(commit_module, "complete", completing)
    result = runner.write(_rows(1, 2, ts=2), "t", project_dir=root)
    assert seen == [{result.instant: RUNNER_MARK}]
    assert _beats(root) == {}  # deleted once the commit is complete, as Hudi's `stop` does


def test_a_write_that_fails_deletes_its_heartbeat_and_the_next_write_rolls_it_back(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(commit_module, "complete", crash)
    with pytest.raises(StepFailed, match="disk full"):
        runner.write(_rows(2), "t", project_dir=root)
    monkeypatch.undo()
    assert _beats(root) == {}
    result = runner.write(_rows(3), "t", project_dir=root)
    assert len(result.rolled_back) == 1
    assert sorted(r["id"] for r in oracle_rows(root / "warehouse" / "t")) == [1, 3]


@pytest.mark.crash
def test_a_killed_writes_fresh_heartbeat_does_not_block_the_next_write(root: Path) -> None:
    script = textwrap.dedent(f"""
        import pyarrow as pa
        import runner
        rows = pa.Table.from_pylist([{{"id": 9, "region": "eu", "ts": 5}}],
                                    pa.schema([("id", pa.int64()), ("region", pa.string()), ("ts", pa.int64())]))
        runner.write(rows, "t", project_dir={str(root)!r})
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")} | {FAILPOINT_ENV: "after_files"}
    killed = subprocess.run([sys.executable, "-c", script], check=False, env=env, capture_output=True, text=True,
                            timeout=300)
    assert killed.returncode == FAILPOINT_EXIT, killed.stderr[-2000:]
    ((failed, mark),) = _beats(root).items()  # left behind, fresh: a Hudi writer would not touch the write
    assert mark == RUNNER_MARK
    result = runner.write(_rows(4), "t", project_dir=root)
    assert result.rolled_back == (failed,)
    assert _beats(root) == {}
    assert sorted(r["id"] for r in oracle_rows(root / "warehouse" / "t")) == [1, 4]


def test_a_hudi_writers_fresh_heartbeat_still_refuses_the_rollback(root: Path) -> None:
    table = root / "warehouse" / "t"
    pending = str(int(runner.write(_rows(2), "t", project_dir=root).instant) + 7)
    (table / ".hoodie" / f"{pending}.commit.requested").write_bytes(b"")
    (table / ".hoodie" / ".heartbeat").mkdir(exist_ok=True)
    (table / ".hoodie" / ".heartbeat" / pending).write_bytes(b"")  # Hudi's: empty, just touched
    with pytest.raises(RefusedError, match="Hudi heartbeat"):
        runner.write(_rows(3), "t", project_dir=root)
    assert (table / ".hoodie" / f"{pending}.commit.requested").exists()
    assert _beats(root) == {pending: b""}


def test_the_heartbeat_is_renewed_until_exit(tmp_path: Path) -> None:
    storage = storage_for(str(tmp_path))
    renewed = threading.Event()
    beat = CommitHeartbeat(storage, "20260101000000000", interval_s=0.01)
    original = beat._beat

    def counting() -> None:
        original()
        if beat.beats >= 3:
            renewed.set()

    beat._beat = counting  # type: ignore[method-assign]
    with beat:
        assert renewed.wait(60)
        beat.check()
    assert beat.beats >= 3
    assert not (tmp_path / ".hoodie" / ".heartbeat" / "20260101000000000").exists()


def test_a_heartbeat_deleted_under_the_write_fails_the_commit(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Hudi rollback of the commit deletes its heartbeat: the commit must not complete then. (The
    heartbeat renews only every 60 s, so nothing recreates it before the check.)"""
    table = root / "warehouse" / "t"
    metadata = commit_module.commit_metadata

    def rolled_back_meanwhile(*args: object, **kwargs: object) -> object:
        for path in (table / ".hoodie" / ".heartbeat").iterdir():
            path.unlink()
        return metadata(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(commit_module, "commit_metadata", rolled_back_meanwhile)
    before = oracle_rows(table)
    with pytest.raises(StepFailed, match=r"heartbeat of commit .* was deleted"):
        runner.write(_rows(2), "t", project_dir=root)
    assert oracle_rows(table) == before
    assert not list((table / ".hoodie").glob("*.commit"))[1:]  # only the first write completed


def test_a_heartbeat_that_cannot_be_deleted_leaves_the_completed_commit_completed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hudi reads the heartbeats of pending commits only, so a leftover one of a completed commit is
    harmless; failing the write after its commit completed would say it failed when it did not."""
    from runner.storage.local import LocalStorage

    delete = LocalStorage.delete

    def failing(self: LocalStorage, path: str) -> bool:
        if path.startswith(".hoodie/.heartbeat/"):
            raise OSError("permission denied")
        return delete(self, path)

    monkeypatch.setattr(LocalStorage, "delete", failing)
    result = runner.write(_rows(5), "t", project_dir=root)
    assert (root / "warehouse" / "t" / ".hoodie" / f"{result.instant}.commit").exists()
    assert sorted(r["id"] for r in oracle_rows(root / "warehouse" / "t")) == [1, 5]
