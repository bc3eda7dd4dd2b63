"""`runner plan`: how far each selected table is from its declaration; changes nothing.

The planning itself is `runner.service.plan_tables`; this module parses, renders and picks the
exit code.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from runner.commands._common import outside_project, parse_now, selected
from runner.commands.render import plan_table_view, render_plan
from runner.commands.result import CommandResult, ExitCode
from runner.errors import StorageError
from runner.output_paths import refuse_blocked_output, replace_text
from runner.plan.model import Plan
from runner.service import plan_tables


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


def _refuse_blocked_out(out: Path) -> None:
    """Before planning (which reads every table): a folder where the plan file goes, or a file
    where one of its folders goes."""
    try:
        refuse_blocked_output(out.absolute(), what="the plan", fix="pass another path with --out.")
    except StorageError as error:
        raise StorageError(f"--out: {error.message}", hint=error.hint) from None


def _write_plan(out: Path, data: dict[str, Any]) -> None:
    try:
        # Renamed into place whole: an interrupted plan never leaves half a plan file to apply.
        replace_text(out, json.dumps(data, indent=2) + "\n")
    except OSError as error:
        raise StorageError(
            f"--out: cannot write the plan to {out.resolve()}: {error.strerror or error}",
            hint="choose a writable path for --out (no table was touched).",
        ) from None


def _apply_command(args: argparse.Namespace) -> str | None:
    """The command that applies the plan just saved with --out, run from where the user is."""
    if not args.out:
        return None
    elsewhere = f" --project-dir {shlex.quote(args.project_dir)}" if outside_project(args) else ""
    return f"runner apply {shlex.quote(args.out)}{elsewhere}"


def run(args: argparse.Namespace) -> CommandResult:
    project, tables = selected(args)
    now = parse_now(args.now)
    if args.out:
        _refuse_blocked_out(Path(args.out))
    plan = plan_tables(project, tables, now=now)
    data = plan.to_json()
    if args.out:
        _write_plan(Path(args.out), data)
    text = render_plan(plan, project.name, verbose=getattr(args, "verbose", False), apply_command=_apply_command(args),
                       declared_in={t.name: t.source_file for t in tables})
    return CommandResult(exit_code(plan), text, data, pretty=(lambda: plan_table_view(plan)) if plan.tables else None)
