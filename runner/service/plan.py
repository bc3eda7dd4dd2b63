"""`plan_tables`: plan every selected table; `load_plan`: read a saved plan, checked on load."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.declarations.fingerprint import declaration_fingerprint
from runner.declarations.model import Project, TableDeclaration
from runner.declarations.schema import SCHEMA_DIR
from runner.errors import PlanError, RunnerError
from runner.execute.clean import check_pending_recordable, check_recordable
from runner.plan.model import FORMAT_VERSION, Plan, TablePlan, TableStatus
from runner.plan.steps import FinishPendingClean, StepKind
from runner.planner import plan_one
from runner.service.locations import guarded_location, instant_text, offset_text, plan_moment, plan_project
from runner.storage import storage_for

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

PLAN_SCHEMA = SCHEMA_DIR / "plan.schema.json"


def plan_tables(project: Project, tables: Sequence[TableDeclaration] | None = None, *,
                now: datetime | None = None) -> Plan:
    """Plan `tables` (default: every table of the project) as of `now` (default: the current time).

    Reads storage, never writes. A table that cannot be read becomes an `error` entry rather than
    an exception, so one bad table never hides the others. The plan records the project it was
    made in and a fingerprint of each table's declaration, so that apply refuses it anywhere
    else, or after a declaration changed.
    """
    now = now or datetime.now(UTC)
    chosen = project.tables if tables is None else tuple(tables)
    return Plan(
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        now=instant_text(now),
        now_offset=offset_text(now),
        tables=tuple(_plan_or_error(project, decl, now) for decl in chosen),
        project=plan_project(project),
    )


def _plan_or_error(project: Project, decl: TableDeclaration, now: datetime) -> TablePlan:
    fingerprint = declaration_fingerprint(decl)
    try:
        real = guarded_location(project, decl)
        storage = storage_for(real)
        planned = plan_one(replace(decl, path=real), storage, now=now)
        # Apply checks these before it finishes a pending clean or records a new one; the plan must
        # not show as work what every apply would refuse.
        finishing = planned.step(StepKind.FINISH_PENDING_CLEAN)
        if isinstance(finishing, FinishPendingClean) and finishing.instants:
            check_pending_recordable(storage, finishing.instants)
        if planned.clean is not None and not planned.clean.is_empty:
            check_recordable(planned.clean, storage)
        return replace(planned, path=decl.path, declaration_fingerprint=fingerprint)
    except RunnerError as error:
        return TablePlan(decl.name, decl.path, TableStatus.ERROR, error=error.to_json(),
                         declaration_fingerprint=fingerprint)


def load_plan(path: str | Path) -> Plan:
    """Read a plan file written by `runner plan --out`, checked against `schemas/plan.schema.json`.

    Raises:
        PlanError: the file cannot be read, is not JSON, was made by another format version, or
            does not match the schema (naming the file and the JSON path at fault).
    """
    if not str(path).strip():
        raise PlanError("the plan file argument is empty: expected the path of a file written by "
                        "`runner plan --out`; nothing was applied", hint="pass the plan file's path, such as "
                        "target/plan.json.")
    data = _plan_json(Path(path))
    version = data.get("format_version") if isinstance(data, dict) else None
    if isinstance(version, int) and version < FORMAT_VERSION:
        raise PlanError(
            f"plan file {path} has format_version {version}: it was made by an older runner, and this runner "
            f"reads format_version {FORMAT_VERSION}; nothing was applied",
            hint="run `runner plan` again (with --out) and apply the new plan.",
        )
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise PlanError(
            f"plan file {path} has format_version {version}: it was made by a newer runner, and this runner "
            f"reads format_version {FORMAT_VERSION}; nothing was applied",
            hint="apply it with the runner version that made it, or make a new plan with this one.",
        )
    problems = sorted(_plan_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if problems:
        first = problems[0]
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path)
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
        # jsonschema's message for a const names only what was expected; a reader needs both.
        said = f"expected {json.dumps(first.validator_value)}, found {json.dumps(first.instance)}" \
            if first.validator == "const" else first.message
        raise PlanError(
            f"plan file {path} does not match schemas/plan.schema.json at {where}: {said}{more}; "
            "nothing was applied",
            hint="re-create the plan with `runner plan --out` rather than editing it.",
        )
    _check_now(path, data["now"], data.get("now_offset"))
    return Plan.from_json(data)


def _check_now(path: str | Path, now: str, offset: str | None) -> None:
    """The moment apply measures KEEP_LATEST_BY_HOURS from: `now` read at `now_offset` (both already
    of the schema's patterns, which admit any 17 digits) as a time in UTC."""
    hint = "re-create the plan with `runner plan --out` rather than editing it."
    try:
        plan_moment(now, offset)
    except ValueError as error:  # from the digits: month 13, February 30
        raise PlanError(
            f"plan file {path}: $.now is no calendar time: expected an instant time (yyyyMMddHHmmssSSS), "
            f"got {now!r} ({error}); nothing was applied", hint=hint,
        ) from None
    except OverflowError:  # 9999-12-31 at -12:00 is in year 10000 in UTC
        at = "" if offset is None else f" at $.now_offset {offset!r}"
        raise PlanError(
            f"plan file {path}: $.now {now!r}{at} lies outside the years 1000 to 9999 that instant times "
            "name; nothing was applied", hint=hint,
        ) from None


_NEW_PLAN = ("pass a file written by `runner plan --out`, unedited; make a new one with "
             "`runner plan --out target/plan.json`.")


def _plan_json(path: Path) -> Any:
    """The plan file's JSON, or a PlanError naming the file, what was found and the fix."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError(f"plan file {path}: not found; nothing was applied",
                        hint="check the path, or " + _NEW_PLAN) from None
    except IsADirectoryError:
        raise PlanError(f"plan file {path}: is a folder, expected a JSON file; nothing was applied",
                        hint="name the plan file itself (such as target/plan.json).") from None
    except UnicodeDecodeError as error:
        raise PlanError(f"plan file {path}: expected JSON text, found bytes that are not UTF-8 (at byte "
                        f"{error.start}); nothing was applied", hint=_NEW_PLAN) from None
    except OSError as error:
        raise PlanError(f"plan file {path}: cannot be read: {error.strerror or error}; nothing was applied",
                        hint="make it readable, or " + _NEW_PLAN) from None
    try:
        return json.loads(text, parse_int=_plan_int, object_pairs_hook=_plan_object)
    except json.JSONDecodeError as error:
        raise PlanError(f"plan file {path}: not valid JSON (line {error.lineno}, column {error.colno}: "
                        f"{error.msg}); nothing was applied", hint=_NEW_PLAN) from None
    except _NotAPlan as error:
        raise PlanError(f"plan file {path}: not a plan: {error}; nothing was applied", hint=_NEW_PLAN) from None
    except RecursionError:
        raise PlanError(f"plan file {path}: not a plan: its JSON is nested too deeply to read; nothing was applied",
                        hint=_NEW_PLAN) from None


class _NotAPlan(ValueError):
    """Valid JSON that no plan holds, found while decoding."""


def _plan_int(text: str) -> int:
    # Python converts at most 4,300 digits (a ValueError); a plan's numbers are sizes and counts.
    if len(text.lstrip("-")) > 100:
        raise _NotAPlan(f"it holds a number {len(text.lstrip('-'))} digits long")
    return int(text)


def _plan_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JSON decoders keep one of a repeated key's values, the last in Python's: what apply would do
    # need not be what the reviewer read.
    found = dict(pairs)
    if len(found) != len(pairs):
        keys = [key for key, _ in pairs]
        twice = next(key for index, key in enumerate(keys) if key in keys[:index])
        raise _NotAPlan(f'the key "{twice}" appears twice in one object, and a reader may take either value')
    return found


@functools.cache
def _plan_validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator  # only a saved plan needs it; keep start-up light

    schema: dict[str, Any] = json.loads(PLAN_SCHEMA.read_text())
    return Draft202012Validator(schema)
