"""A timeline of one Arrow-input upsert: when each step and each file write ran, on which thread.

Builds the table of `bench_writer_phases.py` (8 partitions, `--rows` records bulk-inserted, then
an upsert of `--rows` more, half updates), then upserts the same next `--rows` records into
`--reps` fresh copies of it. Every call of the writer's steps listed in `STEPS` is recorded with
its thread, start and end (milliseconds from the upsert's start) and the CPU time of its thread;
the steps that hand work to other threads (`write_targets`, `index_table`) also show the whole
process's CPU over their span. The walls of all upserts are printed, then the timeline of the last.

Where the phase bench sums each phase's CPU, this shows what ran at the same time: the serial
stretch before the first file write, how many writers were busy, and the file that ended last.

Usage (from the repository root):
    .venv/bin/python bench/bench_writer_timeline.py --rows 100000 --reps 6 [--virtual-keys] [--threads 1]
"""

from __future__ import annotations

import argparse
import functools
import importlib
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_writer_phases import inline_writes, loaded_table, rows

import runner
from runner.writer.options import CODEC_KEY

# (module, attribute): the steps recorded; "Class.method" for a method. A step missing from a
# version of the code is skipped.
STEPS = (
    ("runner.writer.write", "open_table"),
    ("runner.writer.write", "read_table_metadata"),
    ("runner.writer.write", "rollback_failed_writes"),
    ("runner.writer.arrow_input", "keyed"),
    ("runner.writer.commit", "begin"),
    ("runner.writer.dedup", "deduplicated"),
    ("runner.writer.local", "partition_counts"),
    ("runner.writer.write", "_Job._touched"),
    ("runner.writer.write", "index_table"),
    ("runner.writer.index", "_read"),
    ("runner.writer.local", "tag"),
    ("runner.writer.local", "target_counts"),
    ("runner.writer.commit", "mark_inflight"),
    ("runner.writer.local", "route_inserts"),
    ("runner.writer.local", "write_targets"),
    ("runner.writer.local", "_runs_of"),
    ("runner.writer.tasks", "WriteTask.on_driver"),
    ("runner.writer.files", "_OpenFile.close"),
    ("runner.writer.commit", "complete"),
)
# Steps whose work runs in other threads: the process's CPU over their span is shown too.
POOLED = {"index_table", "write_targets"}

Event = tuple[str, str, float, float, float]  # thread, label, start, end, thread CPU


def record(events: list[Event], module_name: str, attribute: str) -> None:
    owner: Any = importlib.import_module(module_name)
    name = attribute
    if "." in attribute:
        class_name, name = attribute.split(".")
        owner = getattr(owner, class_name, None)
    function = getattr(owner, name, None)
    if function is None:
        return

    @functools.wraps(function)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        start, cpu, process = time.perf_counter(), time.thread_time(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            label = attribute
            if name == "on_driver":  # (self, rows, task_number, ...)
                label += f" task {args[2]}, {args[1].num_rows} rows"
            if name in POOLED:
                label += f" (process CPU {(time.process_time() - process) * 1000:.1f} ms)"
            events.append((threading.current_thread().name, label, start, time.perf_counter(),
                           time.thread_time() - cpu))

    setattr(owner, name, recorded)


def timed_upserts(args: argparse.Namespace, events: list[Event]) -> tuple[list[float], float]:
    """The walls of `--reps` upserts into fresh copies of one table, and the last one's start."""
    work = Path(tempfile.mkdtemp(prefix="bench_writer_timeline_"))
    try:
        options = {CODEC_KEY: "gzip"}
        base = loaded_table(work, args.rows, virtual_keys=args.virtual_keys, options=options)
        for module_name, attribute in STEPS:
            record(events, module_name, attribute)
        if args.threads == 1:
            inline_writes()
        data = rows(args.rows, args.rows, 2)
        walls, start = [], 0.0
        for _ in range(args.reps):
            copy = work / "copy"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(base, copy)
            events.clear()
            start = time.perf_counter()
            runner.write(data, "t", project_dir=copy, options=options)
            walls.append(time.perf_counter() - start)
        return walls, start
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="records per upsert (default 100000)")
    parser.add_argument("--reps", type=int, default=6, help="upserts; the last one's timeline is printed")
    parser.add_argument("--threads", type=int, default=0, choices=(0, 1),
                        help="1: write the file groups inline; 0: the writer's thread pool (default)")
    parser.add_argument("--virtual-keys", action="store_true", help="a table without meta fields")
    args = parser.parse_args()

    events: list[Event] = []
    walls, start = timed_upserts(args, events)
    at: Callable[[float], str] = lambda t: f"{(t - start) * 1000:7.1f}"  # noqa: E731
    print(f"walls of {len(walls)} upserts (ms): {', '.join(f'{w * 1000:.0f}' for w in walls)}; "
          f"median {statistics.median(walls) * 1000:.0f}")
    print(f"the last upsert: {'thread':24s} {'start':>7s} {'end':>7s} {'wall':>6s} {'CPU':>6s}  step")
    for thread, label, begun, ended, cpu in sorted(events, key=lambda e: e[2]):
        print(f"{'':16s}{thread[:24]:24s} {at(begun)} {at(ended)} {(ended - begun) * 1000:6.1f} "
              f"{cpu * 1000:6.1f}  {label}")


if __name__ == "__main__":
    sys.exit(main())
