"""A small Spark-engine upsert on a session of Spark's default 200 shuffle partitions: tasks, wall, CPU.

Each rep creates a table of `--rows` records in 3 partitions (an insert, not timed), then upserts
`--rows` more, half of them updates, with the Spark engine pinned (`runner.writer.local.PINNED`),
on a `local[2]` session whose `spark.sql.shuffle.partitions` is `--shuffle-partitions`. Per upsert
it prints the Spark tasks it completed (`statusTracker`, under a job group), the wall time, and the
CPU time of the whole process tree (this interpreter, Spark's JVM and its Python workers, read
from `/proc`), then the medians. The first rep warms up the JVM and is not counted.

An A/B of two versions of the code: run it alternately with `PYTHONPATH` set to a copy of each
tree (`git archive <commit> runner schemas | tar -x -C DIR`), the order flipped every pair.

Usage (from the repository root):
    .venv/bin/python bench/bench_writer_shuffle.py --rows 30 --reps 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_writer import TABLE

import runner
from runner.declarations.model import SparkSettings
from runner.execute.spark import get_spark
from runner.writer import local

SCHEMA = "id long, region string, name string, ts long"
TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu() -> float:
    """CPU seconds of this process and every live descendant, including their reaped children."""
    children: dict[int, list[tuple[int, list[str]]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append((int(entry), fields))
    total, pending = 0.0, [os.getpid()]
    while pending:
        for pid, fields in children.get(pending.pop(), []):
            total += sum(int(x) for x in fields[11:15]) / TICKS  # utime, stime, cutime, cstime
            pending.append(pid)
    own = os.times()
    return total + own.user + own.system


def records(ids: range, name: str, ts: int) -> list[tuple[Any, ...]]:
    return [(i, ("eu", "us", "ap")[i % 3], f"{name}{i}", ts) for i in ids]


def tasks_of(spark: Any, group: str) -> int:
    tracker = spark.sparkContext.statusTracker()
    stages = {s for j in tracker.getJobIdsForGroup(group) if (job := tracker.getJobInfo(j)) for s in job.stageIds}
    return sum(info.numCompletedTasks for s in stages if (info := tracker.getStageInfo(s)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=30, help="records per write (default 30)")
    parser.add_argument("--reps", type=int, default=5, help="counted upserts (default 5)")
    parser.add_argument("--shuffle-partitions", type=int, default=200, help="the session's (default 200)")
    args = parser.parse_args()
    spark = get_spark(SparkSettings(master="local[2]",
                                    conf=(("spark.sql.shuffle.partitions", str(args.shuffle_partitions)),)))
    local.PINNED = "spark"
    work = Path(tempfile.mkdtemp(prefix="bench_writer_shuffle_"))
    runs: dict[str, list[float]] = {"tasks": [], "wall s": [], "CPU s": []}
    try:
        for rep in range(args.reps + 1):
            root = work / f"p{rep}"
            (root / "tables").mkdir(parents=True)
            (root / "project.yml").write_text("name: bench\n")
            (root / "tables" / "t.yml").write_text(TABLE.format(name="t"))
            first = spark.createDataFrame(records(range(args.rows), "a", 1), SCHEMA)
            runner.write(first, "t", operation="insert", project_dir=root)
            upsert = spark.createDataFrame(records(range(args.rows // 2, args.rows // 2 + args.rows), "b", 2), SCHEMA)
            group = f"upsert-{rep}"
            spark.sparkContext.setJobGroup(group, "counted by the bench")
            cpu, wall = tree_cpu(), time.perf_counter()
            runner.write(upsert, "t", project_dir=root)
            wall, cpu = time.perf_counter() - wall, tree_cpu() - cpu
            spark.sparkContext.setJobGroup(None, None)  # type: ignore[arg-type]
            if not rep:
                continue
            measured = {"tasks": float(tasks_of(spark, group)), "wall s": wall, "CPU s": cpu}
            for name, value in measured.items():
                runs[name].append(value)
            print(f"upsert {rep}: " + ", ".join(f"{k} {v:.2f}" for k, v in measured.items()))
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"runner {runner.__file__}, {args.shuffle_partitions} shuffle partitions, load {load}; medians: "
              + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in runs.items()))
    finally:
        local.PINNED = None
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
