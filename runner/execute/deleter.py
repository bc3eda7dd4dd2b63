"""How a clean's deletes run: on a thread pool in this process, or as a Spark job.

On a local Spark master the JVM, the executors and this process share one machine, so Spark adds
its start-up and its task and Python-worker overhead and buys no extra cores. Measured side by
side (bench/README.md, "clean"; 80,200 deletes on 2 vCPUs): the in-process pool took 4.8 s and
16.1 s in two runs, the same deletes as a Spark job on an already warm `local[2]` session 11.6 s
and 50.3 s, so about 2.5-3x longer before counting Spark's start-up (34 s on that loaded machine).
Per file the Spark job only adds cost, so no job size makes it the faster choice locally; the
size threshold `THREADS_UP_TO` therefore only caps what one process takes on (every path, its
result and the clean metadata are held in memory, about 1 KiB per file), and it is set at
2,000,000 files, five times the largest job measured (401,000). With a cluster master (anything
but `local`/`local[...]`) the deletes always run on Spark: the table's storage may be reachable
only from the cluster, and the executors spread the work over machines.

Either way each delete task uses `Storage.delete_many`: one safety check per folder and a thread
pool locally, batched DeleteObjects requests on S3.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from runner.allocation import collecting
from runner.declarations.model import SparkSettings
from runner.storage import DEFAULT_DELETE_THREADS, DeleteResult, Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Files up to which a local master deletes on the in-process thread pool instead of starting Spark:
# the pool was faster at every size measured, so this caps one process's memory (see above).
THREADS_UP_TO = 2_000_000

Engine = Literal["threads", "spark"]
_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?")


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """Which engine deletes a batch of files, and why (shown in the run report)."""

    engine: Engine
    files: int
    reason: str
    threads: int = DEFAULT_DELETE_THREADS  # the pool's size when the engine is "threads"

    def describe(self) -> str:
        where = f"{self.threads} threads in-process" if self.engine == "threads" else "a Spark job"
        return f"deleted {self.files:,} file{'' if self.files == 1 else 's'} on {where}: {self.reason}"


def is_local_master(master: str) -> bool:
    """`local`, `local[4]`, `local[*]`, `local[4,2]`: Spark in this machine's single JVM."""
    return _LOCAL_MASTER.fullmatch(master.strip()) is not None


def choose_engine(files: int, master: str, *, threads_up_to: int = THREADS_UP_TO,
                  threads: int = DEFAULT_DELETE_THREADS) -> EngineChoice:
    """Threads for a local master up to `threads_up_to` files; Spark on a cluster or beyond that.
    `threads`: the size of the storage's delete pool (`delete_threads`), for the report."""
    if not is_local_master(master):
        return EngineChoice("spark", files, f"spark.master is {master}, so the cluster does the deletes")
    if files <= threads_up_to:
        return EngineChoice(
            "threads", files,
            f"local master and at most {threads_up_to:,} files, which a thread pool finishes before "
            "Spark would have started",
            threads,
        )
    return EngineChoice("spark", files, f"more than {threads_up_to:,} files, too many for one process")


def delete_threads(storage: Storage) -> int:
    """How many threads `storage.delete_many` runs by default: a store may size its own pool (local
    disk does, by measurement); otherwise the shared default."""
    threads = getattr(storage, "delete_threads", DEFAULT_DELETE_THREADS)
    return threads if isinstance(threads, int) else DEFAULT_DELETE_THREADS


class Deleter:
    """The deleter `runner apply` hands to the cleaner; it records each choice in `notes`.

    Args:
        settings: the project's Spark settings (the master decides between threads and Spark).
        spark: returns the session, called only when Spark is chosen (so no JVM starts otherwise).
        threads_up_to: see `THREADS_UP_TO`.
    """

    def __init__(self, settings: SparkSettings, spark: Callable[[], SparkSession] | None = None, *,
                 threads_up_to: int = THREADS_UP_TO) -> None:
        self._settings = settings
        self._spark = spark
        self._threads_up_to = threads_up_to
        self.notes: list[str] = []

    def __call__(self, storage: Storage, paths: Sequence[str]) -> list[DeleteResult]:
        if not paths:
            return []
        choice = choose_engine(len(paths), self._settings.master, threads_up_to=self._threads_up_to,
                               threads=delete_threads(storage))
        self.notes.append(choice.describe())
        return storage.delete_many(paths) if choice.engine == "threads" else self._spark_job(storage, paths)

    def _spark_job(self, storage: Storage, paths: Sequence[str]) -> list[DeleteResult]:
        from runner.execute.spark import delete_files, get_spark

        with collecting():  # a job that may run for minutes (see runner.execute.apply.apply_table)
            session = self._spark() if self._spark is not None else get_spark(self._settings)
            return delete_files(session, storage, paths)
