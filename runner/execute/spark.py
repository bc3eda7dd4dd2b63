"""The only module that imports pyspark, and only when a job actually runs.

Deletes and rewrites run as Spark jobs so that a cluster (`spark.master` in project.yml) or a Spark
Connect endpoint (`spark.remote`) spreads them over executors; locally they run on `local[*]`.
Tasks receive a picklable `Storage` and do their I/O through it, so the same job works on local
disk and on S3.

Every job is plain DataFrame operations (`createDataFrame`, `repartition`, `mapInArrow`,
`collect`), the subset Spark Connect offers: no `SparkContext`, no RDDs. Work items travel to the
tasks pickled in a binary column, one row per slice, and results come back the same way, each
slice tagged with the executor that ran it.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from runner.declarations.model import SparkSettings
from runner.storage import DeleteResult, Storage

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

T = TypeVar("T")
R = TypeVar("R")

# Files per Spark task: large enough to amortise task overhead, small enough to spread work.
FILES_PER_TASK = 500
# At most this many tasks per job; Spark queues them on the executors' free slots.
MAX_TASKS = 256
DRIVER = "driver"
_JOB_SCHEMA = "slice int, executor string, payload binary"

# The executor ids that ran tasks for the current table, when its apply is collecting them; a
# context variable so that tables applied in parallel threads each see only their own jobs.
_executors: ContextVar[set[str] | None] = ContextVar("runner_executors", default=None)


__all__ = ["DeleteResult", "delete_files", "executor_id", "executors_seen", "get_spark", "run_tasks"]


def get_spark(settings: SparkSettings) -> SparkSession:
    """A Spark Connect session for `settings.remote`; else the active session if there is one
    (tests share one), else a new one from the settings."""
    from pyspark.sql import SparkSession

    if settings.remote:
        remote = SparkSession.builder.remote(settings.remote).appName("hudi-runner")
        for key, value in settings.conf:
            remote = remote.config(key, value)
        return remote.getOrCreate()
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    _point_workers_at_this_interpreter(settings.master)
    builder = (
        SparkSession.builder.appName("hudi-runner")
        .master(settings.master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in settings.conf:
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextmanager
def executors_seen() -> Iterator[set[str]]:
    """Collect the executor ids of every job run in this context (a table's apply)."""
    seen: set[str] = set()
    token = _executors.set(seen)
    try:
        yield seen
    finally:
        _executors.reset(token)


def _point_workers_at_this_interpreter(master: str) -> None:
    """Make the new session's Python workers run an interpreter that can import the runner.

    PySpark reads `PYSPARK_PYTHON` once, when the context starts, and falls back to `python3` from
    PATH, which outside an activated virtualenv cannot import the runner. On a local master the
    workers run on this host, so this interpreter is right whatever the environment says; on a
    cluster an explicit `PYSPARK_PYTHON` (the executors' interpreter) is respected.
    """
    if master.startswith("local"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def run_tasks(spark: SparkSession, items: Sequence[T], task: Callable[[Iterable[T]], Iterator[R]],
              *, per_task: int = FILES_PER_TASK) -> list[R]:
    """Run `task` over `items` split into Spark tasks; results come back to the driver in item order."""
    if not items:
        return []
    from runner.writer.tasks import map_in_arrow

    slices = max(1, min(-(-len(items) // per_task), MAX_TASKS))
    size = -(-len(items) // slices)
    chunks = [list(items[start:start + size]) for start in range(0, len(items), size)]
    rows = [(index, DRIVER, pickle.dumps(chunk)) for index, chunk in enumerate(chunks)]
    # A local relation is one partition; round-robin repartitioning deals its rows out one per task.
    frame = spark.createDataFrame(rows, _JOB_SCHEMA).repartition(len(chunks))
    collected = map_in_arrow(frame, _SliceRunner(task), _JOB_SCHEMA).collect()
    seen = _executors.get()
    results: list[R] = []
    for row in sorted(collected, key=lambda r: int(r["slice"])):
        if seen is not None:
            seen.add(str(row["executor"]))
        results.extend(pickle.loads(row["payload"]))
    return results


def delete_files(spark: SparkSession, storage: Storage, paths: Sequence[str]) -> list[DeleteResult]:
    """Delete files (relative to the storage root) as one Spark job.

    The paths are sorted first, so each task receives whole runs of one partition folder and
    `Storage.delete_many` checks each folder once (and on S3 fills its 1,000-key batches).
    """
    return run_tasks(spark, sorted(paths), _Deleter(storage))


def executor_id() -> str:
    """The id of the Spark executor running this Python worker, or `driver`.

    The Python side of a task has no API for it, but a standalone worker starts each executor in
    its own working directory `<work dir>/<app id>/<executor id>`, which the Python workers inherit
    (under Spark Connect they move into a per-session folder below it). Elsewhere (local mode, the
    driver) this is `driver`.
    """
    parts = os.getcwd().split(os.sep)
    for part, following in zip(parts, parts[1:]):
        if part.startswith("app-") and following.isdigit():
            return following
    return DRIVER


class _SliceRunner:
    """Picklable `mapInArrow` function: runs the task on each slice, results pickled back."""

    def __init__(self, task: Callable[[Iterable[Any]], Iterator[Any]]) -> None:
        self.task = task

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        executor = executor_id()
        for batch in batches:
            columns = batch.to_pydict()
            for index, payload in zip(columns["slice"], columns["payload"], strict=True):
                results = list(self.task(pickle.loads(payload)))
                yield pa.RecordBatch.from_pydict(
                    {"slice": [index], "executor": [executor], "payload": [pickle.dumps(results)]},
                    schema=pa.schema([("slice", pa.int32()), ("executor", pa.string()), ("payload", pa.binary())]),
                )


class _Deleter:
    """Picklable task: deletes its share of the paths with `Storage.delete_many` (a thread pool
    locally, batched requests on S3); a missing file counts as already deleted."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def __call__(self, paths: Iterable[str]) -> Iterator[DeleteResult]:
        share = list(paths)
        try:
            yield from self.storage.delete_many(share)
        except Exception as error:  # reported per file; the clean records them as failed
            reason = f"{type(error).__name__}: {error}"
            yield from (DeleteResult(path, False, reason) for path in share)
