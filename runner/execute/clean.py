"""Runs cleans on the timeline exactly as Hudi's `CleanActionExecutor` does.

Order: `<t>.clean.requested` (the HoodieCleanerPlan), `<t>.clean.inflight` (a copy of the plan, as
Hudi 0.x writes it), the deletes, then the completed clean with HoodieCleanMetadata. A crash at any
point leaves a pending clean; the next apply finishes it first, and files already gone count as
deleted, so the end result is the same as an uninterrupted run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from runner.errors import RefusedError
from runner.execute.failpoints import failpoint
from runner.hudi.files import is_data_file_name
from runner.hudi.instant import Action, Instant, InstantTime
from runner.hudi.metadata import (
    ActionInstant,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    CleanPlan,
    encode_clean_metadata,
    encode_clean_plan,
)
from runner.hudi.storage import Storage
from runner.hudi.timeline_writer import TimelineWriter
from runner.plan.clean import SAVEPOINTED_TIMESTAMPS
from runner.plan.model import CleanStep

Deleter = Callable[[Storage, Sequence[str]], "list[DeleteOutcome]"]
# (clean instant, its HoodieCleanMetadata, completion-time source) -> files written
BeforeComplete = Callable[[InstantTime, CleanMetadata, Callable[[], InstantTime]], list[str]]


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    path: str
    deleted: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class CleanOutcome:
    """What one clean instant did."""

    instant: str
    files_deleted: int
    bytes_deleted: int
    files_already_gone: int
    failed: tuple[str, ...] = ()
    partitions_deleted: tuple[str, ...] = ()
    instants_written: tuple[str, ...] = field(default=())


def to_plan(step: CleanStep, base_uri: str) -> CleanPlan:
    """The HoodieCleanerPlan (version 2) for a clean step; file paths are fully qualified."""
    ectr = step.earliest_commit_to_retain
    by_partition: dict[str, list[CleanFileInfo]] = {}
    for f in step.files_to_delete:
        by_partition.setdefault(f.partition, []).append(CleanFileInfo(qualify(base_uri, f.path), False))
    extra = {SAVEPOINTED_TIMESTAMPS: ",".join(step.savepointed_timestamps)} if step.savepointed_timestamps else {}
    return CleanPlan(
        earliest_instant_to_retain=(
            ActionInstant(str(ectr.time), ectr.action.value, "COMPLETED") if ectr is not None else None
        ),
        last_completed_commit_timestamp=step.last_completed_commit,
        policy=step.policy.value,
        file_paths_to_delete={p: tuple(files) for p, files in sorted(by_partition.items())},
        partitions_to_delete=tuple(step.partitions_to_delete),
        extra_metadata=extra,
        version=2,
    )


def qualify(base_uri: str, relative: str) -> str:
    """A path as Hudi records it: with a scheme (`file:/...` on local disk)."""
    root = base_uri.rstrip("/")
    return f"{root}/{relative}" if "://" in root else f"file:{root}/{relative}"


def relativize(base_uri: str, full_path: str) -> str:
    """The table-relative form of a plan path; refuses anything outside the table."""
    root = base_uri.rstrip("/")
    candidates = [root, f"file:{root}", f"file://{root}"] if "://" not in root else [root, root.replace("s3://", "s3a://", 1)]
    for prefix in candidates:
        if full_path.startswith(prefix + "/"):
            return full_path[len(prefix) + 1:]
    raise RefusedError(
        f"clean plan path {full_path} lies outside the table at {base_uri}; nothing was deleted",
        hint="check who wrote this clean plan; the runner only deletes files inside the table.",
    )


def check_deletable(paths: Sequence[str], partitions: Sequence[str]) -> None:
    """Refuse any path that is not a Hudi data file strictly inside the table (even from a hand-edited plan)."""
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        parts = path.split("/")
        if path.startswith("/") or ".." in parts or parts[0] == ".hoodie" or not is_data_file_name(name):
            raise RefusedError(
                f"refusing to delete {path!r}: only Hudi base and log files inside the table may be deleted",
                hint="re-create the plan with `runner plan` instead of editing it.",
            )
    for partition in partitions:
        if not partition or partition.startswith((".hoodie", "/")) or ".." in partition.split("/"):
            raise RefusedError(f"refusing to delete partition {partition!r}: not a partition folder of the table")


class CleanRunner:
    """Executes clean plans against one table."""

    def __init__(self, storage: Storage, writer: TimelineWriter, deleter: Deleter, *,
                 completion_time: Callable[[], InstantTime],
                 before_complete: BeforeComplete | None = None) -> None:
        self.storage = storage
        self.writer = writer
        self.deleter = deleter
        self.completion_time = completion_time
        # Records the clean in the metadata table (same instant time) before the clean completes.
        self.before_complete = before_complete

    def start(self, time_: InstantTime, step: CleanStep) -> tuple[Instant, CleanPlan]:
        """Write `<t>.clean.requested` and `<t>.clean.inflight`."""
        plan = to_plan(step, self.storage.uri)
        data = encode_clean_plan(plan)
        requested = self.writer.requested(time_, Action.CLEAN, data)
        failpoint("after_clean_requested")
        inflight = self.writer.inflight(time_, Action.CLEAN, data)
        failpoint("after_clean_inflight")
        return inflight, plan

    def finish(self, pending: Instant, plan: CleanPlan, *, sizes: dict[str, int] | None = None) -> CleanOutcome:
        """Delete what the plan lists and complete the instant (writing inflight first if needed)."""
        written: list[str] = []
        if pending.state.value == "requested":
            self.writer.inflight(pending.time, Action.CLEAN, encode_clean_plan(plan))
            written.append(f"{pending.time}.clean.inflight")
        started = time.monotonic()
        files = {p: [relativize(self.storage.uri, f.file_path) for f in infos if not f.is_bootstrap_base_file]
                 for p, infos in plan.file_paths_to_delete.items()}
        flat = [path for paths in files.values() for path in paths]
        check_deletable(flat, plan.partitions_to_delete)
        outcomes = {o.path: o for o in self.deleter(self.storage, flat)}
        deleted_partitions = tuple(p for p in plan.partitions_to_delete if self._delete_partition(p))
        failpoint("after_delete")
        meta = self._metadata(pending, plan, files, outcomes, deleted_partitions, started)
        if self.before_complete is not None:
            written.extend(self.before_complete(pending.time, meta, self.completion_time))
            failpoint("after_metadata_table_commit")
        done = self.writer.complete(pending, encode_clean_metadata(meta), completion=self.completion_time())
        written.append(done.file_name)
        failpoint("after_clean_completed")
        sizes = sizes or {}
        ok = [o for o in outcomes.values() if o.error is None]
        return CleanOutcome(
            instant=str(pending.time),
            files_deleted=sum(1 for o in ok if o.deleted),
            bytes_deleted=sum(sizes.get(o.path, 0) for o in ok if o.deleted),
            files_already_gone=sum(1 for o in ok if not o.deleted),
            failed=tuple(sorted(o.path for o in outcomes.values() if o.error)),
            partitions_deleted=deleted_partitions,
            instants_written=tuple(written),
        )

    def _delete_partition(self, partition: str) -> bool:
        """Remove an emptied partition folder, but only if nothing but Hudi's marker is left in it."""
        leftovers = [f.path for f in self.storage.walk(partition)
                     if not f.path.rsplit("/", 1)[-1].startswith(".hoodie_partition_metadata")]
        if leftovers:
            return False
        self.storage.delete_tree(partition)
        return True

    def _metadata(self, pending: Instant, plan: CleanPlan, files: dict[str, list[str]],
                  outcomes: dict[str, DeleteOutcome], deleted: tuple[str, ...], started: float) -> CleanMetadata:
        partitions = {}
        for partition in sorted(set(files) | set(plan.partitions_to_delete)):
            names = [p.rsplit("/", 1)[-1] for p in files.get(partition, [])]
            failed = [p.rsplit("/", 1)[-1] for p in files.get(partition, []) if outcomes[p].error]
            partitions[partition] = CleanPartitionMetadata(
                partition_path=partition,
                policy=plan.policy,
                delete_path_patterns=tuple(names),
                success_delete_files=tuple(n for n in names if n not in failed),
                failed_delete_files=tuple(failed),
                is_partition_deleted=partition in deleted,
            )
        ectr = plan.earliest_instant_to_retain
        return CleanMetadata(
            start_clean_time=str(pending.time),
            time_taken_ms=int((time.monotonic() - started) * 1000),
            total_files_deleted=sum(len(p.success_delete_files) for p in partitions.values()),
            earliest_commit_to_retain=ectr.timestamp if ectr else "",
            last_completed_commit_timestamp=plan.last_completed_commit_timestamp,
            partition_metadata=partitions,
            extra_metadata=dict(plan.extra_metadata),
            version=2,
        )
