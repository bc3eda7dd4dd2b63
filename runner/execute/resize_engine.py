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

The driver's pool is threads, or worker processes when pinned (`pool_for`: threads measured faster
on the benchmark machine, bench/README.md, "resize: a process pool"). Processes would give each
group's Python-level part (footers, the record-key footer, batch handling) a GIL of its own. They
come from a `forkserver`: a fresh interpreter that imports the rewrite and warms pyarrow up once
(`resize_forkserver`), then forks each worker from itself. A plain `fork` of the driver would copy
a process that may hold a py4j gateway, its threads and their locks (a lock held by another thread
at the fork stays held forever in the child); `spawn` would import pyarrow again in every worker.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import os
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from runner.declarations.model import SparkSettings
from runner.execute.deleter import is_local_master
from runner.hudi.files import write_token
from runner.orphans import exit_with

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runner.execute.resize_job import GroupRewrite, RewrittenFile
    from runner.storage import Storage

Engine = Literal["driver", "spark"]
Pool = Literal["threads", "processes"]
# Set by tests and benchmarks to run one engine whatever the master (the driver only on a local
# master); None chooses. Not a user setting.
PINNED: Engine | None = None
# Set by benchmarks to size the driver's pool; None: the session's cores.
THREADS: int | None = None
# Set by tests and benchmarks to run the driver's groups on worker processes (where `pool_for` allows
# them); None or "threads": threads, the measured default.
PINNED_POOL: Pool | None = None
# What the forkserver imports once, before it forks any worker: the rewrite and pyarrow, warmed up
# (`resize_forkserver`), and the main script when the driver was started from one (multiprocessing
# imports it in every worker otherwise, as `__mp_main__`: the `runner` console script, a benchmark;
# `python -m` skips it).
PRELOAD = ("__main__", "runner.execute.resize_forkserver")
# The stage id in the write tokens of files the driver writes (`<group>-<stage>-<attempt>`): no
# Spark stage ran them, and Spark numbers its stages from 0.
DRIVER_STAGE = 0

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """Which engine rewrites a job's groups, and why, in words for the log and the report."""

    engine: Engine
    reason: str
    threads: int = 1  # the driver's pool size when the engine is "driver"
    pool: Pool = "threads"
    pool_reason: str = ""

    def describe(self, groups: int) -> str:
        if self.engine == "spark":
            where = "Spark tasks"
        elif self.pool == "processes":
            where = f"{self.threads} worker process{'' if self.threads == 1 else 'es'} of the driver"
        else:
            where = f"{self.threads} thread{'' if self.threads == 1 else 's'} in the driver"
        why = f"{self.reason}; {self.pool_reason}" if self.pool_reason else self.reason
        return f"rewrote {groups} group{'' if groups == 1 else 's'} on {where}: {why}"

    def with_pool(self, storage: Storage) -> EngineChoice:
        """This choice with the driver's pool decided (`pool_for`); a Spark choice as it is."""
        if self.engine != "driver":
            return self
        pool, why = pool_for(self.threads, storage)
        return EngineChoice(self.engine, self.reason, self.threads, pool, why)


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
    return EngineChoice("driver", f"local master {master}: the driver uses the same cores without "
                        "Spark's task and Python-worker overhead", threads)


def pool_for(workers: int, storage: Storage) -> tuple[Pool, str]:
    """The driver's pool for `workers` groups at once on `storage`: threads, with the reason in
    words; processes only when pinned (`PINNED_POOL`) and the storage can be sent to them.

    The rule is a measurement (bench/README.md, "resize: a process pool"): on the 2-core benchmark
    machine, interleaved with threads, worker processes were slower where a `runner apply` meets
    them, a new interpreter per resize (threads took 0.77-0.87x their wall time for the rewrite,
    0.70x for binary copy, at the same CPU): the forkserver's start, its warm-up and the workers'
    fresh memory fall inside the job. Only in a driver that had already run a resize were they
    faster for the rewrite (threads 1.31x), and never for binary copy (0.57-0.86x), whose groups are short. They
    held 220-680 MiB more (each worker its own pyarrow, pandas and allocator). One worker never
    takes a process, which would only add its start.
    """
    if workers < 2:
        return "threads", "one group at a time runs on a thread"
    if PINNED_POOL != "processes":
        return "threads", "threads, as worker processes measured slower in a new process and hold more memory"
    try:
        pickle.dumps(storage)
    except Exception as error:  # any pickling failure means the same: the storage stays in this process
        return "threads", f"threads, as the storage cannot be sent to a process ({type(error).__name__})"
    return "processes", "a process per worker, pinned by runner.execute.resize_engine.PINNED_POOL"


@dataclass(slots=True)
class DriverRun:
    """What the last driver run measured, for benchmarks, which run one resize at a time (tables
    resized in parallel by `apply --threads` would mix their figures): CPU seconds spent in worker
    processes (their own clocks; a forkserver's workers are not this process's children to reap)."""

    worker_cpu: float = 0.0


LAST_RUN = DriverRun()


def run_in_driver(storage: Storage, instant: str, groups: Sequence[GroupRewrite], *, threads: int,
                  pool: Pool = "threads",
                  done: Callable[[GroupRewrite], None] = lambda _: None) -> list[RewrittenFile]:
    """Rewrite `groups` on `threads` threads or worker processes (`pool`), started in the order
    given; results in that order.

    Group `i` is written with the token `<i>-0-0`, as Spark's task `i` of a first attempt would be.
    A group is handed to a worker only when one is free, so the order given is the order started.
    `done` is called on this thread as each group finishes (progress). On the first failure no
    further group is started, the running ones finish (their files are reported by no one, so the
    resize's reconciliation deletes them), and the error is raised as the group raised it; a worker
    process that died raises `WorkerDied`.
    """
    LAST_RUN.worker_cpu = 0.0
    results: dict[int, RewrittenFile] = {}
    with _executor(pool, threads) as executor:
        running: dict[Future[tuple[list[RewrittenFile], float]], int] = {}
        queue = iter(enumerate(groups))
        for index, group in queue:
            running[executor.submit(_run_one, storage, instant, index, group)] = index
            if len(running) == threads:
                break
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                index = running.pop(future)
                error = future.exception()
                if isinstance(error, BrokenProcessPool):
                    raise WorkerDied(_died(groups, [index, *running.values()], error)) from error
                if error is not None:
                    raise error
                (result,), cpu = future.result()
                results[index] = result
                LAST_RUN.worker_cpu += cpu if pool == "processes" else 0.0
                done(groups[index])
                following = next(queue, None)
                if following is not None:
                    running[executor.submit(_run_one, storage, instant, *following)] = following[0]
    return [results[i] for i in range(len(groups))]


class WorkerDied(RuntimeError):
    """A worker process of the driver's pool ended without an answer (killed, out of memory, a
    crash in native code). Like any group's failure, the resize wraps it in `StepFailed`."""


def _died(groups: Sequence[GroupRewrite], indexes: Sequence[int], error: BaseException) -> str:
    which = ", ".join(f"{i} ({groups[i].partition or '(no partition)'}, file group {groups[i].file_id})"
                      for i in sorted(indexes))
    return (f"a worker process died while rewriting group(s) {which} (killed, out of memory or a crash "
            f"in native code: {error}); a partial file it leaves is deleted by the next run")


def _executor(pool: Pool, workers: int) -> Executor:
    if pool == "threads":
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="resize")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    # The forkserver keeps the environment it started with; each job's workers take the driver's as
    # it is when the job starts (a failpoint armed after the server started, credentials read from
    # the environment).
    return ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=_start_worker, initargs=(dict(os.environ), os.getpid()))


def _start_worker(environment: dict[str, str], driver: int) -> None:
    os.environ.clear()
    os.environ.update(environment)
    # A killed driver (SIGKILL, out of memory) leaves its workers behind: they and the forkserver
    # hold each other's pipes open, so neither sees it go. The attempt fence already keeps an orphan
    # from publishing; this keeps it from burning a core on a group nobody will commit.
    exit_with(driver)


def _run_one(storage: Storage, instant: str, index: int,
             group: GroupRewrite) -> tuple[list[RewrittenFile], float]:
    # The task function Spark runs, on a one-group slice, with the token its task `index` would
    # have; with the CPU it took on this process's clock (all of a worker process's, on a thread
    # one thread's share among others, so only a process's figure is kept).
    from runner.execute.resize_job import RewriteTask

    cpu = time.process_time()
    task = RewriteTask(storage, instant, functools.partial(write_token, index, DRIVER_STAGE, 0))
    results: Iterator[RewrittenFile] = task([group])
    return list(results), time.process_time() - cpu


def local_cores(master: str) -> int:
    """The threads of a local master URL (`local` 1, `local[4]` and `local[4,2]` 4, `local[*]` every
    CPU), never above this machine's CPUs."""
    inside = master.strip().removeprefix("local").strip("[]").split(",")[0]
    cpus = os.cpu_count() or 1
    return max(1, min(int(inside), cpus)) if inside.isdigit() else (cpus if inside == "*" else 1)


def _cores(spark: SparkSession) -> int:
    """A local master's thread count (`defaultParallelism`), never above this machine's CPUs."""
    return max(1, min(int(spark.sparkContext.defaultParallelism), os.cpu_count() or 1))
