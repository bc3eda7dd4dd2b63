"""`runner plan`: how far each selected table is from its declaration; changes nothing."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.commands._common import (
    guarded_location,
    instant_text,
    parse_now,
    plan_project,
    selected,
)
from runner.commands.render import plan_table_view, render_plan
from runner.commands.result import CommandResult, ExitCode
from runner.declarations.fingerprint import declaration_fingerprint
from runner.declarations.model import Project, TableDeclaration
from runner.errors import RunnerError, StorageError
from runner.execute.apply import plan_one
from runner.plan.model import Plan, TablePlan, TableStatus
from runner.storage import storage_for


def build_plan(project: Project, tables: tuple[TableDeclaration, ...], *, now: datetime) -> Plan:
    """Plan every table; a table that cannot be read becomes an `error` entry, not an abort.

    The plan records the project it was made in and a fingerprint of each table's declaration,
    so that apply can refuse it anywhere else, or after the declaration changed.
    """
    return Plan(
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
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
    """1 failed > 2 changes pending > 3 drift only > 0 in sync.

    Like Terraform's -detailed-exitcode, 0, 1 and 2 keep their meaning; drift gets its own code, 3,
    only when nothing else is pending, so `plan || [ $? -eq 2 ]` before an apply still works and a
    drift-only run is never mistaken for "in sync".
    """
    if plan.has_errors:
        return ExitCode.FAILURE
    if plan.has_changes:
        return ExitCode.CHANGES
    return ExitCode.DRIFT if plan.has_drift else ExitCode.OK


def _write_plan(out: Path, data: dict[str, Any]) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2) + "\n")
    except OSError as error:
        raise StorageError(
            f"--out: cannot write the plan to {out.resolve()}: {error.strerror or error}",
            hint="choose a writable path for --out (no table was touched).",
        ) from None


def run(args: argparse.Namespace) -> CommandResult:
    project, tables = selected(args)
    plan = build_plan(project, tables, now=parse_now(args.now))
    data = plan.to_json()
    if args.out:
        _write_plan(Path(args.out), data)
    text = render_plan(plan, project.name, verbose=getattr(args, "verbose", False))
    return CommandResult(exit_code(plan), text, data, pretty=(lambda: plan_table_view(plan)) if plan.tables else None)
