"""Shared by the commands: load and select the declarations, parse `--now`, show sizes.

`guarded_location`, `plan_project` and `instant_text` live in `runner.service.locations`.
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timezone

from runner.declarations.loader import load_project
from runner.declarations.model import Project, TableDeclaration
from runner.errors import RunnerError
from runner.hudi.instant import InstantTime
from runner.selection import select_tables
from runner.service.locations import guarded_location, instant_text, plan_project

__all__ = ["guarded_location", "human_bytes", "instant_text", "parse_now", "plan_project", "selected"]


def selected(args: argparse.Namespace) -> tuple[Project, tuple[TableDeclaration, ...]]:
    project = load_project(args.project_dir, target=args.target)
    return project, select_tables(project, args.select, args.exclude, args.state)


def parse_now(text: str | None) -> datetime:
    """`--now`: an instant time (read in the machine's local zone, as Hudi's LOCAL timeline
    timezone does) or ISO-8601 (local unless it carries an offset). Default: the current time."""
    if not text:
        return datetime.now(timezone.utc)
    if re.fullmatch(r"\d{14}|\d{17}", text):
        return InstantTime(text).to_datetime().astimezone().astimezone(timezone.utc)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise RunnerError(
            f"--now: expected an instant time (yyyyMMddHHmmss[SSS]) or ISO-8601, got {text!r}"
        ) from None
    return (value if value.tzinfo else value.astimezone()).astimezone(timezone.utc)


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
