"""Shared by the commands: load and select the declarations, parse `--now`, show sizes.

`guarded_location`, `plan_project` and `instant_text` live in `runner.service.locations`, which is
not imported here: the service layer loads pyarrow and the executor, and `runner validate` and
`runner ls` need neither.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime

from runner.declarations.loader import load_project
from runner.declarations.model import Project, TableDeclaration
from runner.errors import DeclarationError, RunnerError
from runner.hudi.instant import InstantTime
from runner.selection import select_tables

__all__ = ["human_bytes", "load", "outside_project", "parse_now", "selected"]


def outside_project(args: argparse.Namespace) -> bool:
    """`--project-dir` names a folder other than the current one: file names relative to the
    project would then point at the wrong place, so every command shows them absolute."""
    return os.path.realpath(args.project_dir or ".") != os.path.realpath(os.getcwd())


def load(args: argparse.Namespace, *, new_files: Mapping[str, str] | None = None) -> Project:
    """The project of `--project-dir`; with it given, problems name their files by absolute path.

    `new_files`: declarations not written yet, checked beside the others (see `load_project`).
    """
    try:
        project = load_project(args.project_dir, target=args.target, new_files=new_files)
    except DeclarationError as error:
        if not outside_project(args):
            raise
        root = os.path.abspath(args.project_dir)
        raise DeclarationError([replace(p, file=os.path.join(root, p.file) if p.file else p.file,
                                        message=_absolute_files_in(p.message, root))
                                for p in error.problems]) from None
    return project


# A project file named inside a message ("also declared in tables/b.yml", "(project.yml line 4)").
_FILE_IN_TEXT = re.compile(r"(?<![\w/.-])([\w-][\w./-]*\.ya?ml)(?![\w/-])")


def _absolute_files_in(message: str, root: str) -> str:
    """`message` with the project's own files (those that exist under `root`) named absolutely."""
    def absolute(match: re.Match[str]) -> str:
        name = match.group(1)
        return os.path.join(root, name) if os.path.isfile(os.path.join(root, name)) else name

    return _FILE_IN_TEXT.sub(absolute, message)


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


def parse_now(text: str | None) -> datetime:
    """`--now`: an instant time (read in the machine's local zone, as Hudi's LOCAL timeline
    timezone does) or ISO-8601 (local unless it carries an offset). Default: the current time."""
    if text is None:
        return datetime.now(UTC)
    expected = f"--now: expected an instant time (yyyyMMddHHmmss[SSS]) or ISO-8601, got {text!r}"
    if not text.strip():  # `--now "$NOW"` with NOW unset: planning as of the wall clock would hide it
        raise RunnerError(f"{expected}: the value is empty")
    if re.fullmatch(r"\d{14}|\d{17}", text, re.ASCII):  # other scripts' digits name no instant time
        try:
            value = InstantTime(text).to_datetime()
        except ValueError as error:  # month 13, February 30: no time at all, never another one
            raise RunnerError(f"{expected}: {error}") from None
    else:
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise RunnerError(expected) from None
    # The plan names it as a local instant time (four-digit years) and apply reads it back in UTC:
    # year 10000 in either was an internal OverflowError, year 999 a 16-digit instant time.
    try:
        moment = (value if value.tzinfo else value.astimezone()).astimezone(UTC)
        local = moment.astimezone()
    except (OverflowError, ValueError):
        local = None
    if local is None or local.year < 1000:
        raise RunnerError(f"{expected}: it lies outside the years 1000 to 9999 that instant times name")
    return moment


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
