"""Clean planning exactly as Hudi's `CleanPlanner` does it: a pure function of (policy, state, now).

The steps follow ../shared/docs/hudi-format.md §1.3–§1.7 (Hudi 0.15 / 1.x):
1. the earliest commit to retain (ECTR), bounded by the earliest pending write or compaction;
2. the partitions to look at: incremental since the last clean's ECTR, or a full listing;
3. per partition, the slices to delete: replaced groups by the policy's rule, then old slices of
   active groups, never the latest slice, never a savepointed slice, never a slice a pending
   (log) compaction needs; uncommitted files are not in any slice, so they are never candidates;
4. partitions to delete: no active file group, no pending file, no replace at or after the ECTR;
   stricter than Hudi, only when the clean empties the folder: no slice kept (savepoints), no file
   or folder that is not Hudi's (`TableState.crowded_partitions`).

What differs between policies (the ECTR, whether a full listing is forced, the slices of a
partition) is one class per policy in `runner.plan.policies`; this module holds what they share.

Hudi's trigger (`hoodie.clean.max.commits`) is deliberately not applied: the declaration is the
authority, so a plan is computed on every run; once a table is clean the plan is simply empty.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from runner.declarations.model import CleanPolicy
from runner.errors import RefusedError
from runner.hudi.files import FileGroup, FileSlice, relative_path
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.state import TableMetadata, TableState
from runner.plan.model import CleanStep, FileToDelete
from runner.plan.policies import Protection, needed_from, planner_for

SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"
# Extra metadata of a clean that deleted less than its policy allowed (a narrowed saved plan): the
# files it left lie before its earliest commit to retain, where incremental cleaning never looks.
NARROWED = "narrowed"


@dataclass(frozen=True, slots=True)
class CleanScope:
    """What to list before planning: `partitions` None means every partition (full listing)."""

    earliest_commit_to_retain: Instant | None
    partitions: tuple[str, ...] | None
    reason: str


# The earliest commit to retain of a clean that may vouch for nothing before the first instant on
# the timeline: an instant before every other (see `_before_pending_replaces`).
BEFORE_THE_TIMELINE = Instant(InstantTime("0" * 17), Action.COMMIT, State.COMPLETED)


def earliest_commit_to_retain(policy: CleanPolicy, meta: TableMetadata, *, now: datetime) -> Instant | None:
    """Hudi's `CleanerUtils.getEarliestCommitToRetain` for the declared policy (see `runner.plan.policies`),
    kept before any pending replacecommit or clustering (`_before_pending_replaces`)."""
    return _before_pending_replaces(planner_for(policy).earliest_commit_to_retain(meta, now=now), meta)


def _before_pending_replaces(ectr: Instant | None, meta: TableMetadata) -> Instant | None:
    """`ectr`, moved back before the earliest pending replacecommit or clustering: to the latest
    completed write requested before it, else `BEFORE_THE_TIMELINE`.

    Hudi's archiver keeps only the replacecommits requested at or after the last clean's earliest
    commit to retain, or at or after the clean itself when it records none
    (`ClusteringUtils.getEarliestInstantToRetainForClustering`): it takes every group replaced
    before that for cleaned. A replacecommit pending when the clean is planned replaces its groups
    only once it completes, after the clean, which could not delete them; once archived, readers
    read those groups beside the ones that replaced them (HUDI-6352 names the gap). So a clean
    recorded beside one never vouches past it. KEEP_LATEST_COMMITS is bounded so already (by every
    pending write); KEEP_LATEST_BY_HOURS ignores pending instants, and KEEP_LATEST_FILE_VERSIONS
    records no bound, so both keep more, or record one, only while such a write is pending.
    """
    pending = meta.timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING)
    if not pending:
        return ectr
    first = min(pending, key=lambda i: i.time.normalized).time
    if ectr is not None and ectr.time < first:
        return ectr
    before = [i for i in meta.timeline.completed_writes if i.time < first]
    return before[-1] if before else BEFORE_THE_TIMELINE


def clean_scope(policy: CleanPolicy, meta: TableMetadata, *, now: datetime) -> CleanScope:
    """Hudi's `getPartitionPathsToClean`: incremental when safe, with every one of its fallbacks."""
    planner = planner_for(policy)
    ectr = _before_pending_replaces(planner.earliest_commit_to_retain(meta, now=now), meta)
    always_full = planner.full_listing_reason()
    if always_full is not None:
        return CleanScope(ectr, None, f"full listing: {always_full}")
    if ectr is None:
        return CleanScope(None, (), "nothing to clean: no earliest commit to retain yet")
    if not policy.incremental:
        return CleanScope(ectr, None, "full listing: incremental cleaning is off")
    reason = _incremental_blocker(meta)
    if reason:
        return CleanScope(ectr, None, f"full listing: {reason}")
    assert meta.last_clean is not None
    previous = InstantTime(meta.last_clean[1].earliest_commit_to_retain)
    partitions: set[str] = set()
    for instant in meta.timeline.completed_writes:
        if previous <= instant.time < ectr.time:
            commit = meta.commits.get(instant.time)
            if commit is not None:
                partitions.update(commit.partitions)
    return CleanScope(ectr, tuple(sorted(partitions)), f"incremental since the last clean's ECTR {previous}")


def _incremental_blocker(meta: TableMetadata) -> str | None:
    """Why incremental cleaning cannot be trusted here, or None."""
    newest_empty = max((i.time for i in meta.empty_completed_cleans), default=None)
    if meta.last_clean is None:
        return "no earlier clean on the timeline"
    clean_instant, clean = meta.last_clean
    if newest_empty is not None and newest_empty > clean_instant.time:
        return f"the latest completed clean {newest_empty} is empty"
    if not clean.earliest_commit_to_retain.strip():
        return f"the last clean {clean_instant.time} recorded no earliest commit to retain"
    if not clean.earliest_commit_to_retain.strip("0"):
        return (f"the last clean {clean_instant.time} vouched for no commit on the timeline (it deleted less than "
                "a fresh plan would, or a replacecommit was pending before every completed write)")
    start = meta.timeline.earliest_write
    if start is None or InstantTime(clean.earliest_commit_to_retain) < start:
        return "the last clean's earliest commit to retain has been archived"
    if clean.extra_metadata.get(NARROWED) == "true":
        return f"the last clean {clean_instant.time} deleted less than its policy allowed (a narrowed saved plan)"
    recorded = [t for t in clean.extra_metadata.get(SAVEPOINTED_TIMESTAMPS, "").split(",") if t]
    removed = sorted(set(recorded) - set(meta.savepoints))
    if removed:
        return f"savepoint(s) {', '.join(removed)} were removed since the last clean"
    return None


def plan_clean(policy: CleanPolicy, state: TableState, scope: CleanScope) -> CleanStep:
    """Files and partitions to delete in the listed partitions, by the declared policy."""
    meta = state.metadata
    refuse_respelled_partitions(state)
    ectr = scope.earliest_commit_to_retain
    partitions = state.partitions if scope.partitions is None else scope.partitions
    planner = planner_for(policy)
    protected = Protection(state)
    by_partition = _groups_by_partition(state.file_groups)
    pending = _partitions_with_pending_files(state.uncommitted_files) | _reached_by_pending_writes(meta, partitions)
    files: list[FileToDelete] = []
    to_delete_partitions: list[str] = []
    listed = frozenset(state.partitions)
    for partition in partitions:
        groups = by_partition.get(partition, ())
        slices, drop_partition = planner.partition_deletions(
            state, groups, ectr, protected, has_pending_files=partition in pending)
        files.extend(_to_files(slices))
        if drop_partition and partition and partition in listed and _emptied(partition, groups, slices, state):
            to_delete_partitions.append(partition)
    return CleanStep(
        policy=policy.policy,
        earliest_commit_to_retain=ectr,
        last_completed_commit=str(meta.timeline.completed_writes[-1].time) if meta.timeline.completed_writes else "",
        files_to_delete=tuple(sorted(files, key=lambda f: f.path)),
        partitions_to_delete=tuple(sorted(to_delete_partitions)),
        savepointed_timestamps=tuple(sorted(str(t) for t in meta.savepoints)),
        scope=scope.reason,
    )


def refuse_respelled_partitions(state: TableState) -> None:
    """Refuse a clean of a table whose timeline names a file group under another partition than the
    one storage lists it in: a replacecommit or a pending (log) compaction spelling its partition
    otherwise (NFC `city=Zürich` for a folder listed NFD, `city=Basel` for `city=basel`), as a file
    system that folds names (macOS) leaves it. The replaced groups would look active, so the clean
    would keep their latest slices while recording a bound Hudi's archiver takes for "cleaned";
    Hudi's file ids are unique across a table, so the file id finds the group whatever the spelling.

    Raises:
        RefusedError: naming the file group and both spellings; nothing is planned.
    """
    meta = state.metadata
    named = [*(("replacecommit", k) for k in meta.replaced),
             *(("pending compaction", k) for k in meta.pending_compaction),
             *(("pending log compaction", k) for k in meta.pending_log_compaction)]
    if not named:
        return
    listed: dict[str, set[str]] = {}
    for group in state.file_groups:
        listed.setdefault(group.file_id, set()).add(group.partition)
    for what, (partition, file_id) in named:
        # Only another spelling of the same name counts: a file id may recur in other partitions
        # (Hudi's bucket index can give every partition's bucket n the same fixed-suffix id).
        spellings = sorted(p for p in listed.get(file_id, ()) if _folded(p) == _folded(partition))
        if spellings and partition not in spellings:
            found = spellings[0]
            raise RefusedError(
                f"table {meta.base_path}: a {what} names file group {file_id} in partition {partition!r} "
                f"({partition.encode('unicode_escape').decode()}), but storage lists it in {found!r} "
                f"({found.encode('unicode_escape').decode()}); expected the partition as the timeline "
                "spells it, since the clean decides by it which groups are replaced or needed (a file system "
                "that folds case or Unicode normalisation, as macOS's do, lists a folder under another "
                "spelling); nothing was planned or deleted",
                hint="keep the table on storage that compares names byte for byte (S3, HDFS, a case-sensitive "
                "disk), with its folders named as its timeline names them.")


def savepoint_reads(state: TableState, bound: InstantTime) -> frozenset[str]:
    """The files (table-relative) of the listed partitions that a savepoint of a commit at or after
    `bound` may list (`runner.plan.policies.needed_from`): what a clean recording `bound` keeps."""
    replaced = state.metadata.replaced
    return frozenset(relative_path(g.partition, name) for g in state.file_groups
                     for s in needed_from(g, bound, replaced.get(g.key)) for name in s.file_names)


def _folded(name: str) -> str:
    """A name as a file system that folds case and Unicode normalisation compares it."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def _emptied(partition: str, groups: Iterable[FileGroup], deleted: list[FileSlice], state: TableState) -> bool:
    """Whether this clean leaves the partition's folder with nothing but Hudi's marker. The policy
    says a partition without active groups may go, but its folder may still hold slices this clean
    keeps (a savepoint's) or files and folders that are not Hudi's; a recorded plan naming the
    partition would have Hudi's cleaner, finishing it, delete the folder with all of them."""
    return partition not in state.crowded_partitions and len(deleted) == sum(len(g.slices) for g in groups)


def _partitions_with_pending_files(uncommitted: Iterable[str]) -> frozenset[str]:
    """The partitions (the folder; "" for the table root) holding an uncommitted file, which a
    write in flight may still commit. Collected once: asking per partition made planning
    partitions x uncommitted files."""
    return frozenset(path.rpartition("/")[0] for path in uncommitted)


def _reached_by_pending_writes(meta: TableMetadata, partitions: Iterable[str]) -> frozenset[str]:
    """Partitions a pending write may still write into (`PendingWrites.reached_partitions`). A
    folder removed under such a write would lose the `.hoodie_partition_metadata` that
    file-listing readers find partitions by."""
    reached = meta.pending_writes.reached_partitions()
    return frozenset(partitions) if reached is None else reached


def _to_files(slices: Iterable[FileSlice]) -> list[FileToDelete]:
    return [
        FileToDelete(s.partition, relative_path(s.partition, f.name), max(f.size, 0))
        for s in slices
        for f in s.files
    ]


def _groups_by_partition(groups: Iterable[FileGroup]) -> dict[str, tuple[FileGroup, ...]]:
    result: dict[str, list[FileGroup]] = {}
    for group in groups:
        result.setdefault(group.partition, []).append(group)
    return {p: tuple(g) for p, g in result.items()}

