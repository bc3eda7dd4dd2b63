"""A worker of a dead resize attempt that publishes late must not become part of the next attempt's
completed instant: the next apply finishes the resize under the same instant time, so a file the
dead attempt's worker publishes after the next attempt's reconciliation would be read as a live
file group once the instant completes (its rows twice).

The dead attempt's worker is simulated by a thread running the resize's task function with the
storage that attempt gave its workers, paused (while reading its inputs, or while writing its file)
until the next apply is done.
"""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import runner.execute.resize_job as resize_job
from runner.declarations.model import FileSizing, SparkSettings
from runner.errors import StepFailed
from runner.execute.attempt_fence import start_attempt, token_path
from runner.execute.resize import ResizeRunner, finish_pending_resize
from runner.execute.resize_engine import SparkOnDemand
from runner.execute.resize_job import GroupRewrite, RewriteTask
from runner.execute.resize_plan import groups_of_step
from runner.hudi.instant import Action
from runner.hudi.state import read_table_metadata, read_table_state
from runner.plan.sizing import plan_sizing
from runner.storage import Storage, storage_for
from runner.testing.tables import TableBuilder

MIB = 1024 * 1024


def _never() -> Any:
    raise AssertionError("a resize on a local master must not start Spark")


def _rows(table: Path) -> list[dict[str, Any]]:
    from hudi import HudiTable

    rows = pa.Table.from_batches(HudiTable(str(table)).read()).to_pylist()
    return sorted(({k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in rows), key=repr)


@pytest.mark.parametrize("where", ["reading", "writing"])
@pytest.mark.parametrize("version", [6, 8])
def test_a_late_worker_of_a_dead_attempt_never_publishes(version, where, tmp_path, monkeypatch):
    table = tmp_path / "t"
    TableBuilder(table, name="t", partitions=["p=a"], version=version).commit(writes=3)
    before = _rows(table)
    storage = storage_for(str(table))

    time, finished = _a_dead_attempt_outlived(storage, where, monkeypatch)

    written = sorted(p.name for p in (table / "p=a").iterdir() if time in p.name)
    assert written == [f.rsplit("/", 1)[-1] for f in finished]  # nothing but the reported file
    assert _rows(table) == before  # every row once
    assert not (table / token_path(time)).exists()


@pytest.mark.s3
def test_on_s3_a_worker_mid_upload_never_publishes(tmp_path, s3_server, s3_bucket, monkeypatch):
    """On S3 an upload in progress is not listed, so no reconciliation can see it: only the fence."""
    from tests.s3 import upload_tree

    TableBuilder(tmp_path / "t", name="t", partitions=["p=a"]).commit(writes=3)
    upload_tree(tmp_path / "t", s3_bucket, "t", s3_server)
    storage = storage_for(f"s3://{s3_bucket}/t", options=s3_server.options())

    time, finished = _a_dead_attempt_outlived(storage, "writing", monkeypatch)

    written = sorted(i.path for i in storage.list_dir("p=a") if time in i.path)
    assert written == sorted(finished)
    assert storage.stat(token_path(time)) is None


def _a_dead_attempt_outlived(storage: Storage, where: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    """Schedule a resize, start a worker of an attempt that then dies, let the next apply finish the
    resize, then let the worker go on; returns the instant and the files the resize reported."""
    state = read_table_state(storage)
    step = plan_sizing(FileSizing(max_file_size=10 * MIB, small_file_limit=5 * MIB), state)
    assert step is not None and len(step.groups) == 1
    spark = SparkOnDemand(SparkSettings(master="local[1]"), _never)
    clock = lambda: datetime.now(UTC)  # noqa: E731
    pending, _ = ResizeRunner(storage, state.metadata, spark=spark, clock=clock).schedule(step)
    time = str(pending.time)

    # The dead attempt: it made itself the current one and handed its worker the group.
    dead = start_attempt(storage, time)
    (group,) = groups_of_step(step)
    paused, resume = threading.Event(), threading.Event()

    def pause_the_zombie() -> None:
        if threading.current_thread().name == "zombie" and not paused.is_set():
            paused.set()
            resume.wait(60)

    if where == "reading":  # before its temp file exists: the reconciliation cannot see it
        real_read = resize_job._read_source
        monkeypatch.setattr(resize_job, "_read_source", lambda *a: (pause_the_zombie(), real_read(*a))[1])
    else:  # writing (a local temp file the reconciliation deletes, an S3 upload nobody lists)
        real_failpoint = resize_job.failpoint
        monkeypatch.setattr(resize_job, "failpoint", lambda name: (real_failpoint(name), pause_the_zombie()))
    outcome: dict[str, Any] = {}

    def zombie() -> None:
        task = RewriteTask(dead, time, lambda: "0-0-0")
        try:
            outcome["files"] = list(task([GroupRewrite(group.partition, f"{uuid.uuid4()}-0", group.inputs)]))
        except StepFailed as error:
            outcome["error"] = error

    worker = threading.Thread(target=zombie, name="zombie")
    worker.start()
    assert paused.wait(60)  # its file not published yet

    finished = finish_pending_resize(storage, read_table_metadata(storage), spark=spark, clock=clock)
    assert finished is not None and finished.instants == (time,)
    resume.set()
    worker.join(60)

    assert "files" not in outcome and "no longer the current one" in str(outcome["error"])
    assert not read_table_metadata(storage).timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING)
    return time, list(finished.output_files)
