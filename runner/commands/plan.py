"""`runner plan`: how far each selected table is from its declaration; changes nothing."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from runner.commands._common import (
    guarded_location,
    instant_text,
    parse_now,
    plan_project,
    selected,
)
from runner.commands.render import render_plan
from runner.commands.result import CommandResult, ExitCode
from runner.declarations.fingerprint import declaration_fingerprint
from runner.declarations.model import Project, TableDeclaration
from runner.errors import RunnerError
from runner.execute.apply import plan_one
from runner.hudi.storage import storage_for
from runner.plan.model import Plan, TablePlan, TableStatus


def build_plan(project: Project, tables: tuple[TableDeclaration, ...], *, now: datetime) -> Plan:
    """Plan every table; a table that cannot be read becomes an `error` entry, not an abort.

    The plan records the project it was made in and a fingerprint of each table's declaration,
    so that apply can refuse it anywhere else, or after the declaration changed.
    """
    return Plan(
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        now=instant_text(now),
        tables=tuple(_plan_or_error(project, decl, now) for decl in tables),
        project=plan_project(project),
    )


def _plan_or_error(project: Project, decl: TableDeclaration, now: datetime) -> TablePlan:
    fingerprint = declaration_fingerprint(decl)
    try:
        real = guarded_location(project, decl)
        planned = plan_one(replace(decl, path=real), storage_for(real), now=now)
        return replace(planned, path=decl.path, declaration_fingerprint=fingerprint)
    except RunnerError as error:
        return TablePlan(decl.name, decl.path, TableStatus.ERROR, error={"type": error.kind, "message": str(error)},
                         declaration_fingerprint=fingerprint)


def exit_code(plan: Plan) -> ExitCode:
    if plan.has_errors:
        return ExitCode.FAILURE
    return ExitCode.CHANGES if plan.has_changes else ExitCode.OK


def run(args: argparse.Namespace) -> CommandResult:
    project, tables = selected(args)
    plan = build_plan(project, tables, now=parse_now(args.now))
    data = plan.to_json()
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2) + "\n")
    return CommandResult(exit_code(plan), render_plan(plan, project.name), data)
