"""`runner validate`: check every declaration of the project; exit 0 when valid, 1 when not.

Validation always covers the whole project, since one bad file (a duplicate name, a broken
project.yml) can make others wrong; `--select` only narrows which tables are reported as checked.
This module imports nothing from Spark: validating must be fast and safe on any machine.
"""

from __future__ import annotations

import argparse
import os

from runner.commands._common import load, outside_project
from runner.commands.result import CommandResult, ExitCode
from runner.errors import DeclarationError, Problem
from runner.selection import select_tables


def run(args: argparse.Namespace) -> CommandResult:
    """Load and check the project in `args.project_dir`, then report the selected tables.

    Invalid declarations are an expected outcome, returned as exit 1 with every problem; a bad
    `--select` raises `SelectionError` for the CLI to report.
    """
    try:
        project = load(args)
    except DeclarationError as error:
        return _invalid(error.problems)
    tables = select_tables(project, args.select, args.exclude, args.state)
    names = [table.name for table in tables]
    lines = [f"project {project.name}: declarations are valid ({_count(len(project.tables), 'table')})"]
    if not tables:
        lines.append("no tables selected")
    else:
        lines.append(f"checked {_count(len(tables), 'table')}:")
        width = max(len(name) for name in names)
        shown = (lambda file: os.path.join(project.directory, file)) if outside_project(args) else str
        lines += [f"  {table.name:<{width}}  {shown(table.source_file)}" for table in tables]
    return CommandResult(ExitCode.OK, "\n".join(lines), {"valid": True, "tables": names, "problems": []})


def _invalid(problems: tuple[Problem, ...]) -> CommandResult:
    files = {problem.file for problem in problems}
    lines = [str(problem) for problem in problems]
    lines.append(f"{_count(len(problems), 'problem')} in {_count(len(files), 'file')}; the declarations are invalid")
    data = {"valid": False, "tables": [], "problems": [problem.to_json() for problem in problems]}
    return CommandResult(ExitCode.FAILURE, "\n".join(lines), data)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
