"""A plan is data: what apply will do to each table, serialisable and versioned.

`runner plan` renders a `Plan`; `runner apply plan.json` executes exactly that `Plan`, after checking
each table's `requirements` (the timeline it was computed from) just before the first write.
The JSON form is described by `schemas/plan.schema.json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from runner.declarations.model import CleanPolicyName
from runner.errors import PlanError
from runner.hudi.instant import Action, Instant, InstantTime, State

FORMAT_VERSION = 1


class TableStatus(StrEnum):
    IN_SYNC = "in_sync"
    CHANGES = "changes"
    ERROR = "error"
    # Nothing for apply to do, but hoodie.properties differs from the declaration's `table:` block;
    # apply cannot change a table's type or keys, so this needs a person.
    DRIFT = "drift"


@dataclass(frozen=True, slots=True)
class FileToDelete:
    """A data file, by its path relative to the table's base path, and why the cleaner takes it."""

    partition: str
    path: str
    size: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class FileKept:
    """A file the policy alone would delete, kept because a savepoint or a pending compaction needs it."""

    partition: str
    path: str
    size: int
    reason: str


@dataclass(frozen=True, slots=True)
class CleanStep:
    """One Hudi clean: the files and partitions it deletes and what it records on the timeline."""

    policy: CleanPolicyName
    earliest_commit_to_retain: Instant | None
    last_completed_commit: str
    files_to_delete: tuple[FileToDelete, ...]
    partitions_to_delete: tuple[str, ...]
    savepointed_timestamps: tuple[str, ...] = ()
    scope: str = ""
    kept: tuple[FileKept, ...] = ()
    why: str = ""

    @property
    def bytes_to_reclaim(self) -> int:
        return sum(f.size for f in self.files_to_delete)

    @property
    def is_empty(self) -> bool:
        return not self.files_to_delete and not self.partitions_to_delete


@dataclass(frozen=True, slots=True)
class FileToRewrite:
    file_id: str
    path: str
    size: int


@dataclass(frozen=True, slots=True)
class RewriteGroup:
    """Small base files of one partition rewritten together into files of at most max_file_size."""

    partition: str
    files: tuple[FileToRewrite, ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass(frozen=True, slots=True)
class SizingStep:
    """A clustering replacecommit that bin-packs small files up to the declared size."""

    max_file_size: int
    small_file_limit: int
    groups: tuple[RewriteGroup, ...]

    @property
    def is_empty(self) -> bool:
        return not self.groups


@dataclass(frozen=True, slots=True)
class Requirements:
    """What the plan assumed: re-checked under the table lock before anything is written.

    Args:
        timeline_fingerprint: digest of every non-clean instant file name (any state), so a new
            commit, a new pending write, compaction, clustering or savepoint invalidates the plan.
        pending_cleans: the clean instants that were pending when planning.
    """

    timeline_fingerprint: str
    pending_cleans: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TablePlan:
    """One table's plan.

    Args:
        declaration_fingerprint: digest of the declaration the plan was made from; apply refuses
            the plan when the declaration has changed since (None in plans made without one).
    """

    name: str
    path: str
    status: TableStatus
    error: dict[str, str] | None = None
    requirements: Requirements | None = None
    clean: CleanStep | None = None
    sizing: SizingStep | None = None
    metadata_table: str | None = None
    notes: tuple[str, ...] = ()
    drift: tuple[str, ...] = ()
    declaration_fingerprint: str | None = None


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
            "project": None if self.project is None else {
                "name": self.project.name, "directory": self.project.directory,
            },
            "tables": [_table_json(t) for t in self.tables],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        """Read a plan written by `to_json`; raises PlanError on an unknown version or bad shape."""
        version = data.get("format_version") if isinstance(data, dict) else None
        if version != FORMAT_VERSION:
            raise PlanError(f"plan format_version: expected {FORMAT_VERSION}, found {version!r}")
        try:
            return cls(data["generated_at"], data["now"], tuple(_table_from(t) for t in data["tables"]),
                       _project_from(data.get("project")))
        except (KeyError, TypeError, ValueError) as error:
            raise PlanError(f"plan file is malformed: {type(error).__name__}: {error}") from None


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
            "pending_cleans": list(t.requirements.pending_cleans),
        },
        "metadata_table": t.metadata_table,
        "notes": list(t.notes),
        "drift": list(t.drift),
        "clean": None if t.clean is None else _clean_json(t.clean),
        "sizing": None if t.sizing is None else _sizing_json(t.sizing),
    }


def _clean_json(c: CleanStep) -> dict[str, Any]:
    ectr = c.earliest_commit_to_retain
    return {
        "policy": c.policy.value,
        "earliest_commit_to_retain": None if ectr is None else str(ectr.time),
        "earliest_commit_to_retain_action": None if ectr is None else ectr.action.value,
        "last_completed_commit": c.last_completed_commit,
        "scope": c.scope,
        "savepointed_timestamps": list(c.savepointed_timestamps),
        "partitions_to_delete": list(c.partitions_to_delete),
        "files_to_delete": [
            {"partition": f.partition, "path": f.path, "size": f.size, "reason": f.reason} for f in c.files_to_delete
        ],
        "bytes_to_reclaim": c.bytes_to_reclaim,
        "kept": [{"partition": f.partition, "path": f.path, "size": f.size, "reason": f.reason} for f in c.kept],
        "why": c.why,
    }


def _sizing_json(s: SizingStep) -> dict[str, Any]:
    return {
        "max_file_size": s.max_file_size,
        "small_file_limit": s.small_file_limit,
        "groups": [
            {
                "partition": g.partition,
                "total_bytes": g.total_bytes,
                "files": [{"file_id": f.file_id, "path": f.path, "size": f.size} for f in g.files],
            }
            for g in s.groups
        ],
        "bytes_to_rewrite": sum(g.total_bytes for g in s.groups),
    }


def _table_from(d: dict[str, Any]) -> TablePlan:
    req = d.get("requirements")
    return TablePlan(
        name=d["name"],
        path=d["path"],
        declaration_fingerprint=d.get("declaration_fingerprint"),
        status=TableStatus(d["status"]),
        error=d.get("error"),
        requirements=None if req is None else Requirements(
            req["timeline_fingerprint"], tuple(req.get("pending_cleans", ())),
        ),
        metadata_table=d.get("metadata_table"),
        notes=tuple(d.get("notes", ())),
        drift=tuple(d.get("drift", ())),
        clean=None if d.get("clean") is None else _clean_from(d["clean"]),
        sizing=None if d.get("sizing") is None else _sizing_from(d["sizing"]),
    )


def _clean_from(d: dict[str, Any]) -> CleanStep:
    ectr = d.get("earliest_commit_to_retain")
    action = d.get("earliest_commit_to_retain_action") or "commit"
    return CleanStep(
        policy=CleanPolicyName(d["policy"]),
        earliest_commit_to_retain=None if ectr is None else Instant(InstantTime(ectr), Action(action), State.COMPLETED),
        last_completed_commit=d.get("last_completed_commit", ""),
        files_to_delete=tuple(
            FileToDelete(f["partition"], f["path"], int(f["size"]), f.get("reason", "")) for f in d["files_to_delete"]
        ),
        partitions_to_delete=tuple(d["partitions_to_delete"]),
        savepointed_timestamps=tuple(d.get("savepointed_timestamps", ())),
        scope=d.get("scope", ""),
        kept=tuple(FileKept(f["partition"], f["path"], int(f["size"]), f["reason"]) for f in d.get("kept", ())),
        why=d.get("why", ""),
    )


def _sizing_from(d: dict[str, Any]) -> SizingStep:
    return SizingStep(
        max_file_size=int(d["max_file_size"]),
        small_file_limit=int(d["small_file_limit"]),
        groups=tuple(
            RewriteGroup(
                g["partition"], tuple(FileToRewrite(f["file_id"], f["path"], int(f["size"])) for f in g["files"])
            )
            for g in d["groups"]
        ),
    )
