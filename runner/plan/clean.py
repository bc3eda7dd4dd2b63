"""Clean planning exactly as Hudi's `CleanPlanner` does it: a pure function of (policy, state, now).

The steps follow ../shared/docs/hudi-format.md §1.3–§1.7 (Hudi 0.15 / 1.x):
1. the earliest commit to retain (ECTR), bounded by the earliest pending write or compaction;
2. the partitions to look at: incremental since the last clean's ECTR, or a full listing;
3. per partition, the slices to delete: replaced groups by the policy's rule, then old slices of
   active groups, never the latest slice, never a savepointed slice, never a slice a pending
   (log) compaction needs; uncommitted files are not in any slice, so they are never candidates;
4. partitions to delete: no active file group, no pending file, no replace at or after the ECTR.

Hudi's trigger (`hoodie.clean.max.commits`) is deliberately not applied: the declaration is the
authority, so a plan is computed on every run; once a table is clean the plan is simply empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from runner.declarations.model import CleanPolicy, CleanPolicyName
from runner.hudi.files import FileGroup, FileSlice, relative_path
from runner.hudi.instant import Instant, InstantTime
from runner.hudi.state import TableMetadata, TableState
from runner.plan.model import CleanStep, FileToDelete

SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"


@dataclass(frozen=True, slots=True)
class CleanScope:
    """What to list before planning: `partitions` None means every partition (full listing)."""

    earliest_commit_to_retain: Instant | None
    partitions: tuple[str, ...] | None
    reason: str


def earliest_commit_to_retain(policy: CleanPolicy, meta: TableMetadata, *, now: datetime) -> Instant | None:
    """Hudi's `CleanerUtils.getEarliestCommitToRetain` over the writes-and-compactions timeline."""
    timeline = meta.timeline.writes_and_compactions
    completed = [i for i in timeline if i.is_completed]
    if policy.policy is CleanPolicyName.KEEP_LATEST_COMMITS:
        retained = policy.commits_retained
        if len(completed) <= retained or retained <= 0:
            return None
        candidate = completed[len(completed) - retained]
        pending = [i for i in timeline if not i.is_completed]
        if pending and candidate.time > pending[0].time:
            before = [i for i in completed if i.time < pending[0].time]
            return before[-1] if before else None
        return candidate
    if policy.policy is CleanPolicyName.KEEP_LATEST_BY_HOURS:
        cutoff = hours_cutoff(now, policy.hours_retained, meta.config.timezone)
        return next((i for i in completed if i.time >= cutoff), None)
    return None


def hours_cutoff(now: datetime, hours: int, table_timezone: str) -> InstantTime:
    """`now - hours`, rendered as an instant time in the table's timeline timezone (UTC or LOCAL)."""
    aware = now if now.tzinfo else now.replace(tzinfo=UTC)
    zone = UTC if table_timezone.upper() == "UTC" else None
    local = (aware - timedelta(hours=hours)).astimezone(zone)
    return InstantTime.from_datetime(local.replace(tzinfo=None))


def clean_scope(policy: CleanPolicy, meta: TableMetadata, *, now: datetime) -> CleanScope:
    """Hudi's `getPartitionPathsToClean`: incremental when safe, with every one of its fallbacks."""
    ectr = earliest_commit_to_retain(policy, meta, now=now)
    if policy.policy is CleanPolicyName.KEEP_LATEST_FILE_VERSIONS:
        return CleanScope(None, None, "full listing: KEEP_LATEST_FILE_VERSIONS always lists every partition")
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
    start = meta.timeline.earliest_write
    if start is None or InstantTime(clean.earliest_commit_to_retain) < start:
        return "the last clean's earliest commit to retain has been archived"
    recorded = [t for t in clean.extra_metadata.get(SAVEPOINTED_TIMESTAMPS, "").split(",") if t]
    removed = sorted(set(recorded) - set(meta.savepoints))
    if removed:
        return f"savepoint(s) {', '.join(removed)} were removed since the last clean"
    return None


def plan_clean(policy: CleanPolicy, state: TableState, scope: CleanScope) -> CleanStep:
    """Files and partitions to delete in the listed partitions, by the declared policy."""
    meta = state.metadata
    ectr = scope.earliest_commit_to_retain
    partitions = state.partitions if scope.partitions is None else scope.partitions
    protected = _Protection(state)
    by_partition = _groups_by_partition(state.file_groups)
    files: list[FileToDelete] = []
    to_delete_partitions: list[str] = []
    for partition in partitions:
        groups = by_partition.get(partition, ())
        deleted, drop_partition = _plan_partition(policy, state, partition, groups, ectr, protected)
        files.extend(deleted)
        if drop_partition and partition:
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


class _Protection:
    """What must never be deleted: savepointed slices and slices a pending (log) compaction needs."""

    def __init__(self, state: TableState) -> None:
        self.savepointed = state.metadata.savepointed_files
        self.compaction = state.metadata.pending_compaction
        self.log_compaction = state.metadata.pending_log_compaction

    def savepointed_slice(self, file_slice: FileSlice) -> bool:
        return any(name in self.savepointed for name in file_slice.file_names)

    def in_pending_compaction(self, group: FileGroup) -> bool:
        return group.key in self.compaction or group.key in self.log_compaction

    def needed_for_compaction(self, group: FileGroup, file_slice: FileSlice) -> bool:
        return any(
            ops.get(group.key) is not None and file_slice.base_instant >= ops[group.key]
            for ops in (self.compaction, self.log_compaction)
        )


def _plan_partition(
    policy: CleanPolicy,
    state: TableState,
    partition: str,
    groups: Iterable[FileGroup],
    ectr: Instant | None,
    protected: _Protection,
) -> tuple[list[FileToDelete], bool]:
    replaced = state.metadata.replaced
    active = [g for g in groups if g.key not in replaced and g.slices]
    replaced_groups = [g for g in groups if g.key in replaced]
    pending_files = any(path.rpartition("/")[0] == partition for path in state.uncommitted_files) or (
        partition == "" and any("/" not in path for path in state.uncommitted_files)
    )
    if policy.policy is CleanPolicyName.KEEP_LATEST_FILE_VERSIONS:
        deleted = _replaced_slices(replaced_groups, protected, before=None, replaced=replaced)
        for group in active:
            deleted.extend(_old_versions(group, policy.file_versions_retained, protected))
        return _to_files(deleted), not active and not pending_files
    retained = policy.commits_retained if policy.policy is CleanPolicyName.KEEP_LATEST_COMMITS else 0
    if ectr is None or len(state.metadata.timeline.completed_writes) <= retained:
        return [], False
    deleted = _replaced_slices(replaced_groups, protected, before=ectr.time, replaced=replaced)
    for group in active:
        deleted.extend(_slices_before_ectr(group, ectr.time, protected))
    replaced_since = any(replaced[g.key] >= ectr.time for g in replaced_groups)
    return _to_files(deleted), not active and not pending_files and not replaced_since


def _replaced_slices(
    groups: Iterable[FileGroup],
    protected: _Protection,
    *,
    before: InstantTime | None,
    replaced: Mapping[tuple[str, str], InstantTime],
) -> list[FileSlice]:
    """Every slice of groups replaced before `before` (all replaced groups when None), bar savepoints."""
    return [
        s
        for g in groups
        if before is None or replaced[g.key] < before
        for s in g.slices
        if not protected.savepointed_slice(s)
    ]


def _slices_before_ectr(group: FileGroup, ectr: InstantTime, protected: _Protection) -> list[FileSlice]:
    """KEEP_LATEST_COMMITS / BY_HOURS: keep the latest slice and the newest slice older than the ECTR."""
    last_version = group.slices[0].base_instant
    before = next((s.base_instant for s in group.slices if s.base_instant < ectr), None)
    return [
        s
        for s in group.slices
        if not protected.savepointed_slice(s)
        and s.base_instant not in (last_version, before)
        and not protected.needed_for_compaction(group, s)
        and s.base_instant < ectr
    ]


def _old_versions(group: FileGroup, versions: int, protected: _Protection) -> list[FileSlice]:
    """KEEP_LATEST_FILE_VERSIONS: the slices protected for compaction count as one kept version."""
    candidates = [s for s in group.slices if not protected.needed_for_compaction(group, s)]
    keep = versions - (1 if protected.in_pending_compaction(group) else 0)
    return [s for s in candidates[max(keep, 0):] if not protected.savepointed_slice(s)]


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

