"""Where a project's tables really are, and how a plan names its project and its time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runner.declarations.model import Project, TableDeclaration
from runner.declarations.paths import real_location
from runner.declarations.rules import roots_refusal
from runner.errors import RefusedError
from runner.hudi.instant import InstantTime
from runner.plan.model import PlanProject


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


def instant_text(now: datetime) -> str:
    """`now` as a local instant time, for plan.json."""
    return str(InstantTime.from_datetime(now.astimezone().replace(tzinfo=None)))


def offset_text(now: datetime) -> str:
    """The local zone's UTC offset at `now` (`+09:00`), which makes `instant_text(now)` one moment
    wherever it is read: a plan made in CI in one zone is applied on a machine in another."""
    offset = now.astimezone().utcoffset() or timedelta(0)
    sign, minutes = ("-", -offset) if offset < timedelta(0) else ("+", offset)
    hours, rest = divmod(int(minutes.total_seconds()) // 60, 60)
    return f"{sign}{hours:02d}:{rest:02d}"


def plan_moment(now: str, offset: str | None) -> datetime:
    """A plan's `now` (a local instant time) as an aware datetime: at its recorded UTC offset, or,
    for a plan without one (made by an older runner), in this machine's zone."""
    local = InstantTime(now).to_datetime()
    if offset is None:
        return local.astimezone().astimezone(UTC)
    return datetime.fromisoformat(f"{local.isoformat()}{offset}").astimezone(UTC)
