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

The work itself (provenance checks, the per-table loop, threads, deletes, the report) is
`runner.service.apply_tables`; this module parses, asks, renders and picks the exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from runner.commands._common import human_bytes, parse_now, selected
from runner.commands.progress import TableProgress
from runner.commands.render import count, plan_table_view, render_plan
from runner.commands.report import render_report
from runner.commands.result import CommandResult, ExitCode
from runner.commands.terminal import Activity, emit
from runner.declarations.model import Project, TableDeclaration
from runner.errors import PlanError, RunnerError
from runner.output_paths import refuse_blocked_output
from runner.plan.model import Plan, TableStatus
from runner.selection import refuse_excluding_all
from runner.service import RUN_RESULTS, TableResult, apply_tables, load_plan, plan_tables
from runner.service.apply import listed

CONFIRMATION = "yes"
SPARK_LOG = Path("target") / "spark.log"


def run(args: argparse.Namespace) -> CommandResult:
    _refuse_swallowed_plan_file(args)
    project, tables = selected(args)
    if args.plan_file is not None:
        saved = load_plan(args.plan_file)
        covered = _in_plan(saved, tables, narrowed=bool(args.select))
        if not covered:  # the --exclude that took every table of the plan, named as select_tables names it
            refuse_excluding_all(project, [t for t in project.tables if t.name in {p.name for p in saved.tables}],
                                 args.exclude, args.state, covered_by="the plan file")
        tables = covered
    elif args.auto_approve:
        saved = None
    else:
        # Before the question, not after `yes`: apply would refuse a report path that is blocked.
        refuse_blocked_output(Path(project.directory) / RUN_RESULTS, what="the run report")
        answer = _confirmation(args, project, tables)
        saved = answer if isinstance(answer, Plan) else None
        if saved is None:
            said = f" (the answer was {answer!r}; only {CONFIRMATION!r} applies)" if answer else ""
            return CommandResult(ExitCode.FAILURE, f"Apply cancelled{said}; nothing was changed.",
                                 {"cancelled": True, "tables": []})
    spark_log = None if args.debug else str(Path(project.directory) / SPARK_LOG)
    with Activity() as activity:
        report = apply_tables(project, tables, plan=saved, now=None if saved else parse_now(args.now),
                              threads=args.threads, progress=_Shown(activity), spark_log=spark_log)
    # With --project-dir the user is elsewhere: a path relative to the project would mislead.
    shown = str(RUN_RESULTS) if args.project_dir in (".", "") else str(Path(project.directory) / RUN_RESULTS)
    text = render_report(report, shown, declared_in={t.name: t.source_file for t in tables})
    return CommandResult(ExitCode.FAILURE if report.failed else ExitCode.OK, text, report.to_json())


class _Shown:
    """The terminal's progress display, with one result line per table."""

    def __init__(self, activity: Activity) -> None:
        self.activity = activity
        self.step, self.count, self.advance, self.done = activity.step, activity.count, activity.advance, activity.done

    def table_done(self, result: TableResult) -> None:
        self.activity.done(_result_line(result))

    def sink(self, table: str) -> TableProgress:
        return TableProgress(self.activity, table)


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


def _confirmation(args: argparse.Namespace, project: Project, tables: tuple[TableDeclaration, ...]) -> Plan | str:
    """Plan, show the plan and ask; the plan shown is the plan applied. When declined, the answer
    given (stripped; empty for none)."""
    if args.format == "json" or not sys.stdin.isatty():
        raise RunnerError(
            "apply without a plan file asks for confirmation, which needs a terminal"
            + (" and text output" if args.format == "json" else "")
            + "; nothing was applied",
            hint="review a saved plan (`runner plan --out target/plan.json`, then "
            "`runner apply target/plan.json`), or pass --auto-approve to plan and apply in one go "
            "(for scheduled runs).",
        )
    plan = plan_tables(project, tables, now=parse_now(args.now))
    shown = render_plan(plan, project.name, next_step=False)  # the prompt below says what comes next
    emit(shown, pretty=lambda: plan_table_view(plan))  # coloured on a terminal
    sys.stdout.flush()
    if not plan.has_changes:
        return plan  # nothing to confirm; apply reports every table in sync
    print(
        f"\nDo you want to perform these actions? Only '{CONFIRMATION}' will be accepted.\n  Enter a value: ",
        end="",
        flush=True,
    )
    answer = sys.stdin.readline().strip()
    return plan if answer == CONFIRMATION else answer


def _in_plan(plan: Plan, tables: tuple[TableDeclaration, ...], *, narrowed: bool) -> tuple[TableDeclaration, ...]:
    """The selected tables the plan covers; with --select, a selected table missing from the
    plan is an error rather than silently skipped."""
    planned = {t.name for t in plan.tables}
    missing = [t.name for t in tables if t.name not in planned]
    if narrowed and missing:
        raise PlanError(
            f"--select picks {listed(missing)} that the plan file does not cover; nothing was applied",
            hint="narrow --select to tables in the plan, or make a plan that covers them.",
        )
    return tuple(t for t in tables if t.name in planned)


def _result_line(result: TableResult) -> str:
    if result.status == TableStatus.ERROR:
        return f"! {result.name}: failed after {result.duration_s:.1f}s"
    if result.status == TableStatus.IN_SYNC:
        return f"= {result.name}: in sync"
    return (f"~ {result.name}: {count(result.files_deleted, 'file')} deleted ({human_bytes(result.bytes_deleted)}), "
            f"{count(result.files_rewritten, 'file')} rewritten, {result.duration_s:.1f}s")
