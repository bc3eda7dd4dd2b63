"""Python tasks as Spark jobs: the engine the executor's jobs (clean, resize) and the writer share.

Every job is plain DataFrame operations (`createDataFrame`, `repartitionByRange`, `mapInArrow`,
`collect`), the subset Spark Connect offers: no `SparkContext`, no RDDs. Work items travel to the
tasks pickled in a binary column, one row per slice, and results come back the same way, each
slice tagged with the executor that ran it (`executors_seen` collects them for a table's report).

Spark's public `mapInArrow` insists on pandas being installed although the Arrow path never uses it
(the check runs on the driver only). Without pandas, `map_in_arrow` builds the same plan node
through the UDF class Spark's wrapper uses.

pyspark is imported only inside the functions that need it, so importing this module is cheap on
the driver and on every Python worker.
"""

from __future__ import annotations

import itertools
import os
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

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


@contextmanager
def executors_seen() -> Iterator[set[str]]:
    """Collect the executor ids of every job run in this context (a table's apply)."""
    seen: set[str] = set()
    token = _executors.set(seen)
    try:
        yield seen
    finally:
        _executors.reset(token)


def run_tasks(spark: SparkSession, items: Sequence[T], task: Callable[[Iterable[T]], Iterator[R]],
              *, per_task: int = FILES_PER_TASK, max_tasks: int = MAX_TASKS) -> list[R]:
    """Run `task` over `items` split into Spark tasks; results come back to the driver in item order."""
    if not items:
        return []
    slices = max(1, min(-(-len(items) // per_task), max_tasks))
    size = -(-len(items) // slices)
    chunks = [list(items[start:start + size]) for start in range(0, len(items), size)]
    rows = [(index, DRIVER, pickle.dumps(chunk)) for index, chunk in enumerate(chunks)]
    # One slice per task. Round-robin repartitioning does not promise that: each input partition
    # starts dealing at a position seeded by its own id, so two one-row input partitions can land
    # in the same task (measured: 2 slices from `local[2]`'s 2 input partitions ran as 1 task).
    # Range partitioning on the distinct slice numbers gives each its own partition.
    frame = spark.createDataFrame(rows, _JOB_SCHEMA).repartitionByRange(len(chunks), "slice")
    collected = map_in_arrow(frame, _SliceRunner(task), _JOB_SCHEMA).collect()
    seen = _executors.get()
    results: list[R] = []
    for row in sorted(collected, key=lambda r: int(r["slice"])):
        if seen is not None:
            seen.add(str(row["executor"]))
        results.extend(pickle.loads(row["payload"]))
    return results


def executor_id() -> str:
    """The id of the Spark executor running this Python worker, or `driver`.

    The Python side of a task has no API for it, but a standalone worker starts each executor in
    its own working directory `<work dir>/<app id>/<executor id>`, which the Python workers inherit
    (under Spark Connect they move into a per-session folder below it). Elsewhere (local mode, the
    driver) this is `driver`.
    """
    parts = os.getcwd().split(os.sep)
    for part, following in itertools.pairwise(parts):
        if part.startswith("app-") and following.isdigit():
            return following
    return DRIVER


def map_in_arrow(df: DataFrame, func: object, schema: str) -> DataFrame:
    """`df.mapInArrow(func, schema)`, also when pandas is not installed (see the module docstring)."""
    try:
        return df.mapInArrow(func, schema)  # type: ignore[arg-type]
    except ImportError:
        pass
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql.udf import UserDefinedFunction
    from pyspark.util import PythonEvalType

    udf = UserDefinedFunction(func, returnType=schema, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)  # type: ignore[arg-type]
    column = udf(*[df[name] for name in df.columns])
    return SparkDataFrame(df._jdf.mapInArrow(column._jc, False, None), df.sparkSession)


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
