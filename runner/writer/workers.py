"""Spark's Python workers must be able to import the runner before the writer starts a job.

PySpark starts its workers with `SparkContext.pythonExec`, taken from `PYSPARK_PYTHON` when the
context is created and `python3` (whatever `PATH` finds) otherwise. A user who creates their own
SparkSession from a virtualenv's interpreter without activating it gets workers on the system
Python, which cannot import `runner` (or pyarrow), and the write would die inside a task with a Java
stack trace. So before anything is written the driver makes sure the workers are right:

- the workers already run this interpreter: nothing to do;
- local master (the workers run on this host): the writer's own tasks run with this interpreter
  (`sys.executable`), which has everything they import, for the duration of the write; the
  session's setting is restored after, so the user's other jobs are unaffected;
- a cluster: a probe task imports the writer on an executor; if that fails, refuse in one line,
  naming the interpreter and the fix, before anything is written;
- a Spark Connect session: the server chooses its workers' interpreter, so only the probe applies
  (it is a DataFrame job, as everything sent over Connect must be).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from runner.errors import RefusedError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
_PYTHON_ERROR = re.compile(r"^\s*(?:\w+\.)*(\w+(?:Error|Exception): .+)$", re.MULTILINE)


@contextlib.contextmanager
def writer_workers(spark: SparkSession) -> Iterator[None]:
    """Run the body with Spark Python workers that can import the writer (see the module docstring).

    Raises:
        RefusedError: the workers cannot import the runner and are not on this host.
    """
    if type(spark).__module__.startswith("pyspark.sql.connect"):  # no SparkContext over Connect
        problem = _probe(spark)
        if problem is not None:
            raise RefusedError(
                f"The Spark Connect server's Python workers cannot run the writer's tasks ({problem}).",
                hint="install hudi-runner for the interpreter the server's executors run "
                "(`spark.pyspark.python` on the server).",
            )
        yield
        return
    context = spark.sparkContext
    configured = str(context.pythonExec)
    if _is_this_interpreter(configured):
        yield
        return
    if str(context.master).startswith("local"):
        log.info("Running the writer's Spark tasks with %s (the session's workers run %r).",
                 sys.executable, configured)
        context.pythonExec = sys.executable
        try:
            yield
        finally:
            context.pythonExec = configured
        return
    problem = _probe(spark)
    if problem is not None:
        raise RefusedError(
            f"Spark's Python workers run {configured!r}, which cannot run the writer's tasks ({problem}).",
            hint=f"set PYSPARK_PYTHON to a Python with hudi-runner installed on every executor (this driver "
            f"runs {sys.executable}) before creating the SparkSession.",
        )
    yield


def probe_task(items: Iterable[object]) -> Iterator[str]:
    """Runs on a worker: importing the task module proves the writer and its dependencies are there."""
    import runner.writer.tasks  # noqa: F401

    for _ in items:
        yield sys.executable


def _probe(spark: SparkSession) -> str | None:
    """None if a worker can import the writer, else the worker's error in one line."""
    from runner.spark_jobs import run_tasks

    try:
        run_tasks(spark, [0], probe_task)
    except Exception as error:  # a Py4J error wrapping the worker's traceback
        text = str(error)
        found = _PYTHON_ERROR.findall(text)
        if "Cannot run program" in text:
            return "the program cannot be started"
        return found[-1].strip() if found else type(error).__name__
    return None


def _is_this_interpreter(program: str) -> bool:
    # Paths are compared without resolving symlinks: a virtualenv's `bin/python` is a link to the base
    # interpreter, and only the link's location makes it see the virtualenv's packages.
    found = program if os.path.isabs(program) else shutil.which(program)
    return found is not None and os.path.abspath(found) == os.path.abspath(sys.executable)
