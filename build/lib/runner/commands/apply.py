"""`runner apply [plan.json]`: reconcile each selected table, recorded on its timeline.

Exit 0 when every table was applied or already in sync, 1 when any failed. A run report is
written to `<project>/target/run_results.json` either way.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from runner.commands._common import human_bytes, parse_now, selected
from runner.commands.render import count
from runner.commands.report import RunReport, render_report
from runner.commands.result import CommandResult, ExitCode
from runner.commands.terminal import Activity, jvm_output_to
from runner.declarations.model import Project, TableDeclaration
from runner.errors import PlanError, RunnerError
from runner.execute.apply import TableResult, apply_table
from runner.execute.clean import DeleteOutcome
from runner.execute.spark import get_spark
from runner.hudi.storage import Storage
from runner.plan.model import Plan, TablePlan

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_LOG = Path("target") / "spark.log"
RUN_RESULTS = Path("target") / "run_results.json"
DELETE_CHUNK = 5_000


def run(args: argparse.Namespace) -> CommandResult:
    project, tables = selected(args)
    saved = _load_plan(args.plan_file) if args.plan_file else None
    now = parse_now(saved.now if saved else args.now)
    report = RunReport.start(project)
    spark_log = None if args.debug else str(Path(project.directory) / SPARK_LOG)
    with Activity() as activity:
        for index, decl in enumerate(tables, start=1):
            planned = _planned_for(saved, decl)
            if saved is not None and planned is None:
                continue
            activity.step(f"[{index}/{len(tables)}] {decl.name}: reading the timeline, listing files, planning")
            result = _apply_one(project, decl, planned, now, _SparkJobs(project, decl.name, activity, spark_log))
            activity.done(_result_line(result))
            report.tables.append(result)
    report.finish()
    results = Path(project.directory) / RUN_RESULTS
    report.write(results)
    failed = any(t.status == "error" for t in report.tables)
    # With --project-dir the user is elsewhere: a path relative to the project would mislead.
    shown = str(RUN_RESULTS) if args.project_dir in (".", "") else str(results)
    return CommandResult(ExitCode.FAILURE if failed else ExitCode.OK, render_report(report, shown), report.to_json())


def _apply_one(project: Project, decl: TableDeclaration, planned: TablePlan | None, now: datetime,
               jobs: _SparkJobs) -> TableResult:
    started = time.monotonic()
    try:
        result = apply_table(
            decl, planned, now=now, spark_settings=project.spark, deleter_factory=jobs.deleter,
        )
    except RunnerError as error:
        result = TableResult(decl.name, decl.path, status="error",
                             error={"type": error.kind, "message": str(error)})
    result.duration_s = round(time.monotonic() - started, 3)
    return result


def _result_line(result: TableResult) -> str:
    if result.status == "error":
        return f"! {result.name}: failed after {result.duration_s:.1f}s"
    if result.status == "in_sync":
        return f"= {result.name}: in sync"
    return (f"~ {result.name}: {count(result.files_deleted, 'file')} deleted ({human_bytes(result.bytes_deleted)}), "
            f"{count(result.files_rewritten, 'file')} rewritten, {result.duration_s:.1f}s")


class _SparkJobs:
    """Starts Spark when a table has work, quietly unless --debug, and deletes with progress.

    Spark starts as soon as a table turns out to need changes (deletes and rewrites both run as
    Spark jobs), under its own progress step: start-up is the longest silent wait of a run. Its
    WARN and log4j output goes to `target/spark.log` instead of the terminal unless --debug.
    """

    def __init__(self, project: Project, table: str, activity: Activity, spark_log: str | None) -> None:
        self.project, self.table, self.activity, self.spark_log = project, table, activity, spark_log

    def deleter(self) -> Callable[[Storage, list[str]], list[DeleteOutcome]]:
        self._start_spark()
        self.activity.step(f"{self.table}: applying (timeline, deletes, rewrites)")
        return self._delete

    def _start_spark(self) -> SparkSession:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        self.activity.step(f"starting Spark ({self.project.spark.master})")
        started = time.monotonic()
        with jvm_output_to(self.spark_log):
            spark = get_spark(self.project.spark)
        where = f"; its log: {self.spark_log}" if self.spark_log else ""
        self.activity.done(f"  started Spark in {time.monotonic() - started:.1f}s{where}")
        return spark

    def _delete(self, storage: Storage, paths: list[str]) -> list[DeleteOutcome]:
        from runner.execute.spark import delete_files

        spark = self._start_spark()
        self.activity.count(f"{self.table}: deleting {count(len(paths), 'file')}", len(paths))
        outcomes: list[DeleteOutcome] = []
        # Large deletes run as a few jobs rather than one, so the bar moves; each job still
        # spreads its files over FILES_PER_TASK-sized tasks.
        chunk = max(DELETE_CHUNK, -(-len(paths) // 10))
        for start in range(0, len(paths), chunk):
            part = paths[start:start + chunk]
            outcomes += [DeleteOutcome(r.path, r.deleted, r.error) for r in delete_files(spark, storage, part)]
            self.activity.advance(len(part))
        self.activity.step(f"{self.table}: recording the clean, then rewriting small files if planned")
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
