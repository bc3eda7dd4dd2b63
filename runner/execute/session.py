"""One Spark session per run, sized for the tables it serves.

A table's `spark:` block holds two kinds of setting:
- session-level, `executor_memory`: executors are sized when Spark starts and serve every table
  of the run, so a run that starts Spark takes the largest value among the selected tables (and
  project.yml's own `spark.conf` `spark.executor.memory`, if larger) and says which table set it;
- per job, `resize_partitions`: the number of tasks of that table's rewrite job, applied to it
  alone (`runner.execute.resize`).

Only a session the runner starts itself can be sized: a Spark Connect endpoint, or a session that
is already running, keeps its executors, and the note says so. Sizing is pure (no Spark, no
storage); only `session_notes` looks at the session a run started.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

from runner.declarations.model import SparkSettings, TableDeclaration
from runner.declarations.sizes import spark_size_bytes

EXECUTOR_MEMORY = "spark.executor.memory"


@dataclass(frozen=True, slots=True)
class SessionSizing:
    """The settings to start the run's session with, and what the run says about them.

    Args:
        settings: the project's Spark settings with the chosen executor memory in `conf`.
        note: which table set the executor memory (None when no selected table asks for any).
        memory: the executor memory the session should run with.
    """

    settings: SparkSettings
    note: str | None = None
    memory: str | None = None


def size_session(project: SparkSettings, tables: Sequence[TableDeclaration]) -> SessionSizing:
    """The session for `tables`: executor memory is the largest any of them declares."""
    asking = [(t.name, t.spark.executor_memory) for t in tables if t.spark.executor_memory]
    if not asking:
        return SessionSizing(project)
    name, memory = max(asking, key=lambda item: (spark_size_bytes(item[1]), item[0]))
    largest = ", the largest among the selected tables" if len({v for _, v in asking}) > 1 else ""
    if project.remote:
        return SessionSizing(project, f"table {name} asks for {EXECUTOR_MEMORY}={memory}{largest}; not applied: "
                                      f"the Spark Connect endpoint {project.remote} sizes its own executors", memory)
    conf = dict(project.conf)
    declared = conf.get(EXECUTOR_MEMORY)
    if declared is not None and _bytes_or_zero(declared) >= spark_size_bytes(memory):
        return SessionSizing(project, f"{EXECUTOR_MEMORY}={declared} from project.yml's spark.conf, at least the "
                                      f"{memory} table {name} asks for{largest}", declared)
    conf[EXECUTOR_MEMORY] = memory
    settings = replace(project, conf=tuple(conf.items()))
    return SessionSizing(settings, f"{EXECUTOR_MEMORY}={memory}, set by table {name}{largest}", memory)


def session_notes(sizing: SessionSizing) -> list[str]:
    """What the run report says about the session's sizing, checked against the session itself.

    Nothing when no table asked for executor memory or the run never started Spark. When the
    session was already running (started before this run's settings), its real value is shown.
    """
    if sizing.note is None or sizing.memory is None:
        return []
    if sizing.settings.remote:
        return [sizing.note]
    if "pyspark.sql" not in sys.modules:  # Spark never started in this run: nothing was sized
        return []
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        return []
    actual = session.conf.get(EXECUTOR_MEMORY, None)
    if actual == sizing.memory:
        return [sizing.note]
    refused = (f"{sizing.note}; not applied: the Spark session was already running with "
               f"{EXECUTOR_MEMORY}={actual or 'Spark default (1g)'}")
    return [refused]


def _bytes_or_zero(text: str) -> int:
    """project.yml's own value, in bytes (Spark reads a bare number as MiB); 0 if unreadable."""
    text = text.strip()
    try:
        return int(text) * 1024**2 if text.isdigit() else spark_size_bytes(text)
    except ValueError:
        return 0
