"""The executor's Spark side: the session a run uses, and deletes as a Spark job.

Deletes and rewrites run as Spark jobs so that a cluster (`spark.master` in project.yml) or a Spark
Connect endpoint (`spark.remote`) spreads them over executors; locally they run on `local[*]`.
Tasks receive a picklable `Storage` and do their I/O through it, so the same job works on local
disk and on S3. How a job is run (`run_tasks`) lives in `runner.spark_jobs`, shared with the
writer; pyspark is imported only when a session is made.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from runner.declarations.model import SparkSettings
from runner.spark_jobs import run_tasks
from runner.storage import DeleteResult, Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["delete_files", "get_spark"]


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


def delete_files(spark: SparkSession, storage: Storage, paths: Sequence[str]) -> list[DeleteResult]:
    """Delete files (relative to the storage root) as one Spark job.

    The paths are sorted first, so each task receives whole runs of one partition folder and
    `Storage.delete_many` checks each folder once (and on S3 fills its 1,000-key batches).
    """
    return run_tasks(spark, sorted(paths), _Deleter(storage))


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
