"""`runner apply [plan.json]`: reconcile each selected table, recorded on its timeline.

What gets applied is always a reviewed plan, as in Terraform:
- with a plan file, exactly that plan, and only in the project and for the declarations it was
  made from (anything else is refused before a single table is touched);
- without one, on a terminal, the plan is shown and applied only after the user types `yes`;
- `--auto-approve` plans and applies in one go, for scheduled runs; without a terminal, apply
  needs a plan file or `--auto-approve`.

With `--threads N` (or `threads:` in project.yml or the target) up to N tables are applied at once
in one Spark session; each keeps its own lock, progress line and entry in the report, and one
table's failure never stops the others.

Exit 0 when every table was applied or already in sync, 1 when any failed or the user declined.
A run report is written to `<project>/target/run_results.json` whenever tables were applied.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from runner.commands._common import guarded_location, parse_now, plan_project, selected
from runner.commands.plan import build_plan
from runner.commands.render import render_plan
from runner.commands.report import RunReport, render_report
from runner.commands.result import CommandResult, ExitCode
from runner.declarations.fingerprint import declaration_fingerprint
from runner.declarations.model import Project, TableDeclaration
from runner.errors import PlanError, RunnerError
from runner.execute.apply import TableResult, apply_table
from runner.execute.spark import get_spark
from runner.plan.model import Plan, TablePlan, TableStatus
from runner.selection import did_you_mean

CONFIRMATION = "yes"


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
    report = RunReport.start(project)
    work = [(decl, _planned_for(saved, decl)) for decl in tables]
    work = [(decl, planned) for decl, planned in work if saved is None or planned is not None]
    report.tables.extend(apply_all(project, work, now, threads=args.threads or project.threads))
    report.finish()
    report.write(Path(project.directory) / "target" / "run_results.json")
    failed = any(t.status == "error" for t in report.tables)
    return CommandResult(ExitCode.FAILURE if failed else ExitCode.OK, render_report(report), report.to_json())


def _refuse_swallowed_plan_file(args: argparse.Namespace) -> None:
    """`--select t plan.json` gives plan.json to --select (it takes several values): say so rather
    than re-planning and deleting what the reviewed plan never listed."""
    if args.plan_file is not None:
        return
    state = [args.state] if args.state else []
    for option, specs in (("--select", args.select), ("--exclude", args.exclude), ("--state", state)):
        for spec in specs:
            if spec.endswith(".json") or os.path.isfile(spec):
                raise RunnerError(
                    f'{option} took "{spec}" as its value, but it looks like a plan file; '
                    "nothing was applied",
                    hint=f"put the plan file before the options (`runner apply {spec} {option} ...`), "
                    f"or write {option}=VALUE.",
                )


def _confirmed_plan(args: argparse.Namespace, project: Project,
                    tables: tuple[TableDeclaration, ...]) -> Plan | None:
    """Plan, show the plan and ask; the plan shown is the plan applied. None when declined."""
    if args.format == "json" or not sys.stdin.isatty():
        raise RunnerError(
            "apply without a plan file asks for confirmation, which needs a terminal"
            + (" and text output" if args.format == "json" else "") + "; nothing was applied",
            hint="review a saved plan (`runner plan --out target/plan.json`, then "
            "`runner apply target/plan.json`), or pass --auto-approve to plan and apply in one go "
            "(for scheduled runs).",
        )
    plan = build_plan(project, tables, now=parse_now(args.now))
    print(render_plan(plan, project.name), flush=True)
    if not plan.has_changes:
        return plan  # nothing to confirm; apply reports every table in sync
    print(f"\nDo you want to perform these actions? Only '{CONFIRMATION}' will be accepted.\n"
          "  Enter a value: ", end="", flush=True)
    answer = sys.stdin.readline()
    return plan if answer.strip() == CONFIRMATION else None


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
        raise PlanError(f"the plan lists {_listed(repeated)} more than once; nothing was applied",
                        hint="re-create the plan with `runner plan` rather than editing it.")
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


def apply_all(project: Project, work: list[tuple[TableDeclaration, TablePlan | None]], now: datetime, *,
              threads: int) -> list[TableResult]:
    """Apply each table, up to `threads` at once in one Spark session, results in declaration order.

    Each table has its own lock, plan and result; a failure in one (even a bug) becomes that
    table's error and never stops the others.
    """
    def one(index: int, decl: TableDeclaration, planned: TablePlan | None) -> TableResult:
        _progress(f"[{index}/{len(work)}] applying {decl.name} ...")
        try:
            return _apply_one(project, decl, planned, now)
        except Exception as error:  # a bug in one table's apply must not take the others down
            return TableResult(decl.name, decl.path, status="error", error={
                "type": "InternalError", "message": f"internal error: {type(error).__name__}: {error}"})

    if threads <= 1 or len(work) <= 1:
        return [one(i, decl, planned) for i, (decl, planned) in enumerate(work, start=1)]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="apply") as pool:
        futures = [pool.submit(one, i, decl, planned) for i, (decl, planned) in enumerate(work, start=1)]
        return [future.result() for future in futures]


def _apply_one(project: Project, decl: TableDeclaration, planned: TablePlan | None, now: datetime) -> TableResult:
    started = time.monotonic()
    if planned is not None and planned.status is TableStatus.ERROR:
        message = (planned.error or {}).get("message", "")
        return TableResult(decl.name, decl.path, status="error", error={
            "type": "PlanError", "message": f"table {decl.name} could not be planned, so it is not applied: {message}"})
    try:
        # Work on the real location, checked against allowed_roots now rather than at validation.
        real = replace(decl, path=guarded_location(project, decl))
        result = apply_table(
            real, planned, now=now, spark_settings=project.spark,
            deleter_factory=lambda: _spark_deleter(project),
        )
        result.path = decl.path
    except RunnerError as error:
        result = TableResult(decl.name, decl.path, status="error",
                             error={"type": error.kind, "message": str(error)})
    result.duration_s = round(time.monotonic() - started, 3)
    _progress(f"    {decl.name}: {result.status}, {result.files_deleted} files deleted, "
              f"{result.files_rewritten} rewritten, {result.duration_s:.1f}s")
    return result


def _spark_deleter(project: Project):  # type: ignore[no-untyped-def]
    from runner.execute.clean import DeleteOutcome
    from runner.execute.spark import delete_files

    def delete(storage, paths):  # type: ignore[no-untyped-def]
        # The JVM starts only when there is something to delete.
        spark = get_spark(project.spark)
        return [DeleteOutcome(r.path, r.deleted, r.error) for r in delete_files(spark, storage, paths)]

    return delete


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
