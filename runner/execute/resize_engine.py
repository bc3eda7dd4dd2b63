"""Where a resize's groups are rewritten: on a thread pool in the driver, or as Spark tasks.

On a local master the driver, the JVM and Spark's Python workers share one machine, so Spark buys
no extra cores; it adds its task scheduling, the pickling of groups and results, and Python
workers that start and import pyarrow before the first group. pyarrow releases the GIL while it
decodes, encodes and compresses, so threads in the driver keep the same cores busy (measured in
bench/README.md, "resize: a driver engine"). Memory does not grow with the job: each group
streams through bounded row groups (`runner.execute.resize_job`), so a thread holds what a Spark
task would, and the job's size does not decide the engine. A cluster master or a Spark Connect
session always uses Spark: the table may be reachable only from the cluster, and its executors
spread the groups over machines.

Both engines run the same task function (`RewriteTask`) on each group, largest group first, and
publish each file the same way (`Storage.create_new`), so crashes leave the same traces.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from runner.declarations.model import SparkSettings
from runner.execute.deleter import is_local_master
from runner.hudi.files import write_token

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runner.execute.resize_job import GroupRewrite, RewrittenFile
    from runner.storage import Storage

Engine = Literal["driver", "spark"]
# Set by tests and benchmarks to run one engine whatever the master (the driver only on a local
# master); None chooses. Not a user setting.
PINNED: Engine | None = None
# Set by benchmarks to size the driver's pool; None: the session's cores.
THREADS: int | None = None
# The stage id in the write tokens of files the driver writes (`<group>-<stage>-<attempt>`): no
# Spark stage ran them, and Spark numbers its stages from 0.
DRIVER_STAGE = 0

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """Which engine rewrites a job's groups, and why, in words for the log and the report."""

    engine: Engine
    reason: str
    threads: int = 1  # the driver's pool when the engine is "driver"

    def describe(self, groups: int) -> str:
        where = (f"{self.threads} thread{'' if self.threads == 1 else 's'} in the driver"
                 if self.engine == "driver" else "Spark tasks")
        return f"rewrote {groups} group{'' if groups == 1 else 's'} on {where}: {self.reason}"


@dataclass(frozen=True, slots=True)
class SparkOnDemand:
    """A session that is started only if the rewrite runs on Spark: until then the settings it
    would be started with decide the engine, so a local master's resize starts no JVM.

    Args:
        settings: the project's Spark settings (`remote` for Spark Connect, else `master`).
        start: returns the session (started, or the one already running).
    """

    settings: SparkSettings
    start: Callable[[], SparkSession]


def rewrites_on_spark(settings: SparkSettings) -> bool:
    """Whether a resize under `settings` needs Spark (a cluster or Spark Connect), so a run may
    start it up front; on a local master the driver rewrites."""
    return engine_for(None if settings.remote else settings.master,
                      cores=1, groups=1).engine == "spark"


def session_of(spark: SparkSession | SparkOnDemand) -> SparkSession:
    """The session itself, started now if it was on demand."""
    return spark.start() if isinstance(spark, SparkOnDemand) else spark


def choose_engine(spark: SparkSession | SparkOnDemand, *, groups: int, max_tasks: int | None = None) -> EngineChoice:
    """The engine for a job on `spark`'s master (`engine_for`), with its cores: a running session's
    `defaultParallelism`, or for one on demand the thread count of its local master."""
    if isinstance(spark, SparkOnDemand):
        settings = spark.settings
        if settings.remote:
            return engine_for(None, cores=1, groups=groups, max_tasks=max_tasks)
        return engine_for(settings.master, cores=local_cores(settings.master), groups=groups, max_tasks=max_tasks)
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return engine_for(None, cores=1, groups=groups, max_tasks=max_tasks)
    return engine_for(str(spark.sparkContext.master), cores=_cores(spark), groups=groups, max_tasks=max_tasks)


def engine_for(master: str | None, *, cores: int, groups: int, max_tasks: int | None = None) -> EngineChoice:
    """The driver on a local master, Spark on a cluster or over Spark Connect.

    Args:
        master: `spark.master`; None for a Spark Connect session.
        cores: the local master's cores (the pool never has more threads).
        groups: the job's groups (nor more threads than groups).
        max_tasks: the table's `spark.resize_partitions`, which bounds the pool as it bounds tasks.
    """
    if master is None:
        return EngineChoice("spark", "a Spark Connect session, whose cluster does the rewrite")
    if not is_local_master(master):
        return EngineChoice("spark", f"spark.master is {master}, so the cluster's executors rewrite")
    if PINNED == "spark":
        return EngineChoice("spark", "pinned by runner.execute.resize_engine.PINNED")
    threads = max(1, min(THREADS or cores, groups, max_tasks or groups))
    return EngineChoice("driver", f"local master {master}: threads in the driver use the same cores "
                        "without Spark's task and Python-worker overhead", threads)


def run_in_driver(storage: Storage, instant: str, groups: Sequence[GroupRewrite], *, threads: int,
                  done: Callable[[GroupRewrite], None] = lambda _: None) -> list[RewrittenFile]:
    """Rewrite `groups` on `threads` threads, started in the order given; results in that order.

    Group `i` is written with the token `<i>-0-0`, as Spark's task `i` of a first attempt would be.
    `done` is called on this thread as each group finishes (progress). On the first failure the
    groups not yet started are cancelled, the running ones finish (their files are reported by no
    one, so the resize's reconciliation deletes them), and the error is raised.
    """
    results: dict[int, RewrittenFile] = {}
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="resize") as pool:
        futures: dict[Future[list[RewrittenFile]], int] = {
            pool.submit(_run_one, storage, instant, index, group): index for index, group in enumerate(groups)
        }
        pending: set[Future[list[RewrittenFile]]] = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in finished:
                error = future.exception()
                if error is not None:
                    for other in pending:
                        other.cancel()
                    raise error
                (result,) = future.result()
                results[futures[future]] = result
                done(groups[futures[future]])
    return [results[i] for i in range(len(groups))]


def _run_one(storage: Storage, instant: str, index: int, group: GroupRewrite) -> list[RewrittenFile]:
    # The task function Spark runs, on a one-group slice, with the token its task `index` would have.
    from runner.execute.resize_job import RewriteTask

    task = RewriteTask(storage, instant, functools.partial(write_token, index, DRIVER_STAGE, 0))
    results: Iterator[RewrittenFile] = task([group])
    return list(results)


def local_cores(master: str) -> int:
    """The threads of a local master URL (`local` 1, `local[4]` and `local[4,2]` 4, `local[*]` every
    CPU), never above this machine's CPUs."""
    inside = master.strip().removeprefix("local").strip("[]").split(",")[0]
    cpus = os.cpu_count() or 1
    return max(1, min(int(inside), cpus)) if inside.isdigit() else (cpus if inside == "*" else 1)


def _cores(spark: SparkSession) -> int:
    """A local master's thread count (`defaultParallelism`), never above this machine's CPUs."""
    return max(1, min(int(spark.sparkContext.defaultParallelism), os.cpu_count() or 1))
