"""`runner apply [plan.json]`: reconcile each selected table, recorded on its timeline.

What gets applied is always a reviewed plan, as in Terraform:
- with a plan file, exactly that plan, and only in the project and for the declarations it was
  made from (anything else is refused before a single table is touched);
- without one, on a terminal, the plan is shown and applied only after the user types `yes`;
- `--auto-approve` plans and applies in one go, for scheduled runs; without a terminal, apply
  needs a plan file or `--auto-approve`.

With `--threads N` (or `threads:` in project.yml or the target) up to N tables are applied at once
in one Spark session; each keeps its own lock, result line and entry in the report, and one
table's failure never stops the others.

Exit 0 when every table was applied or already in sync, 1 when any failed or the user declined.
A run report is written to `<project>/target/run_results.json` whenever tables were applied.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import runner.progress as progress
from runner.commands._common import guarded_location, human_bytes, parse_now, plan_project, selected
from runner.commands.plan import build_plan
from runner.commands.progress import TableProgress
from runner.commands.render import count, plan_table_view, render_plan
from runner.commands.report import RunReport, render_report
from runner.commands.result import CommandResult, ExitCode
from runner.commands.terminal import Activity, emit, jvm_output_to
from runner.declarations.fingerprint import declaration_fingerprint
from runner.declarations.model import Project, TableDeclaration
from runner.errors import PlanError, RunnerError
from runner.execute.apply import TableResult, apply_table
from runner.execute.clean import DeleteOutcome
from runner.execute.deleter import choose_engine
from runner.execute.session import session_notes, size_session
from runner.execute.spark import get_spark
from runner.plan.model import Plan, TablePlan, TableStatus
from runner.progress import reporting_to
from runner.selection import did_you_mean
from runner.storage import Storage

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CONFIRMATION = "yes"
SPARK_LOG = Path("target") / "spark.log"
RUN_RESULTS = Path("target") / "run_results.json"
DELETE_CHUNK = 5_000


def run(args: argparse.Namespace) -> CommandResult:
    _refuse_swallowed_plan_file(args)
    project, tables = selected(args)
    if args.plan_file is not None:
        saved = _load_plan(args.plan_file)
        check_provenance(saved, project)
        tables = _in_plan(saved, tables, narrowed=bool(args.select))
    elif args.auto_approve:
        saved = None
    else:
        saved = _confirmed_plan(args, project, tables)
        if saved is None:
            return CommandResult(ExitCode.FAILURE, "Apply cancelled; nothing was changed.",
                                 {"cancelled": True, "tables": []})
    now = parse_now(saved.now if saved else args.now)
    sizing = size_session(project.spark, tables)  # one session for all: sized for the largest table
    project = replace(project, spark=sizing.settings)
    report = RunReport.start(project)
    spark_log = None if args.debug else str(Path(project.directory) / SPARK_LOG)
    work = [(decl, _planned_for(saved, decl)) for decl in tables]
    work = [(decl, planned) for decl, planned in work if saved is None or planned is not None]
    with Activity() as activity:
        shown = _Shared(activity)

        def one(index: int, decl: TableDeclaration, planned: TablePlan | None) -> TableResult:
            shown.step(f"[{index}/{len(work)}] {decl.name}: reading the timeline, listing files, planning")
            with reporting_to(TableProgress(shown, decl.name)):  # listing, deletes, rewrites: counts, bytes
                result = _apply_guarded(
                    project,
                    decl,
                    planned,
                    now,
                    _SparkJobs(project, decl.name, shown, spark_log, rewrites=decl.file_sizing.small_file_limit > 0),
                )
            shown.done(_result_line(result))
            return result

        threads = args.threads or project.threads
        if threads <= 1 or len(work) <= 1:
            report.tables.extend(one(i, decl, planned) for i, (decl, planned) in enumerate(work, start=1))
        else:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="apply") as pool:
                futures = [pool.submit(one, i, decl, planned) for i, (decl, planned) in enumerate(work, start=1)]
                report.tables.extend(future.result() for future in futures)  # declaration order
    report.notes.extend(session_notes(sizing))
    report.finish()
    results = Path(project.directory) / RUN_RESULTS
    report.write(results)
    failed = any(t.status == "error" for t in report.tables)
    # With --project-dir the user is elsewhere: a path relative to the project would mislead.
    results_shown = str(RUN_RESULTS) if args.project_dir in (".", "") else str(results)
    return CommandResult(
        ExitCode.FAILURE if failed else ExitCode.OK, render_report(report, results_shown), report.to_json()
    )


def _refuse_swallowed_plan_file(args: argparse.Namespace) -> None:
    """`--select t plan.json` gives plan.json to --select (it takes several values): say so rather
    than re-planning and deleting what the reviewed plan never listed."""
    if args.plan_file is not None:
        if args.now is not None:  # the plan's own time governs it; never drop an option silently
            raise RunnerError(
                f"--now {args.now} cannot be combined with the saved plan {args.plan_file}: a saved plan "
                "is applied as of the time it was made (and re-checked with the real clock); nothing was applied",
                hint="drop --now, or make a new plan with `runner plan --now ... --out plan.json`.",
            )
        return
    state = [args.state] if args.state else []
    for option, specs in (("--select", args.select), ("--exclude", args.exclude), ("--state", state)):
        for spec in specs:
            if spec.endswith(".json") or os.path.isfile(spec):
                raise RunnerError(
                    f'{option} took "{spec}" as its value, but it looks like a plan file; nothing was applied',
                    hint=f"put the plan file before the options (`runner apply {spec} {option} ...`), "
                    f"or write {option}=VALUE.",
                )


def _confirmed_plan(args: argparse.Namespace, project: Project, tables: tuple[TableDeclaration, ...]) -> Plan | None:
    """Plan, show the plan and ask; the plan shown is the plan applied. None when declined."""
    if args.format == "json" or not sys.stdin.isatty():
        raise RunnerError(
            "apply without a plan file asks for confirmation, which needs a terminal"
            + (" and text output" if args.format == "json" else "")
            + "; nothing was applied",
            hint="review a saved plan (`runner plan --out target/plan.json`, then "
            "`runner apply target/plan.json`), or pass --auto-approve to plan and apply in one go "
            "(for scheduled runs).",
        )
    plan = build_plan(project, tables, now=parse_now(args.now))
    emit(render_plan(plan, project.name), pretty=lambda: plan_table_view(plan))  # coloured on a terminal
    sys.stdout.flush()
    if not plan.has_changes:
        return plan  # nothing to confirm; apply reports every table in sync
    print(
        f"\nDo you want to perform these actions? Only '{CONFIRMATION}' will be accepted.\n  Enter a value: ",
        end="",
        flush=True,
    )
    answer = sys.stdin.readline()
    return plan if answer.strip() == CONFIRMATION else None


def check_provenance(plan: Plan, project: Project) -> None:
    """Refuse a plan made in another project, for tables this project does not declare, or from
    declarations that changed since; nothing is applied when any table fails the check."""
    here = plan_project(project)
    if plan.project is None:
        raise PlanError(
            "the plan file does not record the project it was made in; nothing was applied",
            hint="re-create it with `runner plan --out PLAN_JSON` and apply that.",
        )
    if plan.project != here:
        raise PlanError(
            f'the plan was made in project "{plan.project.name}" at {plan.project.directory}, '
            f'but this is project "{here.name}" at {here.directory}; nothing was applied',
            hint="apply a plan in the project it was made in, or make a new plan here with `runner plan`.",
        )
    names = [t.name for t in plan.tables]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise PlanError(
            f"the plan lists {_listed(repeated)} more than once; nothing was applied",
            hint="re-create the plan with `runner plan` rather than editing it.",
        )
    declared = {t.name: t for t in project.tables}
    unknown = [t.name for t in plan.tables if t.name not in declared]
    if unknown:
        raise PlanError(
            f"the plan names {_listed(unknown)} that project {project.name} does not declare"
            f"{did_you_mean(unknown[0], declared)}; nothing was applied",
            hint="make a new plan with `runner plan`.",
        )
    stale = [_why_stale(t, declared[t.name]) for t in plan.tables]
    reasons = [reason for reason in stale if reason]
    if reasons:
        raise PlanError(
            "the plan no longer matches the declarations: " + "; ".join(reasons) + "; nothing was applied",
            hint="make a new plan with `runner plan`, review it, and apply that.",
        )


def _why_stale(planned: TablePlan, decl: TableDeclaration) -> str | None:
    if planned.path != decl.path:
        return f"table {decl.name} was planned at {planned.path} but is declared at {decl.path}"
    if planned.declaration_fingerprint is None:
        return f"table {decl.name} has no declaration fingerprint in the plan"
    if planned.declaration_fingerprint != declaration_fingerprint(decl):
        return f"the declaration of table {decl.name} ({decl.source_file}) changed since the plan was made"
    return None


def _in_plan(plan: Plan, tables: tuple[TableDeclaration, ...], *, narrowed: bool) -> tuple[TableDeclaration, ...]:
    """The selected tables the plan covers; with --select, a selected table missing from the
    plan is an error rather than silently skipped."""
    planned = {t.name for t in plan.tables}
    missing = [t.name for t in tables if t.name not in planned]
    if narrowed and missing:
        raise PlanError(
            f"--select picks {_listed(missing)} that the plan file does not cover; nothing was applied",
            hint="narrow --select to tables in the plan, or make a plan that covers them.",
        )
    return tuple(t for t in tables if t.name in planned)


def _listed(names: list[str]) -> str:
    quoted = ", ".join(f'"{n}"' for n in names)
    return f"table {quoted}" if len(names) == 1 else f"tables {quoted}"


def _apply_guarded(
    project: Project, decl: TableDeclaration, planned: TablePlan | None, now: datetime, jobs: _SparkJobs
) -> TableResult:
    """`_apply_one`, with a bug in one table's apply reported as that table's error: with several
    tables applied at once, one table's failure must never stop the others."""
    try:
        return _apply_one(project, decl, planned, now, jobs)
    except Exception as error:
        return TableResult(
            decl.name,
            decl.path,
            status="error",
            error={"type": "InternalError", "message": f"internal error: {type(error).__name__}: {error}"},
        )


class _Shared:
    """The one progress display, used by every apply thread in turn."""

    def __init__(self, activity: Activity) -> None:
        self._activity = activity
        self._lock = threading.RLock()

    def __getattr__(self, name: str) -> Callable[..., None]:
        method = getattr(self._activity, name)

        def locked(*args: object) -> None:
            with self._lock:
                method(*args)

        return locked


# One thread starts Spark (and points the JVM's output at the log) while the others wait for it.
_SPARK_START = threading.Lock()


def _apply_one(
    project: Project, decl: TableDeclaration, planned: TablePlan | None, now: datetime, jobs: _SparkJobs
) -> TableResult:
    started = time.monotonic()
    if planned is not None and planned.status is TableStatus.ERROR:
        message = (planned.error or {}).get("message", "")
        return TableResult(
            decl.name,
            decl.path,
            status="error",
            error={
                "type": "PlanError",
                "message": f"table {decl.name} could not be planned, so it is not applied: {message}",
            },
        )
    try:
        # Work on the real location, checked against allowed_roots now rather than at validation.
        real = replace(decl, path=guarded_location(project, decl))
        result = apply_table(
            real,
            planned,
            now=now,
            spark_settings=project.spark,
            deleter_factory=jobs.deleter,
        )
        result.path = decl.path
    except RunnerError as error:
        result = TableResult(decl.name, decl.path, status="error", error={"type": error.kind, "message": str(error)})
    result.duration_s = round(time.monotonic() - started, 3)
    return result


def _result_line(result: TableResult) -> str:
    if result.status == "error":
        return f"! {result.name}: failed after {result.duration_s:.1f}s"
    if result.status == "in_sync":
        return f"= {result.name}: in sync"
    return (
        f"~ {result.name}: {count(result.files_deleted, 'file')} deleted ({human_bytes(result.bytes_deleted)}), "
        f"{count(result.files_rewritten, 'file')} rewritten, {result.duration_s:.1f}s"
    )


class _SparkJobs:
    """Starts Spark when a table needs it, quietly unless --debug, and deletes with progress.

    Deletes run where `runner.execute.deleter.choose_engine` says: on the runner's thread pool for
    a local master (no JVM for a clean), as Spark jobs on a cluster or past its size bound. Spark
    starts up front, under its own progress step (start-up is the longest silent wait of a run),
    when the table has changes and either its deletes run on Spark or it declares file sizing (a
    rewrite may follow); otherwise a run never starts it. Its WARN and log4j output goes to
    `target/spark.log` instead of the terminal unless --debug.
    """

    def __init__(
        self,
        project: Project,
        table: str,
        activity: Activity | _Shared,
        spark_log: str | None,
        *,
        rewrites: bool = True,
    ) -> None:
        self.project, self.table, self.activity, self.spark_log = project, table, activity, spark_log
        self.rewrites = rewrites

    def deleter(self) -> _TableDeleter:
        if self.rewrites:
            self._start_spark()
        self.activity.step(f"{self.table}: applying (timeline, deletes, rewrites)")
        return _TableDeleter(self)

    def _start_spark(self) -> SparkSession:
        with _SPARK_START:
            return self._started_spark()

    def _started_spark(self) -> SparkSession:
        from pyspark.sql import SparkSession

        if self.project.spark.remote:  # a Connect session per thread is cheap: get_spark reuses the client
            return get_spark(self.project.spark)
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        self.activity.step(f"starting Spark ({self.project.spark.remote or self.project.spark.master})")
        started = time.monotonic()
        with jvm_output_to(self.spark_log):
            spark = get_spark(self.project.spark)
        where = f"; its log: {self.spark_log}" if self.spark_log else ""
        self.activity.done(f"  started Spark in {time.monotonic() - started:.1f}s{where}")
        return spark


class _TableDeleter:
    """One table's deleter: the engine `choose_engine` picks, with a progress bar; `notes` says
    which engine ran (apply copies it into the run report)."""

    def __init__(self, jobs: _SparkJobs) -> None:
        self.jobs = jobs
        self.notes: list[str] = []

    def __call__(self, storage: Storage, paths: list[str]) -> list[DeleteOutcome]:
        from runner.execute.spark import delete_files

        jobs = self.jobs
        # A Spark Connect endpoint is a cluster too: its deletes run there, not in this process.
        choice = choose_engine(len(paths), jobs.project.spark.remote or jobs.project.spark.master)
        self.notes.append(choice.describe())
        spark = jobs._start_spark() if choice.engine == "spark" else None
        progress.begin("deleting", "files", len(paths), progress.bytes_of(paths))
        outcomes: list[DeleteOutcome] = []
        # Large deletes run in a few rounds rather than one, so the bar moves; each Spark round
        # still spreads its files over FILES_PER_TASK-sized tasks.
        chunk = max(DELETE_CHUNK, -(-len(paths) // 10))
        for start in range(0, len(paths), chunk):
            part = paths[start : start + chunk]
            results = storage.delete_many(part) if spark is None else delete_files(spark, storage, part)
            outcomes += results  # a DeleteOutcome is the storage's DeleteResult
            progress.advance(len(part), progress.bytes_of(part) or 0)
        jobs.activity.step(f"{jobs.table}: recording the clean, then rewriting small files if planned")
        return outcomes


def _load_plan(path: str) -> Plan:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise PlanError(f"cannot read plan file {path}: {error}") from None
    return Plan.from_json(data)


def _planned_for(saved: Plan | None, decl: TableDeclaration) -> TablePlan | None:
    if saved is None:
        return None
    return next((t for t in saved.tables if t.name == decl.name), None)
