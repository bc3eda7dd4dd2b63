"""A plan is data: what apply will do to each table, serialisable and versioned.

`runner plan` renders a `Plan`; `runner apply plan.json` re-plans each table under its lock and
lets the saved plan only narrow that fresh plan (`runner.execute.narrow`), after checking its
`requirements` (the timeline it was computed from). Each table's work is a tuple of typed steps
(`runner.plan.steps`). The JSON form is described by `schemas/plan.schema.json`; the service layer
validates a saved plan against it before `Plan.from_json` reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from runner.errors import PlanError
from runner.plan.steps import (
    ACCOMPANYING,
    STEP_ORDER,
    Clean,
    FileKept,
    FileToDelete,
    FileToRewrite,
    Resize,
    RewriteGroup,
    Step,
    StepKind,
    step_from_json,
    step_to_json,
)

FORMAT_VERSION = 2

# The names the steps had before they were typed: kept so that callers outside this package that
# build plans keep working.
CleanStep = Clean
SizingStep = Resize

__all__ = [
    "FORMAT_VERSION", "Clean", "CleanStep", "FileKept", "FileToDelete", "FileToRewrite", "Plan", "PlanProject",
    "Requirements", "Resize", "RewriteGroup", "SizingStep", "Step", "StepKind", "TablePlan", "TableStatus",
]


class TableStatus(StrEnum):
    """One table's status, in a plan and in the run report alike."""

    IN_SYNC = "in_sync"
    CHANGES = "changes"  # plan: apply has work to do
    ERROR = "error"
    # Nothing for apply to do, but hoodie.properties differs from the declaration's `table:` block;
    # apply cannot change a table's type or keys, so this needs a person.
    DRIFT = "drift"
    SUCCESS = "success"  # run report: apply did the table's work


@dataclass(frozen=True, slots=True)
class Requirements:
    """What the plan assumed: re-checked under the table lock before anything is written.

    Args:
        timeline_fingerprint: digest of every non-clean instant file name (any state), so a new
            commit, a new pending write, compaction, clustering or savepoint invalidates the plan.
            Cleans are left out: pending ones are finished by apply whatever the saved plan says
            (its `finish_pending_clean` steps are information, each pending plan being checked
            against the table first), and completed ones are apply's own work.
    """

    timeline_fingerprint: str


@dataclass(frozen=True, slots=True)
class TablePlan:
    """One table's plan: its steps in the order apply runs them.

    Args:
        error: `RunnerError.to_json()` of why the table could not be planned (status `error`).
        steps: in `STEP_ORDER`; at most one step of each kind.
        declaration_fingerprint: digest of the declaration the plan was made from; apply refuses
            the plan when the declaration has changed since (None in plans made without one).
    """

    name: str
    path: str
    status: TableStatus
    error: dict[str, str] | None = None
    requirements: Requirements | None = None
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()
    drift: tuple[str, ...] = ()
    declaration_fingerprint: str | None = None

    def step(self, kind: StepKind) -> Step | None:
        return next((s for s in self.steps if s.kind is kind), None)

    @property
    def clean(self) -> Clean | None:
        step = self.step(StepKind.CLEAN)
        return step if isinstance(step, Clean) else None

    @property
    def sizing(self) -> Resize | None:
        step = self.step(StepKind.RESIZE)
        return step if isinstance(step, Resize) else None

    @property
    def has_work(self) -> bool:
        """Whether apply has anything to do: a step that is not empty and not only accompanying."""
        return any(not s.is_empty and s.kind not in ACCOMPANYING for s in self.steps)

    def with_steps(self, *changed: Step, without: tuple[StepKind, ...] = ()) -> TablePlan:
        """This plan with `changed` in place of its steps of the same kinds, minus `without`."""
        kinds = {s.kind for s in changed} | set(without)
        kept = [s for s in self.steps if s.kind not in kinds]
        return replace(self, steps=ordered((*kept, *(s for s in changed if s.kind not in without))))


def ordered(steps: tuple[Step, ...] | list[Step]) -> tuple[Step, ...]:
    """Steps in the order apply runs them."""
    return tuple(sorted(steps, key=lambda s: STEP_ORDER.index(s.kind)))


@dataclass(frozen=True, slots=True)
class PlanProject:
    """The project a plan was made in: apply refuses a plan made in another one."""

    name: str
    directory: str


@dataclass(frozen=True, slots=True)
class Plan:
    generated_at: str
    now: str
    tables: tuple[TablePlan, ...] = field(default=())
    project: PlanProject | None = None
    # The planning machine's UTC offset at `now` (`+09:00`); None in plans of older runners.
    now_offset: str | None = None

    @property
    def has_errors(self) -> bool:
        return any(t.status is TableStatus.ERROR for t in self.tables)

    @property
    def has_drift(self) -> bool:
        return any(t.drift for t in self.tables)

    @property
    def has_changes(self) -> bool:
        return any(t.status is TableStatus.CHANGES for t in self.tables)

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "generated_at": self.generated_at,
            "now": self.now,
            **({} if self.now_offset is None else {"now_offset": self.now_offset}),
            "project": None if self.project is None else {
                "name": self.project.name, "directory": self.project.directory,
            },
            "tables": [_table_json(t) for t in self.tables],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        """Read a plan written by `to_json`; raises PlanError on an unknown version or bad shape.

        The shape is checked against the schema by whoever reads the file (`runner.service.load_plan`),
        which can name the file; this is the decoder's own last line of defence.
        """
        version = data.get("format_version") if isinstance(data, dict) else None
        if version != FORMAT_VERSION:
            raise PlanError(f"plan format_version: expected {FORMAT_VERSION}, found {version!r}")
        try:
            return cls(data["generated_at"], data["now"], tuple(_table_from(t) for t in data["tables"]),
                       _project_from(data.get("project")), _offset_from(data.get("now_offset")))
        except (KeyError, TypeError, ValueError) as error:
            raise PlanError(f"plan file is malformed: {type(error).__name__}: {error}") from None


# As the plan schema's: datetime takes an offset under 24 hours, and read +05:75 as +06:15, another moment.
_OFFSET = re.compile(r"[+-]([01][0-9]|2[0-3]):[0-5][0-9]")


def _offset_from(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or _OFFSET.fullmatch(value) is None:
        raise ValueError(f"now_offset: expected a UTC offset such as +09:00, found {value!r}")
    return value


def _project_from(d: Any) -> PlanProject | None:
    if d is None:
        return None
    if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not isinstance(d.get("directory"), str):
        raise TypeError(f"project: expected {{name, directory}} strings, found {d!r}")
    return PlanProject(d["name"], d["directory"])


def _table_json(t: TablePlan) -> dict[str, Any]:
    return {
        "name": t.name,
        "path": t.path,
        "declaration_fingerprint": t.declaration_fingerprint,
        "status": t.status.value,
        "error": t.error,
        "requirements": None if t.requirements is None else {
            "timeline_fingerprint": t.requirements.timeline_fingerprint,
        },
        "notes": list(t.notes),
        "drift": list(t.drift),
        "steps": [step_to_json(s) for s in t.steps],
    }


def _table_from(d: dict[str, Any]) -> TablePlan:
    req = d.get("requirements")
    steps = [step_from_json(s) for s in d.get("steps", ())]
    kinds = [s.kind for s in steps]
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"table {d.get('name')!r} lists a step kind twice: {[k.value for k in kinds]}")
    return TablePlan(
        name=d["name"],
        path=d["path"],
        declaration_fingerprint=d.get("declaration_fingerprint"),
        status=TableStatus(d["status"]),
        error=d.get("error"),
        requirements=None if req is None else Requirements(req["timeline_fingerprint"]),
        steps=ordered(steps),
        notes=tuple(d.get("notes", ())),
        drift=tuple(d.get("drift", ())),
    )
