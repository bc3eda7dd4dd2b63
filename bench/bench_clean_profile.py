"""Where one in-process clean apply spends its CPU and wall time, phase by phase.

Runs `apply_table` (the deleter `runner apply` builds) on fresh copies of a table that
`bench_clean.py --only apply --table DIR` built, with a timer around each phase: the lock, the
timeline read, the listing, the file groups, the clean's planning, the timeline fingerprint,
`clean.requested`/`.inflight` (the plan's Avro and the two writes), the check of the plan's paths,
the deletes, the completed clean (metadata, Avro, write), and what is left over. The timers wrap
the functions apply calls, where apply looks them up, so apply's own code runs unchanged; a phase
nested in another (the listing inside `plan_one`) is reported on its own and subtracted from the
outer one. CPU is the whole process's (`time.process_time`: the delete threads' included), so a
phase that overlaps another thread's work is charged for it.

`--cprofile FILE` also writes a cProfile of one apply (CPU clock) to FILE for `pstats`.
`--hardlink` copies with `cp -al`: the kernel's cost of freeing disk blocks leaves the deletes
(the CPU side only; the default is a real copy, as `bench_clean.py` makes).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import fresh_copy, median, remove_tree

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table
from runner.execute.deleter import Deleter

KEEP_ONE = CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
LOCAL = SparkSettings(master="local[2]")

# (phase, module, attribute): each wraps the function where the caller looks it up. Order is only
# the report's.
PHASES: tuple[tuple[str, str, str], ...] = (
    ("lock: take", "runner.storage.lock", "TableLock.__enter__"),
    ("lock: release", "runner.storage.lock", "TableLock.__exit__"),
    ("timeline read (read_table_metadata)", "runner.execute.apply", "read_table_metadata"),
    ("plan_one (rest)", "runner.execute.apply", "plan_one"),
    ("- listing (discover_partitions)", "runner.hudi.state", "discover_partitions"),
    ("- file groups (build_file_groups)", "runner.hudi.state", "build_file_groups"),
    ("- clean policy (plan_clean)", "runner.plan.build", "plan_clean"),
    ("- fingerprint (requirements)", "runner.plan.build", "requirements"),
    ("clean: timeline re-read + instant time", "runner.execute.apply", "read_timeline"),
    ("requested/inflight: to_plan", "runner.execute.clean", "to_plan"),
    ("requested/inflight: Avro", "runner.execute.clean", "encode_clean_plan"),
    ("timeline writes (requested, inflight, completed)", "runner.hudi.timeline_writer", "TimelineWriter._write"),
    ("paths checked (files_of)", "runner.execute.clean", "files_of"),
    ("deletes (Deleter -> delete_many)", "runner.execute.deleter", "Deleter.__call__"),
    ("completed: metadata", "runner.execute.clean", "CleanRunner._metadata"),
    ("completed: Avro", "runner.execute.clean", "encode_clean_metadata"),
    ("completed: instant time", "runner.execute.apply", "new_instant_time"),
)


class Timers:
    """Exclusive CPU and wall per phase: a nested phase's time is taken out of its caller's."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []  # per open phase: [child cpu, child wall]

    def wrap(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._stack.append([0.0, 0.0])
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent_cpu, spent_wall = time.process_time() - cpu, time.perf_counter() - wall
                child_cpu, child_wall = self._stack.pop()
                self.cpu[phase] += spent_cpu - child_cpu
                self.wall[phase] += spent_wall - child_wall
                if self._stack:
                    self._stack[-1][0] += spent_cpu
                    self._stack[-1][1] += spent_wall
        return timed


@contextmanager
def instrumented(timers: Timers) -> Iterator[None]:
    undo = []
    for phase, module_name, attribute in PHASES:
        owner: Any = importlib.import_module(module_name)
        *outer, name = attribute.split(".")
        for part in outer:
            owner = getattr(owner, part)
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, timers.wrap(phase, original))
        undo.append((owner, name, original))
    try:
        yield
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def declaration(path: Path) -> TableDeclaration:
    return TableDeclaration(name="bench_clean", path=str(path), source_file="tables/bench_clean.yml", clean=KEEP_ONE,
                            file_sizing=FileSizing(small_file_limit=0))


def one_apply(copy: Path, now: datetime) -> Any:
    return apply_table(declaration(copy), None, now=now, spark_settings=LOCAL, deleter_factory=lambda: Deleter(LOCAL))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help="the table bench_clean.py --table built (never changed)")
    parser.add_argument("--workdir", required=True, help="where the copies go (same file system for --hardlink)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hardlink", action="store_true", help="hard-linked copies (the CPU side only)")
    parser.add_argument("--cprofile", help="write a cProfile (CPU clock) of one more apply here")
    args = parser.parse_args()
    copy = Path(args.workdir) / "profile-copy"
    now = datetime.now(UTC)
    per_run: list[Timers] = []
    totals: list[tuple[float, float]] = []
    for _ in range(args.runs):
        fresh_copy(Path(args.table), copy, hardlink=args.hardlink)
        timers = Timers()
        cpu, wall = time.process_time(), time.perf_counter()
        with instrumented(timers):
            done = one_apply(copy, now)
        totals.append((time.process_time() - cpu, time.perf_counter() - wall))
        per_run.append(timers)
        print(f"apply: cpu {totals[-1][0]:.3f} s, wall {totals[-1][1]:.3f} s, {done.files_deleted:,} deleted, "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\n| phase ({args.runs} runs, medians) | CPU ms | wall ms | CPU µs per deleted file |\n|---|---:|---:|---:|")
    files = max(done.files_deleted, 1)
    accounted_cpu = accounted_wall = 0.0
    for phase, _, _ in PHASES:
        c = median([t.cpu[phase] for t in per_run])
        w = median([t.wall[phase] for t in per_run])
        accounted_cpu += c
        accounted_wall += w
        print(f"| {phase} | {c * 1000:.0f} | {w * 1000:.0f} | {c / files * 1e6:.2f} |")
    total_cpu, total_wall = median([t[0] for t in totals]), median([t[1] for t in totals])
    rest_cpu, rest_wall = total_cpu - accounted_cpu, total_wall - accounted_wall
    print(f"| everything else | {rest_cpu * 1000:.0f} | {rest_wall * 1000:.0f} | {rest_cpu / files * 1e6:.2f} |")
    print(f"| apply in total | {total_cpu * 1000:.0f} | {total_wall * 1000:.0f} | {total_cpu / files * 1e6:.2f} |")
    if args.cprofile:
        fresh_copy(Path(args.table), copy, hardlink=args.hardlink)
        profile = cProfile.Profile(time.process_time)
        profile.enable()
        one_apply(copy, now)
        profile.disable()
        profile.dump_stats(args.cprofile)
        print(f"cProfile written to {args.cprofile}")
    remove_tree(copy)


if __name__ == "__main__":
    main()
