"""Benchmark cleaning: `runner apply` against bare unlinks, and incremental against full planning.

Builds one synthetic Hudi table once (TableBuilder tiny mode: real names, timeline and write stats,
zero-row Parquet files; table version 6, copy-on-write, hive-style partitions `dt=NNNN`):
`--partitions` × `--groups` file groups, each written by an insert and `--versions - 1` updates of
every group, then one more commit updating every group of `--touched` % of the partitions.

1. **Clean apply vs the floor.** Declared KEEP_LATEST_FILE_VERSIONS with 1 retained (sizing off),
   so every base file but the latest of its group goes (80 % with 5 versions). Every run gets a
   fresh copy of the table (`cp -r` then `os.sync()`, not timed: real files on disk, see
   `_common.fresh_copy`; `--hardlink` for hard links, which takes the file system's cost of freeing
   blocks out and leaves the CPU cost) and times, interleaved:
   - floor (the baseline): a bare `os.unlink` loop over exactly the files the runner's plan lists;
   - the same unlinks spread over `--threads` threads, for reference (and over each count of
     `--sweep`, which picks the pool size: `LOCAL_DELETE_THREADS`);
   - the runner's bulk delete alone, `LocalStorage.delete_many` (one containment and symlink check
     per folder, `--threads`-thread pool, and each `--sweep` count), which is what the cleaner runs
     on a local master;
   - the Spark delete job alone (`delete_files` on the warm session: the same `delete_many` inside
     each task), which a cluster master or a job past `THREADS_UP_TO` runs: the pair of rows is
     the measurement behind the threads-or-Spark choice;
   - runner in-process: `apply_table` end to end (lock, timeline read, full listing, plan,
     `clean.requested`/`.inflight` with the plan, the deletes, the completed clean) with the
     deleter `runner apply` builds (`runner.execute.deleter.Deleter`), and the Spark session
     started before timing; the run checks which engine the deleter chose;
   - runner CLI: `python -m runner apply --project-dir ...` as a subprocess: interpreter, imports,
     project load, JVM and Spark start-up, and all of the above;
   - `runner plan`'s share: `plan_one` alone, and `read_table_metadata` alone, on the untouched
     table (read-only).
   Every run checks that exactly the planned files are gone and all the others remain.

2. **Incremental vs full planning.** On the table (after measurement 1), apply KEEP_LATEST_COMMITS
   with 1 retained once, so a completed clean exists whose earliest commit to retain (ECTR) is the
   last commit, the one that touched `--touched` % of the partitions; then add one commit updating
   those partitions again. Incremental cleaning lists the partitions written in
   [last clean's ECTR, new ECTR), which is just that commit's partitions (Hudi's lower bound is
   inclusive, so the commit before the clean decides the scope, not only the one after it). Times
   `plan_one` with `incremental: true` (lists the touched partitions) against `incremental: false`
   (lists every partition), sizing off, interleaved; both with and without reading the timeline;
   asserts that both plans delete the same files. End-to-end runs empty the process's cache of
   decoded instants first, as a fresh `runner plan` starts; "timeline already read" reuses one
   `TableMetadata` (whose commits decode lazily, once).

Ratios are against the baseline measured in the same process, interleaved with it. Usage:

    .venv/bin/python bench/bench_clean.py            # quick: 50 partitions × 100 groups × 5 versions
    .venv/bin/python bench/bench_clean.py --partitions 1000 --runs 3 --cli-runs 3
    .venv/bin/python bench/bench_clean.py --partitions 1000 --only apply --hardlink
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

from _common import fresh_copy, markdown_table, median, remove_tree, timed

from runner.declarations.model import (
    CleanPolicy,
    CleanPolicyName,
    FileSizing,
    Project,
    SparkSettings,
    TableDeclaration,
)
from runner.execute.apply import TableResult, apply_table
from runner.execute.deleter import Deleter  # `runner apply` adds only a progress bar around its choice
from runner.execute.spark import delete_files, get_spark
from runner.hudi.state import read_table_metadata
from runner.hudi.timeline_metadata import DECODED
from runner.plan.model import TablePlan
from runner.planner import plan_one
from runner.storage import DeleteResult, Storage, storage_for
from runner.storage.local import LOCAL_DELETE_THREADS
from runner.testing import TableBuilder

NAME = "bench_clean"
KEEP_ONE_VERSION = CleanPolicy(policy=CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
SIZING_OFF = FileSizing(small_file_limit=0)
TABLE_YML = """\
name: bench_clean
path: {path}
clean: {{policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: 1}}
file_sizing: {{small_file_limit: 0}}
"""
FLOOR = "floor: os.unlink loop (baseline)"
RUNNER = "runner in-process (apply_table; deletes on threads)"
STORAGE_DELETE = "LocalStorage.delete_many alone on {threads} threads (one check per folder)"
SPARK_JOB = "Spark delete job alone (delete_files, warm session)"
PLAN_ONLY = "plan_one alone (what `runner plan` computes), in-process"
METADATA_ONLY = "read_table_metadata alone (timeline and commit metadata)"
CLI = "runner CLI (`runner apply`; deletes on threads, no JVM)"


@dataclass
class Runs:
    """Seconds per variant, in the order measured."""

    seconds: dict[str, list[float]] = field(default_factory=dict)

    def add(self, label: str, value: float) -> None:
        self.seconds.setdefault(label, []).append(value)

    def median(self, label: str) -> float:
        return median(self.seconds[label])


def spread(values: list[float], scale: float = 1, unit: str = "s") -> str:
    """`n: min–max`, so that a reader sees how noisy the machine was."""
    digits = 0 if unit == "ms" else 2
    return f"{len(values)}: {min(values) * scale:.{digits}f}–{max(values) * scale:.{digits}f} {unit}"


# ---------------------------------------------------------------------------------------- table

def build_table(path: Path, args: argparse.Namespace) -> tuple[TableBuilder, list[str]]:
    """The table of both measurements; returns the builder and the touched partitions."""
    partitions = [f"dt={i:04d}" for i in range(args.partitions)]
    builder = TableBuilder(path, name=NAME, partitions=partitions, tiny=True)
    builder.commit(writes=args.groups)
    for _ in range(args.versions - 1):
        builder.commit(updates=args.groups)
    touched = touched_partitions(partitions, args.touched)
    builder.commit(updates={p: args.groups for p in touched})
    return builder, touched


def kept_or_built(master: Path, args: argparse.Namespace) -> tuple[TableBuilder | None, list[str]]:
    """The table at `master`: reused when its stamp says it has this run's shape, else (re)built
    there; the builder is None when reused (only the apply measurement runs then)."""
    shape = {k: getattr(args, k) for k in ("partitions", "groups", "versions", "touched")}
    stamp = master.parent / f"{master.name}.shape.json"
    if stamp.exists() and json.loads(stamp.read_text()) == shape and (master / ".hoodie").is_dir():
        partitions = [f"dt={i:04d}" for i in range(args.partitions)]
        return None, touched_partitions(partitions, args.touched)
    remove_tree(master)
    stamp.unlink(missing_ok=True)
    built = build_table(master, args)
    stamp.write_text(json.dumps(shape))
    return built


def touched_partitions(partitions: list[str], percent: float) -> list[str]:
    """`percent` % of the partitions (at least one), spread evenly."""
    count = max(1, round(len(partitions) * percent / 100))
    return partitions[:: len(partitions) // count][:count]


def declaration(path: Path, policy: CleanPolicy) -> TableDeclaration:
    return TableDeclaration(name=NAME, path=str(path), source_file=f"tables/{NAME}.yml", clean=policy,
                            file_sizing=SIZING_OFF)


def planned_paths(plan: TablePlan) -> list[str]:
    assert plan.clean is not None and not plan.clean.partitions_to_delete
    return [f.path for f in plan.clean.files_to_delete]


def count_data_files(root: Path) -> int:
    """Base and log files in every partition folder (one `scandir` per partition)."""
    total = 0
    for entry in os.scandir(root):
        if entry.is_dir() and entry.name != ".hoodie":
            with os.scandir(entry.path) as files:
                total += sum(1 for f in files if not f.name.startswith(".hoodie_partition_metadata"))
    return total


# ------------------------------------------------------------------------- measurement 1: apply

def unlink_loop(paths: list[str]) -> None:
    for path in paths:
        os.unlink(path)


def unlink_threads(paths: list[str], threads: int) -> None:
    """Contiguous slices of the list (so mostly different folders) on `threads` threads."""
    size = -(-len(paths) // threads)
    workers = [threading.Thread(target=unlink_loop, args=(paths[i:i + size],)) for i in range(0, len(paths), size)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def runner_in_process(decl: TableDeclaration, project: Project, job_seconds: list[float]) -> TableResult:
    """`apply_table` as `runner apply` calls it, with its deletes timed on their own."""
    def factory() -> Callable[[Storage, list[str]], list[DeleteResult]]:
        deleter = Deleter(project.spark)

        def delete(storage: Storage, paths: list[str]) -> list[DeleteResult]:
            seconds, outcomes = timed(lambda: deleter(storage, paths))
            job_seconds.append(seconds)
            engines.update(note.split(":")[0] for note in deleter.notes)
            return list(outcomes)

        return delete

    return apply_table(decl, None, now=datetime.now(UTC), spark_settings=project.spark,
                       deleter_factory=factory)


engines: set[str] = set()  # what the runner's deleter chose, as its notes say


def runner_cli(project_dir: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "runner", "apply", "--auto-approve", "--project-dir", str(project_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((project_dir / "target" / "run_results.json").read_text())
    return dict(report["tables"][0])


def measure_apply(master: Path, work: Path, args: argparse.Namespace) -> list[list[object]]:
    copy = work / "copy"
    settings = SparkSettings(master=args.master)
    project_dir = work / "project"
    (project_dir / "tables").mkdir(parents=True)
    (project_dir / "project.yml").write_text(f'name: bench\nspark: {{master: "{args.master}"}}\n')
    (project_dir / "tables" / f"{NAME}.yml").write_text(TABLE_YML.format(path=copy))
    project = Project(name="bench", directory=str(project_dir), spark=settings)
    decl = declaration(copy, KEEP_ONE_VERSION)
    total = count_data_files(master)

    paths = planned_paths(
        plan_one(declaration(master, KEEP_ONE_VERSION), storage_for(str(master)), now=datetime.now(UTC))
    )
    absolute = [os.path.join(copy, p) for p in paths]
    print(f"  plan: delete {len(paths):,} of {total:,} data files", flush=True)

    spark_start = None
    if not args.no_spark:
        spark_start, _ = timed(lambda: get_spark(settings).sparkContext.parallelize(range(8), 2).map(abs).count())
        print(f"  Spark session and Python workers started in {spark_start:.1f} s (not in the in-process runs)")

    def check(result: TableResult | dict[str, object] | list[DeleteResult] | None) -> None:
        if isinstance(result, list):
            assert all(r.deleted and r.error is None for r in result), "a bulk delete failed"
        elif result is not None:
            outcome = result if isinstance(result, dict) else result.to_json()
            assert outcome["status"] == "success" and outcome["files_deleted"] == len(paths), outcome
        assert count_data_files(copy) == total - len(paths), "a run deleted other files than planned"

    job_seconds: list[float] = []
    copy_storage = storage_for(str(copy))
    variants: dict[str, Callable[[], object]] = {
        FLOOR: lambda: unlink_loop(absolute),
        **{
            label.format(threads=count): action
            for count in sorted({args.threads, *args.sweep})
            for label, action in (
                ("os.unlink on {threads} threads", partial(unlink_threads, absolute, count)),
                (STORAGE_DELETE, partial(copy_storage.delete_many, paths, threads=count)),
            )
        },
        SPARK_JOB: lambda: delete_files(get_spark(settings), copy_storage, paths),
        RUNNER: lambda: runner_in_process(decl, project, job_seconds),
        CLI: lambda: runner_cli(project_dir),
    }
    if args.no_spark:
        del variants[SPARK_JOB]
    if args.floor_and_runner:
        variants = {label: action for label, action in variants.items() if label in (FLOOR, RUNNER, CLI)}
    if args.cli_runs == 0:
        del variants[CLI]
    runner_cpu: list[float] = []
    runs = Runs()
    for run in range(args.runs):
        order = list(variants)[run % len(variants) :] + list(variants)[: run % len(variants)]
        for label in order:
            if label == CLI and run >= args.cli_runs:
                continue
            fresh_copy(master, copy, hardlink=args.hardlink)
            cpu = time.process_time()
            seconds, result = timed(variants[label])
            if label == RUNNER:  # this process's CPU, the delete threads' included
                runner_cpu.append(time.process_time() - cpu)
            check(result if isinstance(result, (TableResult, dict, list)) else None)
            runs.add(label, seconds)
            load = os.getloadavg()[0]  # the machine is shared: ratios against a floor under another load mislead
            print(f"  run {run + 1}: {label}: {seconds:.2f} s (load average {load:.1f})", flush=True)
        runs.add(METADATA_ONLY, timed(lambda: read_table_metadata(storage_for(str(master))))[0])
        runs.add(
            PLAN_ONLY,
            timed(
                lambda: plan_one(declaration(master, KEEP_ONE_VERSION), storage_for(str(master)), now=datetime.now(UTC))
            )[0],
        )
    remove_tree(copy)
    labels = list(variants)
    runs.seconds["of which: the deletes"] = job_seconds
    labels.insert(labels.index(RUNNER) + 1, "of which: the deletes")
    print(f"  the runner's deleter chose: {'; '.join(sorted(engines))}")
    ratios = [r / f for r, f in zip(runs.seconds[RUNNER], runs.seconds[FLOOR], strict=True)]
    print("  in-process apply / floor, per run: " + ", ".join(f"{r:.2f}" for r in ratios)
          + f"; median {median(ratios):.2f}")
    print("  in-process apply, CPU seconds per run: " + ", ".join(f"{c:.2f}" for c in runner_cpu))
    labels += [PLAN_ONLY, METADATA_ONLY]

    floor = runs.median(FLOOR)
    rows: list[list[object]] = []
    for label in labels:
        values = runs.seconds[label]
        seconds = median(values)
        rate = "–" if label in (PLAN_ONLY, METADATA_ONLY) else f"{len(paths) / seconds:,.0f}"
        rows.append([label, f"{seconds:.2f} s", spread(values), rate, f"{seconds / floor:.2f}×"])
    if spark_start is not None:
        rows.append(
            [
                "Spark session + workers start-up, once (not in the in-process rows)",
                f"{spark_start:.2f} s",
                "1 run",
                "–",
                f"{spark_start / floor:.2f}×",
            ]
        )
    return rows


# -------------------------------------------------------------------------- measurement 2: plan

def local_deleter() -> Callable[[Storage, list[str]], list[DeleteResult]]:
    """A plain deleter for the set-up clean (not timed), so that measurement 2 needs no Spark."""
    return lambda storage, paths: storage.delete_many(paths)


def cold(action: Callable[[], object]) -> Callable[[], object]:
    """`action` with the process's cache of decoded instants emptied first, as in a fresh `runner plan`."""

    def run() -> object:
        DECODED.clear()
        return action()

    return run


def measure_planning(
    master: Path, builder: TableBuilder, touched: list[str], args: argparse.Namespace
) -> tuple[list[list[object]], int, str]:
    storage = storage_for(str(master))
    keep_commits = CleanPolicy(policy=CleanPolicyName.KEEP_LATEST_COMMITS, commits_retained=1)
    setup = apply_table(
        declaration(master, keep_commits),
        None,
        now=datetime.now(UTC),
        spark_settings=SparkSettings(),
        deleter_factory=local_deleter,
    )
    assert setup.status == "success" and setup.files_deleted > 0, setup
    latest = read_table_metadata(storage).timeline.latest_time
    assert latest is not None
    builder.commit(updates={p: args.groups for p in touched}, at=latest.to_datetime() + timedelta(seconds=1))

    incremental = declaration(master, keep_commits)
    full = declaration(
        master, CleanPolicy(policy=CleanPolicyName.KEEP_LATEST_COMMITS, commits_retained=1, incremental=False)
    )
    now = datetime.now(UTC)
    meta = read_table_metadata(storage)
    inc_plan, full_plan = plan_one(incremental, storage, now=now), plan_one(full, storage, now=now)
    assert inc_plan.clean is not None and full_plan.clean is not None
    assert inc_plan.clean.scope.startswith("incremental"), inc_plan.clean.scope
    assert full_plan.clean.scope.startswith("full listing"), full_plan.clean.scope
    inc_files, full_files = planned_paths(inc_plan), planned_paths(full_plan)
    assert inc_files == full_files, "incremental and full planning disagree"
    assert len(inc_files) == len(touched) * args.groups, len(inc_files)

    variants = {
        "full listing (incremental: false)": cold(lambda: plan_one(full, storage, now=now)),
        "incremental (incremental: true)": cold(lambda: plan_one(incremental, storage, now=now)),
        "full listing, timeline already read": lambda: plan_one(full, storage, now=now, metadata=meta),
        "incremental, timeline already read": lambda: plan_one(incremental, storage, now=now, metadata=meta),
        "read_table_metadata alone": cold(lambda: read_table_metadata(storage)),
    }
    runs = Runs()
    for run in range(args.plan_runs):
        for label, action in variants.items():
            seconds, _ = timed(action)
            runs.add(label, seconds)
        print(f"  run {run + 1}: " + ", ".join(f"{s[-1]:.2f}" for s in runs.seconds.values()) + " s", flush=True)
    rows: list[list[object]] = []
    for label in variants:
        base = runs.median(
            "full listing, timeline already read" if "already" in label else "full listing (incremental: false)"
        )
        rows.append(
            [
                label,
                f"{runs.median(label) * 1000:.0f} ms",
                spread(runs.seconds[label], 1000, "ms"),
                f"{runs.median(label) / base:.3f}×" if "metadata" not in label else "–",
            ]
        )
    return rows, len(inc_files), inc_plan.clean.scope


# --------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--groups", type=int, default=100, help="file groups per partition")
    parser.add_argument("--versions", type=int, default=5, help="base-file versions per group")
    parser.add_argument("--touched", type=float, default=1.0, help="percent of partitions the last commits touch")
    parser.add_argument("--runs", type=int, default=3,
                        help="runs of every apply variant (0: none, e.g. to build a --table for other scripts)")
    parser.add_argument("--cli-runs", type=int, default=3, help="of which with the CLI (JVM start-up each)")
    parser.add_argument("--plan-runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=LOCAL_DELETE_THREADS,
                        help="threads of the thread-pool rows (default: the local delete pool's size)")
    parser.add_argument("--sweep", type=lambda text: [int(n) for n in text.split(",") if n], default=[],
                        help="more thread counts for the bare-unlink and delete_many rows, e.g. 8,16,64")
    parser.add_argument("--master", default="local[2]", help="Spark master of the apply runs")
    parser.add_argument(
        "--hardlink",
        action="store_true",
        help="hard-linked instead of real copies per run: faster set-up, cheaper unlinks",
    )
    parser.add_argument("--only", choices=("apply", "plan"), help="run one measurement")
    parser.add_argument("--floor-and-runner", action="store_true",
                        help="time only the floor and the runner (in-process, and the CLI with --cli-runs): "
                        "a fresh copy per variant makes the full-size run long")
    parser.add_argument("--no-spark", action="store_true",
                        help="leave out the Spark delete job row (and the session it starts)")
    parser.add_argument("--workdir", help="parent folder of the temporary data (default: system temp)")
    parser.add_argument(
        "--table",
        help="keep the built table here and reuse it on later runs with the same shape (a stamp file "
        "records it); only with --only apply, which never changes the table it copies",
    )
    args = parser.parse_args()
    if args.table and args.only != "apply":
        parser.error("--table needs --only apply: the planning measurement changes the table")
    files = args.partitions * args.groups * args.versions
    print(
        f"{args.partitions} partitions × {args.groups} file groups × {args.versions} versions = {files:,} "
        f"base files, then {args.touched:g} % of the partitions updated again; Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, Spark {args.master}, "
        f"{'hard-linked' if args.hardlink else 'real'} copies",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench_clean_", dir=args.workdir) as folder:
        work = Path(folder)
        master = Path(args.table) if args.table else work / "table"
        seconds, (builder, touched) = timed(lambda: kept_or_built(master, args))
        print(f"built the table in {seconds:.1f} s" if builder else f"reused the table at {master}", flush=True)
        apply_rows = None
        if args.only in (None, "apply") and args.runs > 0:  # --runs 0: only build (or check) the table
            apply_rows = measure_apply(master, work, args)
        plan_rows = None
        if args.only in (None, "plan"):
            assert builder is not None
            plan_rows = measure_planning(master, builder, touched, args)
        if not args.table:
            remove_tree(master)
    if apply_rows:
        print(
            f"\n### Clean apply vs the floor: KEEP_LATEST_FILE_VERSIONS 1, median of {args.runs} runs "
            f"({min(args.cli_runs, args.runs)} for the CLI)\n"
        )
        print(markdown_table(["what", "median", "runs: min–max", "files/s", "vs floor"], apply_rows))
    if plan_rows:
        rows, deleted, scope = plan_rows
        print(f"\n### Incremental vs full planning: KEEP_LATEST_COMMITS 1, median of {args.plan_runs} runs\n")
        print(
            f"{len(touched)} of {args.partitions} partitions touched; both plans delete the same "
            f"{deleted:,} files; incremental scope: {scope}\n"
        )
        print(markdown_table(["what", "median", "runs: min–max", "vs full listing"], rows))


if __name__ == "__main__":
    main()
