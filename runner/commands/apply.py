"""`runner apply [plan.json]`: reconcile each selected table, recorded on its timeline.

Exit 0 when every table was applied or already in sync, 1 when any failed. A run report is
written to `<project>/target/run_results.json` either way.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path

from runner.commands._common import parse_now, selected
from runner.commands.report import RunReport, render_report
from runner.commands.result import CommandResult, ExitCode
from runner.declarations.model import Project, TableDeclaration
from runner.errors import PlanError, RunnerError
from runner.execute.apply import TableResult, apply_table
from runner.execute.deleter import Deleter
from runner.plan.model import Plan, TablePlan


def run(args: argparse.Namespace) -> CommandResult:
    project, tables = selected(args)
    saved = _load_plan(args.plan_file) if args.plan_file else None
    now = parse_now(saved.now if saved else args.now)
    report = RunReport.start(project)
    for index, decl in enumerate(tables, start=1):
        planned = _planned_for(saved, decl)
        if saved is not None and planned is None:
            continue
        _progress(f"[{index}/{len(tables)}] applying {decl.name} ...")
        report.tables.append(_apply_one(project, decl, planned, now))
    report.finish()
    report.write(Path(project.directory) / "target" / "run_results.json")
    failed = any(t.status == "error" for t in report.tables)
    return CommandResult(ExitCode.FAILURE if failed else ExitCode.OK, render_report(report), report.to_json())


def _apply_one(project: Project, decl: TableDeclaration, planned: TablePlan | None, now: datetime) -> TableResult:
    started = time.monotonic()
    try:
        result = apply_table(
            decl, planned, now=now, spark_settings=project.spark,
            deleter_factory=lambda: _spark_deleter(project),
        )
    except RunnerError as error:
        result = TableResult(decl.name, decl.path, status="error",
                             error={"type": error.kind, "message": str(error)})
    result.duration_s = round(time.monotonic() - started, 3)
    _progress(f"    {decl.name}: {result.status}, {result.files_deleted} files deleted, "
              f"{result.files_rewritten} rewritten, {result.duration_s:.1f}s")
    return result


def _spark_deleter(project: Project) -> Deleter:
    # Threads or Spark by the job's size and the master; the JVM starts only if Spark is chosen.
    return Deleter(project.spark)


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


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        print(message, file=sys.stderr, flush=True)
