"""Shared by the commands: load and select the declarations, guard table paths, parse `--now`."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import replace
from datetime import UTC, datetime

from runner.declarations.loader import load_project
from runner.declarations.model import Project, TableDeclaration
from runner.declarations.paths import real_location
from runner.declarations.rules import roots_refusal
from runner.errors import DeclarationError, RefusedError, RunnerError
from runner.hudi.instant import InstantTime
from runner.plan.model import PlanProject
from runner.selection import select_tables


def outside_project(args: argparse.Namespace) -> bool:
    """`--project-dir` names a folder other than the current one: file names relative to the
    project would then point at the wrong place, so every command shows them absolute."""
    return os.path.realpath(args.project_dir or ".") != os.path.realpath(os.getcwd())


def load(args: argparse.Namespace) -> Project:
    """The project of `--project-dir`; with it given, problems name their files by absolute path."""
    try:
        project = load_project(args.project_dir, target=args.target)
    except DeclarationError as error:
        if not outside_project(args):
            raise
        root = os.path.abspath(args.project_dir)
        raise DeclarationError([replace(p, file=os.path.join(root, p.file)) if p.file else p
                                for p in error.problems]) from None
    return project


def selected(args: argparse.Namespace) -> tuple[Project, tuple[TableDeclaration, ...]]:
    project = load(args)
    tables = select_tables(project, args.select, args.exclude, args.state)
    if not outside_project(args):
        return project, tables
    # Selection matched the relative names (`path:` selectors, state:modified); from here on the
    # declarations are only shown, so they carry absolute file names.
    project = replace(project, tables=tuple(_absolute(project, t) for t in project.tables))
    return project, tuple(_absolute(project, t) for t in tables)


def _absolute(project: Project, decl: TableDeclaration) -> TableDeclaration:
    return replace(decl, source_file=os.path.join(project.directory, decl.source_file))


def guarded_location(project: Project, decl: TableDeclaration) -> str:
    """The table's location with symbolic links followed, once it is known to lie inside
    `allowed_roots`. Validation checked this too, but links can change between validating and
    acting, so plan and apply check again and then work on the real path only.

    Raises:
        RefusedError: the table's path, or where its links lead, is outside every allowed root.
    """
    refusal = roots_refusal(decl.path, project.allowed_roots)
    if refusal is not None:
        raise RefusedError(f"table {decl.name} ({decl.source_file}): path {refusal}; nothing was read or written")
    return real_location(decl.path)


def plan_project(project: Project) -> PlanProject:
    """How a plan names the project it was made in (directory with links followed)."""
    return PlanProject(project.name, real_location(project.directory))


def parse_now(text: str | None) -> datetime:
    """`--now`: an instant time (read in the machine's local zone, as Hudi's LOCAL timeline
    timezone does) or ISO-8601 (local unless it carries an offset). Default: the current time."""
    if not text:
        return datetime.now(UTC)
    if re.fullmatch(r"\d{14}|\d{17}", text):
        return InstantTime(text).to_datetime().astimezone().astimezone(UTC)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise RunnerError(
            f"--now: expected an instant time (yyyyMMddHHmmss[SSS]) or ISO-8601, got {text!r}"
        ) from None
    return (value if value.tzinfo else value.astimezone()).astimezone(UTC)


def instant_text(now: datetime) -> str:
    """`now` as a local instant time, for plan.json."""
    return str(InstantTime.from_datetime(now.astimezone().replace(tzinfo=None)))


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
