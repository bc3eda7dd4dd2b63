"""The typed steps a table's plan is made of, and their JSON form.

A plan lists, per table, the steps apply runs, in the order it runs them (`STEP_ORDER`). Each step
kind has one planner (`runner.plan.build`), one executor handler (`runner.execute.apply`) and one
text renderer (`runner.commands.render_steps`), all looked up by `Step.kind`; its JSON form is here
(`step_to_json` / `step_from_json`), described by `schemas/plan.schema.json`. A new kind of work
(compaction, archival) is a new step type plus one entry in each of those registries.

A `Clean` or `Resize` step may be empty: the planner ran and found nothing to do. Empty steps stay
in the plan because they explain themselves (why nothing is deleted, which files are kept); apply
skips them, and a table whose steps are all empty is in sync.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from runner.allocation import quick_init
from runner.declarations.model import CleanPolicyName, ResizeStrategy
from runner.hudi.instant import Action, Instant, InstantTime, State


class StepKind(StrEnum):
    DISABLE_METADATA_TABLE = "disable_metadata_table"
    UPDATE_METADATA_TABLE = "update_metadata_table"
    FINISH_PENDING_CLEAN = "finish_pending_clean"
    CLEAN = "clean"
    FINISH_PENDING_RESIZE = "finish_pending_resize"
    RESIZE = "resize"


# The order apply runs steps in. The metadata-table decision comes first because it governs every
# later timeline write; pending cleans before a new one, because Hudi finishes them first and the
# new clean must not list what they delete; resizes last, because a rewrite reads what survived.
STEP_ORDER = tuple(StepKind)

# Steps that only accompany the others (they change how a clean or resize is recorded): a plan
# with nothing else to do has none of them, and they never make a table "changes" on their own.
ACCOMPANYING = frozenset({StepKind.DISABLE_METADATA_TABLE, StepKind.UPDATE_METADATA_TABLE})


@quick_init
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
class DisableMetadataTable:
    """Remove `.hoodie/metadata` and clear its partitions in hoodie.properties (`metadata_table: disable`).

    `partitions`: the metadata partitions (indexes) that are lost with it.
    """

    partitions: tuple[str, ...] = ()
    kind: ClassVar[StepKind] = StepKind.DISABLE_METADATA_TABLE

    @property
    def is_empty(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class UpdateMetadataTable:
    """Record each clean of this plan in the metadata table (`metadata_table: keep`).

    Not a separate instant: it runs inside the lifecycle of every clean the plan finishes or starts
    (requested, inflight, deletes, then one metadata-table deltacommit with the clean's instant
    time, then the clean completes), as Hudi's HoodieBackedTableMetadataWriter does.

    Args:
        partitions: the metadata partitions it updates (of those the table has, the ones Hudi's
            metadata writer updates for a clean: files, column_stats, bloom_filters, expr_index_*).
        actions: the data actions recorded in it.
        refusals: why the metadata table cannot be kept in step now; apply refuses the table
            before writing anything when this is not empty.
    """

    partitions: tuple[str, ...]
    actions: tuple[str, ...] = ("clean",)
    refusals: tuple[str, ...] = ()
    kind: ClassVar[StepKind] = StepKind.UPDATE_METADATA_TABLE

    @property
    def is_empty(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class FinishPendingClean:
    """Requested or inflight cleans on the timeline (Hudi's, or an interrupted apply's), oldest
    first, each finished from its own plan after checking that plan against the table as it is now."""

    instants: tuple[str, ...]
    kind: ClassVar[StepKind] = StepKind.FINISH_PENDING_CLEAN

    @property
    def is_empty(self) -> bool:
        return not self.instants


@dataclass(frozen=True, slots=True)
class Clean:
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
    # Set only by apply, on a clean a saved plan narrowed (`runner.execute.narrow`): it deletes less
    # than its policy allows, and the next clean must list every partition. Never read from a plan file.
    narrowed: bool = False
    kind: ClassVar[StepKind] = StepKind.CLEAN

    @property
    def bytes_to_reclaim(self) -> int:
        return sum(f.size for f in self.files_to_delete)

    @property
    def is_empty(self) -> bool:
        return not self.files_to_delete and not self.partitions_to_delete


RESIZES_NOT_ASKED = "the declaration no longer asks for resizes (no file_sizing block, or small_file_limit 0)"


@dataclass(frozen=True, slots=True)
class FinishPendingResize:
    """Clustering instants this runner scheduled and a crash interrupted: finished, or rolled back
    when the table moved on meanwhile.

    `roll_back`: each is rolled back rather than finished, and `why` says why: the declaration no
    longer asks for resizes (no `file_sizing` block, or a `small_file_limit` of 0; rewriting data
    is never implied, and a declaration turned off after a crash is how a user stops a resize), or
    the table's metadata table now rules resizes out (it could not record the finished resize, and
    a pending one would block Hudi writers' updates of its file groups).
    """

    instants: tuple[str, ...]
    roll_back: bool = False
    why: str = ""
    kind: ClassVar[StepKind] = StepKind.FINISH_PENDING_RESIZE

    @property
    def is_empty(self) -> bool:
        return not self.instants


@dataclass(frozen=True, slots=True)
class Resize:
    """A clustering replacecommit that bin-packs small files up to the declared size."""

    max_file_size: int
    small_file_limit: int
    groups: tuple[RewriteGroup, ...]
    strategy: ResizeStrategy = ResizeStrategy.REWRITE
    kind: ClassVar[StepKind] = StepKind.RESIZE

    @property
    def is_empty(self) -> bool:
        return not self.groups

    @property
    def bytes_to_rewrite(self) -> int:
        return sum(g.total_bytes for g in self.groups)


Step = DisableMetadataTable | UpdateMetadataTable | FinishPendingClean | Clean | FinishPendingResize | Resize


def step_to_json(step: Step) -> dict[str, Any]:
    return {"kind": step.kind.value, **_ENCODERS[step.kind](step)}


def step_from_json(data: dict[str, Any]) -> Step:
    """Raises KeyError, TypeError or ValueError on a bad shape (the caller names the file)."""
    return _DECODERS[StepKind(data["kind"])](data)


def _file_json(f: FileToDelete | FileKept) -> dict[str, Any]:
    return {"partition": f.partition, "path": f.path, "size": f.size, "reason": f.reason}


def _clean_json(c: Any) -> dict[str, Any]:
    ectr = c.earliest_commit_to_retain
    return {
        "policy": c.policy.value,
        "earliest_commit_to_retain": None if ectr is None else str(ectr.time),
        "earliest_commit_to_retain_action": None if ectr is None else ectr.action.value,
        "last_completed_commit": c.last_completed_commit,
        "scope": c.scope,
        "savepointed_timestamps": list(c.savepointed_timestamps),
        "partitions_to_delete": list(c.partitions_to_delete),
        "files_to_delete": [_file_json(f) for f in c.files_to_delete],
        "bytes_to_reclaim": c.bytes_to_reclaim,
        "kept": [_file_json(f) for f in c.kept],
        "why": c.why,
    }


def _clean_from(d: dict[str, Any]) -> Clean:
    ectr = d.get("earliest_commit_to_retain")
    action = d.get("earliest_commit_to_retain_action") or "commit"
    return Clean(
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


def _resize_json(s: Any) -> dict[str, Any]:
    return {
        "max_file_size": s.max_file_size,
        "small_file_limit": s.small_file_limit,
        "strategy": s.strategy.value,
        "groups": [
            {
                "partition": g.partition,
                "total_bytes": g.total_bytes,
                "files": [{"file_id": f.file_id, "path": f.path, "size": f.size} for f in g.files],
            }
            for g in s.groups
        ],
        "bytes_to_rewrite": s.bytes_to_rewrite,
    }


def _resize_from(d: dict[str, Any]) -> Resize:
    return Resize(
        max_file_size=int(d["max_file_size"]),
        small_file_limit=int(d["small_file_limit"]),
        groups=tuple(
            RewriteGroup(
                g["partition"], tuple(FileToRewrite(f["file_id"], f["path"], int(f["size"])) for f in g["files"])
            )
            for g in d["groups"]
        ),
        strategy=ResizeStrategy(d.get("strategy", ResizeStrategy.REWRITE)),  # absent in older plans
    )


_ENCODERS: dict[StepKind, Callable[[Any], dict[str, Any]]] = {
    StepKind.DISABLE_METADATA_TABLE: lambda s: {"partitions": list(s.partitions)},
    StepKind.UPDATE_METADATA_TABLE: lambda s: {
        "partitions": list(s.partitions), "actions": list(s.actions), "refusals": list(s.refusals),
    },
    StepKind.FINISH_PENDING_CLEAN: lambda s: {"instants": list(s.instants)},
    StepKind.CLEAN: _clean_json,
    StepKind.FINISH_PENDING_RESIZE: lambda s: {"instants": list(s.instants), "roll_back": s.roll_back,
                                               **({"why": s.why} if s.roll_back else {})},
    StepKind.RESIZE: _resize_json,
}

_DECODERS: dict[StepKind, Callable[[dict[str, Any]], Step]] = {
    StepKind.DISABLE_METADATA_TABLE: lambda d: DisableMetadataTable(tuple(d["partitions"])),
    StepKind.UPDATE_METADATA_TABLE: lambda d: UpdateMetadataTable(
        tuple(d["partitions"]), tuple(d["actions"]), tuple(d["refusals"])),
    StepKind.FINISH_PENDING_CLEAN: lambda d: FinishPendingClean(tuple(d["instants"])),
    StepKind.CLEAN: _clean_from,
    StepKind.FINISH_PENDING_RESIZE: lambda d: FinishPendingResize(
        tuple(d["instants"]), d.get("roll_back") is True,
        d.get("why", RESIZES_NOT_ASKED if d.get("roll_back") else "")),
    StepKind.RESIZE: _resize_from,
}
