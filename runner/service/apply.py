"""`apply_tables`: apply a plan (or plan and apply in one go) to each table, and report.

Owns what every caller of apply needs, the CLI and schedulers alike: the provenance checks of a
saved plan, the per-table loop (on `threads` threads, one table's failure never stopping the
others), the choice of engine for deletes, starting Spark only when a table needs it, and the run
report written to `target/run_results.json`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import runner.progress as progress
from runner.declarations.fingerprint import declaration_fingerprint
from runner.declarations.model import Project, TableDeclaration
from runner.errors import InternalError, Interrupted, PlanError, RunnerError
from runner.execute.apply import TableResult, apply_table
from runner.execute.deleter import choose_engine, delete_threads
from runner.execute.resize_engine import rewrites_on_spark
from runner.execute.session import session_notes, size_session
from runner.execute.spark import get_spark
from runner.output_paths import refuse_blocked_output
from runner.plan.model import Plan, TablePlan, TableStatus
from runner.progress import Sink, reporting_to
from runner.selection import did_you_mean
from runner.service.jvm_output import jvm_output_to
from runner.service.locations import guarded_location, plan_moment, plan_project
from runner.service.report import RUN_RESULTS, RunReport
from runner.storage import DeleteResult, Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Deletes run in rounds of at least this many files, so that a progress display moves. A round
# keeps the whole delete pool busy only if it spans about as many folder tasks as the pool has
# threads (32 locally; a partition often holds a few hundred files), hence not smaller.
DELETE_CHUNK = 20_000


class Progress(Protocol):
    """What apply tells a progress display; `runner apply` shows it on the terminal."""

    def step(self, description: str) -> None: ...  # a phase of unknown length starts
    def count(self, description: str, total: int) -> None: ...  # a phase of `total` units starts
    def advance(self, amount: int) -> None: ...
    def done(self, line: str) -> None: ...  # a line to keep (e.g. how long Spark took to start)
    def table_done(self, result: TableResult) -> None: ...
    def sink(self, table: str) -> Sink: ...  # where one table's counts and bytes go (`runner.progress`)


class _NoSink:
    def begin(self, what: str, unit: str, total: int | None, total_bytes: int | None) -> None: ...
    def advance(self, items: int, nbytes: int) -> None: ...


class Silent:
    """No progress display (the default for Python callers)."""

    def step(self, description: str) -> None: ...
    def count(self, description: str, total: int) -> None: ...
    def advance(self, amount: int) -> None: ...
    def done(self, line: str) -> None: ...
    def table_done(self, result: TableResult) -> None: ...

    def sink(self, table: str) -> Sink:
        return _NoSink()


def apply_tables(
    project: Project,
    tables: Sequence[TableDeclaration] | None = None,
    *,
    plan: Plan | None = None,
    now: datetime | None = None,
    threads: int | None = None,
    progress: Progress | None = None,
    spark_log: str | None = None,
    report_path: Path | None = None,
) -> RunReport:
    """Apply `plan` to `tables` (default: every table), or plan and apply them in one go.

    Args:
        plan: a reviewed plan (`plan_tables`, or `load_plan` of a saved file). It is refused as a
            whole, before any table is touched, when it was made in another project, names a table
            the project does not declare, or a declaration changed since; tables it does not cover
            are skipped. Each table is re-planned under its lock and the plan only narrows that.
            None: plan and apply under the lock, without review (what `--auto-approve` does).
        now: the time a new plan is made as of (default: the current time); ignored with `plan`,
            which carries its own. Never in the future.
        threads: tables applied at once (default: the project's `threads`).
        progress: a progress display (default: none).
        spark_log: where the Spark JVM's output goes when apply starts Spark (default: this
            process's stderr; `runner apply` uses target/spark.log unless --debug).
        report_path: where the run report goes (default: `<project>/target/run_results.json`).

    Returns:
        The run report, already written; `report.failed` says whether any table failed.

    Raises:
        PlanError: the plan fails the provenance checks; nothing was applied.
        StorageError: a file stands where the report's folder goes, or a folder where the report
            goes; nothing was applied (the report could not have said what was).
        Interrupted: Ctrl-C (SIGINT); the report, written first, has an entry for every table (those
            not applied as errors), and its message says how many were done, stopped and not started.
    """
    if plan is not None:
        check_provenance(plan, project)
    path = report_path or Path(project.directory) / RUN_RESULTS
    refuse_blocked_output(path, what="the run report", fix="pass another report_path." if report_path else None)
    chosen = project.tables if tables is None else tuple(tables)
    session = size_session(project.spark, chosen)  # one session for all: sized for the largest table
    project = replace(project, spark=session.settings)
    when = plan_moment(plan.now, plan.now_offset) if plan is not None else now or datetime.now(UTC)
    shown = _Shared(progress or Silent())
    work = [(decl, _planned_for(plan, decl)) for decl in chosen]
    work = [(decl, planned) for decl, planned in work if plan is None or planned is not None]
    report = RunReport.start(project)

    def one(index: int, decl: TableDeclaration, planned: TablePlan | None) -> TableResult:
        shown.step(f"[{index}/{len(work)}] {decl.name}: reading the timeline, listing files, planning")
        # A resize on a local master runs on the driver's threads: only a cluster's needs Spark up front.
        rewrites = decl.file_sizing.small_file_limit > 0 and rewrites_on_spark(project.spark)
        jobs = _SparkJobs(project, decl.name, shown, spark_log, rewrites=rewrites)
        with reporting_to(shown.sink(decl.name)):  # listing, deletes, rewrites: counts, bytes
            result = _apply_guarded(project, decl, planned, when, jobs)
        shown.table_done(result)
        return result

    workers = threads or project.threads
    try:
        if workers <= 1 or len(work) <= 1:
            for i, (decl, planned) in enumerate(work, start=1):
                report.tables.append(one(i, decl, planned))
        else:
            _on_threads(one, work, workers, report, shown)
        report.notes.extend(session_notes(session))
        report.finish()
        report.write_once_applied(path)
    except KeyboardInterrupt:
        # Sequentially the interrupt lands inside the table being applied; threads finish theirs.
        threaded = workers > 1 and len(work) > 1
        raise _interrupted(report, [decl for decl, _ in work], path, in_progress=not threaded) from None
    return report


def _on_threads(one: Callable[[int, TableDeclaration, TablePlan | None], TableResult],
                work: list[tuple[TableDeclaration, TablePlan | None]], workers: int, report: RunReport,
                shown: _Shared) -> None:
    """Apply `work` on `workers` threads; results land in `report` in declaration order.

    On Ctrl-C no further table starts: a thread cannot be stopped in the middle of a table, so the
    tables in progress finish (each under its lock) before the interrupt goes on.
    """
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="apply")
    futures = [pool.submit(one, i, decl, planned) for i, (decl, planned) in enumerate(work, start=1)]
    try:
        for future in futures:
            report.tables.append(future.result())
    except KeyboardInterrupt:
        shown.done("interrupted: finishing the tables in progress, starting no other")
        while True:
            try:
                pool.shutdown(wait=True, cancel_futures=True)
                break
            except KeyboardInterrupt:  # again: still no table is left half-applied by this process
                continue
        report.tables.extend(f.result() for f in futures[len(report.tables):] if not f.cancelled())
        raise
    pool.shutdown(wait=True)


def _interrupted(report: RunReport, chosen: list[TableDeclaration], path: Path, *, in_progress: bool) -> Interrupted:
    """Record an interrupted run (every selected table gets its entry) and say what is left.

    `in_progress`: the first table without a result was being applied when the interrupt came.
    """
    finished = {t.name for t in report.tables}
    failed = sum(t.status == TableStatus.ERROR for t in report.tables)
    left = [decl for decl in chosen if decl.name not in finished]
    stopped, not_started = (left[:1], left[1:]) if in_progress else ([], left)
    for decl in stopped:
        report.tables.append(TableResult.failed(decl.name, decl.path, Interrupted(
            f"table {decl.name}: interrupted while being applied; what it wrote is either complete or a pending "
            "clean or resize, which the next apply finishes first")))
    for decl in not_started:
        report.tables.append(TableResult.failed(decl.name, decl.path, Interrupted(
            f"table {decl.name}: not applied, the run was interrupted before it started")))
    report.notes.append("interrupted by the user (Ctrl-C)")
    report.finish()
    report.write_once_applied(path)
    parts = [f"{len(finished)} of {len(chosen)} tables done" + (f" ({failed:,} failed)" if failed else ""),
             *([f"{stopped[0].name} stopped while being applied"] if stopped else []),
             f"{len(not_started)} not started"]
    return Interrupted(
        f"interrupted: {', '.join(parts)}; nothing else was changed. Report: {path}",
        hint="plan again and apply the new plan (or `runner apply --auto-approve`); the next apply of a table "
        "first finishes any clean or resize this run left pending.",
    )


def check_provenance(plan: Plan, project: Project) -> None:
    """Refuse a plan made in another project, for tables this project does not declare, or from
    declarations that changed since; nothing is applied when any table fails the check."""
    here = plan_project(project)
    if plan.project is None:
        raise PlanError("the plan file does not record the project it was made in; nothing was applied",
                        hint="re-create it with `runner plan --out PLAN_JSON` and apply that.")
    if plan.project != here:
        raise PlanError(
            f'the plan was made in project "{plan.project.name}" at {plan.project.directory}, '
            f'but this is project "{here.name}" at {here.directory}; nothing was applied',
            hint="apply a plan in the project it was made in, or make a new plan here with `runner plan`.",
        )
    names = [t.name for t in plan.tables]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise PlanError(f"the plan lists {listed(repeated)} more than once; nothing was applied",
                        hint="re-create the plan with `runner plan` rather than editing it.")
    declared = {t.name: t for t in project.tables}
    unknown = [t.name for t in plan.tables if t.name not in declared]
    if unknown:
        raise PlanError(
            f"the plan names {listed(unknown)} that project {project.name} does not declare"
            f"{did_you_mean(unknown[0], declared)}; nothing was applied",
            hint="make a new plan with `runner plan`.",
        )
    stale = [_why_stale(t, declared[t.name]) for t in plan.tables]
    reasons = [reason for reason in stale if reason]
    if reasons:
        raise PlanError("the plan no longer matches the declarations: " + "; ".join(reasons)
                        + "; nothing was applied",
                        hint="make a new plan with `runner plan`, review it, and apply that.")


def _why_stale(planned: TablePlan, decl: TableDeclaration) -> str | None:
    if planned.path != decl.path:
        return f"table {decl.name} was planned at {planned.path} but is declared at {decl.path}"
    if planned.declaration_fingerprint is None:
        return f"table {decl.name} has no declaration fingerprint in the plan"
    if planned.declaration_fingerprint != declaration_fingerprint(decl):
        return f"the declaration of table {decl.name} ({decl.source_file}) changed since the plan was made"
    return None


def listed(names: list[str]) -> str:
    quoted = ", ".join(f'"{n}"' for n in names)
    return f"table {quoted}" if len(names) == 1 else f"tables {quoted}"


def _planned_for(plan: Plan | None, decl: TableDeclaration) -> TablePlan | None:
    if plan is None:
        return None
    return next((t for t in plan.tables if t.name == decl.name), None)


def _apply_guarded(project: Project, decl: TableDeclaration, planned: TablePlan | None, now: datetime,
                   jobs: _SparkJobs) -> TableResult:
    """`_apply_one`, with a bug in one table's apply reported as that table's error: with several
    tables applied at once, one table's failure must never stop the others."""
    try:
        return _apply_one(project, decl, planned, now, jobs)
    except Exception as error:
        return TableResult.failed(decl.name, decl.path, InternalError.wrapping(error))


def _apply_one(project: Project, decl: TableDeclaration, planned: TablePlan | None, now: datetime,
               jobs: _SparkJobs) -> TableResult:
    started = time.monotonic()
    if planned is not None and planned.status is TableStatus.ERROR:
        message = (planned.error or {}).get("message", "")
        return TableResult.failed(decl.name, decl.path, PlanError(
            f"table {decl.name} could not be planned, so it is not applied: {message}"))
    result = TableResult(decl.name, decl.path)
    try:
        # Work on the real location, checked against allowed_roots now rather than at validation.
        real = replace(decl, path=guarded_location(project, decl))
        apply_table(real, planned, now=now, spark_settings=project.spark, deleter_factory=jobs.deleter, into=result)
    except RunnerError as error:
        result.fail(error)  # what the steps before the failure did stays in the report
    result.duration_s = round(time.monotonic() - started, 3)
    return result


class _Shared:
    """The one progress display, used by every apply thread in turn."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._lock = threading.RLock()

    def step(self, description: str) -> None:
        with self._lock:
            self._progress.step(description)

    def count(self, description: str, total: int) -> None:
        with self._lock:
            self._progress.count(description, total)

    def advance(self, amount: int) -> None:
        with self._lock:
            self._progress.advance(amount)

    def done(self, line: str) -> None:
        with self._lock:
            self._progress.done(line)

    def table_done(self, result: TableResult) -> None:
        with self._lock:
            self._progress.table_done(result)

    def sink(self, table: str) -> Sink:
        return _LockedSink(self._progress.sink(table), self._lock)


class _LockedSink:
    def __init__(self, sink: Sink, lock: threading.RLock) -> None:
        self._sink, self._lock = sink, lock

    def begin(self, what: str, unit: str, total: int | None, total_bytes: int | None) -> None:
        with self._lock:
            self._sink.begin(what, unit, total, total_bytes)

    def advance(self, items: int, nbytes: int) -> None:
        with self._lock:
            self._sink.advance(items, nbytes)


# One thread starts Spark (and points the JVM's output at the log) while the others wait for it.
_SPARK_START = threading.Lock()


class _SparkJobs:
    """Starts Spark when a table needs it and deletes with progress.

    Deletes run where `runner.execute.deleter.choose_engine` says: on the runner's thread pool for
    a local master (no JVM for a clean), as Spark jobs on a cluster or past its size bound. Spark
    starts up front, under its own progress step (start-up is the longest silent wait of a run),
    when the table has changes and either its deletes run on Spark or it declares file sizing on a
    cluster (a rewrite may follow; on a local master the driver rewrites,
    `runner.execute.resize_engine`); otherwise a run never starts it. Its WARN and log4j output goes to
    `spark_log` when one is given.
    """

    def __init__(self, project: Project, table: str, progress: _Shared, spark_log: str | None, *,
                 rewrites: bool = True) -> None:
        self.project, self.table, self.progress, self.spark_log = project, table, progress, spark_log
        self.rewrites = rewrites

    def deleter(self) -> _TableDeleter:
        if self.rewrites:
            self.start_spark()
        self.progress.step(f"{self.table}: applying (timeline, deletes, rewrites)")
        return _TableDeleter(self)

    def start_spark(self) -> SparkSession:
        with _SPARK_START:
            return self._started_spark()

    def _started_spark(self) -> SparkSession:
        from pyspark.sql import SparkSession

        if self.project.spark.remote:  # a Connect session per thread is cheap: get_spark reuses the client
            return get_spark(self.project.spark)
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        self.progress.step(f"starting Spark ({self.project.spark.remote or self.project.spark.master})")
        started = time.monotonic()
        with jvm_output_to(self.spark_log):
            spark = get_spark(self.project.spark)
        where = f"; its log: {self.spark_log}" if self.spark_log else ""
        self.progress.done(f"  started Spark in {time.monotonic() - started:.1f}s{where}")
        return spark


class _TableDeleter:
    """One table's deleter: the engine `choose_engine` picks, with progress; `notes` says which
    engine ran (apply copies it into the run report)."""

    def __init__(self, jobs: _SparkJobs) -> None:
        self.jobs = jobs
        self.notes: list[str] = []

    def __call__(self, storage: Storage, paths: Sequence[str]) -> list[DeleteResult]:
        from runner.execute.spark import delete_files

        jobs = self.jobs
        # A Spark Connect endpoint is a cluster too: its deletes run there, not in this process.
        choice = choose_engine(len(paths), jobs.project.spark.remote or jobs.project.spark.master,
                               threads=delete_threads(storage))
        self.notes.append(choice.describe())
        spark = jobs.start_spark() if choice.engine == "spark" else None
        progress.begin("deleting", "files", len(paths), progress.bytes_of(paths))
        results: list[DeleteResult] = []
        # Large deletes run in a few rounds rather than one, so the display moves; each Spark round
        # still spreads its files over FILES_PER_TASK-sized tasks.
        chunk = max(DELETE_CHUNK, -(-len(paths) // 10))
        for start in range(0, len(paths), chunk):
            part = paths[start:start + chunk]
            results += storage.delete_many(part) if spark is None else delete_files(spark, storage, part)
            progress.advance(len(part), progress.bytes_of(part) or 0)
        jobs.progress.step(f"{jobs.table}: recording the clean, then rewriting small files if planned")
        return results
