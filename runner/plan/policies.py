"""The clean-policy registry, planning half: one class per policy, as Hudi's `CleanPlanner` has one
method per policy (../shared/docs/hudi-format.md §1.3–§1.7).

Each class answers, for the declared `CleanPolicy`:
- the earliest commit to retain (`CleanerUtils.getEarliestCommitToRetain`);
- whether it must always list every partition (the scope; the rest of it is in `runner.plan.clean`);
- the slices of one partition to delete, and whether the partition itself may go;
- the same slices before protections, each with its rule, which `runner.plan.reasons` reports;
- the words that summarise it in a plan.

The declaration half (name and retention field) is `runner.declarations.policies`. `planner_for`
is the only lookup; `runner.plan.clean` and `runner.plan.reasons` never branch on a policy name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from runner.declarations.model import CleanPolicy, CleanPolicyName
from runner.declarations.policies import rule_for
from runner.hudi.files import FileGroup, FileSlice
from runner.hudi.instant import Action, Instant, InstantTime
from runner.hudi.state import TableMetadata, TableState


class Protection:
    """What must never be deleted: savepointed slices and slices a pending (log) compaction needs."""

    def __init__(self, state: TableState) -> None:
        self.savepointed = state.metadata.savepointed_files | _being_savepointed(state)
        # By file id, not (partition, file id): a compaction plan spells the partition as its writer
        # did (NFC `city=Zürich`, `p=A`), and a file system that folds names (macOS) lists the same
        # folder otherwise (NFD, `p=a`); the group it names must stay protected. Hudi's file ids are
        # unique across a table; should one recur, the earliest base instant protects the most.
        self.compaction = _by_file_id(state.metadata.pending_compaction)
        self.log_compaction = _by_file_id(state.metadata.pending_log_compaction)
        # Most tables have neither savepoints nor pending compactions: then no slice is protected,
        # and the per-slice questions below answer at once instead of once per file.
        self._any_compaction = bool(self.compaction) or bool(self.log_compaction)

    def savepointed_slice(self, file_slice: FileSlice) -> bool:
        savepointed = self.savepointed
        return bool(savepointed) and any(name in savepointed for name in file_slice.file_names)

    def in_pending_compaction(self, group: FileGroup) -> bool:
        return self._any_compaction and (group.file_id in self.compaction or group.file_id in self.log_compaction)

    def needed_for_compaction(self, group: FileGroup, file_slice: FileSlice) -> bool:
        return self._any_compaction and any(
            ops.get(group.file_id) is not None and file_slice.base_instant >= ops[group.file_id]
            for ops in (self.compaction, self.log_compaction)
        )


def _by_file_id(operations: Mapping[tuple[str, str], InstantTime]) -> dict[str, InstantTime]:
    """A pending (log) compaction's base instants by file id; the earliest where one recurs."""
    result: dict[str, InstantTime] = {}
    for (_, file_id), base in operations.items():
        if file_id not in result or base < result[file_id]:
            result[file_id] = base
    return result


def _being_savepointed(state: TableState) -> frozenset[str]:
    """Files of the latest slice as of each instant a savepoint is being taken of (its inflight
    file carries that instant's time): what the savepoint will list once it completes, which
    Hudi's cleaner would only protect from then on."""
    targets = [i.time for i in state.metadata.timeline.pending(Action.SAVEPOINT)]
    names: set[str] = set()
    for target in targets:
        for group in state.file_groups:
            as_of = next((s for s in group.slices if s.base_instant <= target), None)
            if as_of is not None:
                names.update(as_of.file_names)
    return frozenset(names)


class PolicyPlanner(ABC):
    """One clean policy's rules, bound to the declared values (`self.clean`)."""

    name: ClassVar[CleanPolicyName]

    def __init__(self, clean: CleanPolicy) -> None:
        assert clean.policy is self.name, f"{type(self).__name__} planned with policy {clean.policy}"
        self.clean = clean
        self._retained: int | None = None

    @property
    def retained(self) -> int:
        """The declared value of the retention field this policy owns (read once: the per-group
        rules ask for it for every file group of the table)."""
        if self._retained is None:
            self._retained = rule_for(self.name).retained(self.clean)
        return self._retained

    @abstractmethod
    def earliest_commit_to_retain(self, meta: TableMetadata, *, now: datetime) -> Instant | None:
        """Hudi's ECTR over the writes-and-compactions timeline; None when there is none (yet)."""

    def full_listing_reason(self) -> str | None:
        """Why this policy always lists every partition, or None when incremental scope may apply."""
        return None

    @abstractmethod
    def partition_deletions(
        self, state: TableState, groups: Sequence[FileGroup], ectr: Instant | None, protected: Protection,
        *, has_pending_files: bool,
    ) -> tuple[list[FileSlice], bool]:
        """The slices of one partition's groups to delete, and whether the partition may be deleted."""

    @abstractmethod
    def bare_deletions(
        self, state: TableState, groups: Iterable[FileGroup], ectr: Instant | None,
    ) -> Iterator[tuple[FileSlice, str]]:
        """Every slice the bare policy deletes (no savepoints, no pending compactions), with its rule."""

    @abstractmethod
    def summary(self) -> str:
        """The policy in a few words, with its declared value: `keep the latest 10 commits`."""

    @abstractmethod
    def nothing_yet(self, meta: TableMetadata, ectr: Instant | None) -> str | None:
        """Why the policy cannot delete anything yet, or None when that is not the reason."""

    @abstractmethod
    def nothing_to_delete(self, ectr: Instant | None) -> str:
        """Why a plan that could delete found nothing: every file group is within the policy."""


class _ByCommitTime(PolicyPlanner):
    """KEEP_LATEST_COMMITS and KEEP_LATEST_BY_HOURS: Hudi's `getFilesToCleanKeepingLatestCommits`,
    which keeps every slice a query at or after the earliest commit to retain may read."""

    def _commits_retained(self) -> int:
        """Hudi's `commitsRetained` argument: more completed commits than this before cleaning."""
        return 0

    def partition_deletions(
        self, state: TableState, groups: Sequence[FileGroup], ectr: Instant | None, protected: Protection,
        *, has_pending_files: bool,
    ) -> tuple[list[FileSlice], bool]:
        replaced = state.metadata.replaced
        if ectr is None or len(state.metadata.timeline.completed_writes) <= self._commits_retained():
            return [], False
        active = [g for g in groups if g.key not in replaced and g.slices]
        replaced_groups = [g for g in groups if g.key in replaced]
        deleted = _replaced_slices(replaced_groups, protected, before=ectr.time, replaced=replaced)
        for group in active:
            deleted.extend(_slices_before_ectr(group, ectr.time, protected))
        replaced_since = any(replaced[g.key] >= ectr.time for g in replaced_groups)
        return deleted, not active and not has_pending_files and not replaced_since

    def bare_deletions(
        self, state: TableState, groups: Iterable[FileGroup], ectr: Instant | None,
    ) -> Iterator[tuple[FileSlice, str]]:
        meta = state.metadata
        if ectr is None or len(meta.timeline.completed_writes) <= self._commits_retained():
            return
        for group in groups:
            replaced_at = meta.replaced.get(group.key)
            if replaced_at is None:
                yield from ((s, f"older than the earliest commit to retain {ectr.time}")
                            for s in _older_than_ectr(group, ectr.time))
            elif replaced_at < ectr.time:
                reason = f"replaced by {_replacer(state, replaced_at)} {replaced_at}"
                yield from ((s, reason) for s in group.slices)

    def nothing_to_delete(self, ectr: Instant | None) -> str:
        return f"no file version older than the earliest commit to retain {ectr.time if ectr else ''} is superseded"


class KeepLatestCommits(_ByCommitTime):
    """Keep what a query on any of the last `commits_retained` completed commits reads."""

    name = CleanPolicyName.KEEP_LATEST_COMMITS

    def _commits_retained(self) -> int:
        return self.retained

    def earliest_commit_to_retain(self, meta: TableMetadata, *, now: datetime) -> Instant | None:
        """Hudi's ECTR (the `commits_retained`-th latest completed instant by requested time, bounded
        by the earliest pending one), moved back to any instant that completed at or after the
        retained commit that completed first (`_completed_since`): the retained commits are the
        last ones to *complete*, and a query on one of them reads what had completed by then."""
        timeline = meta.timeline.writes_and_compactions
        completed = [i for i in timeline if i.is_completed]
        retained = self.retained
        if len(completed) <= retained or retained <= 0:
            return None
        nth = completed[len(completed) - retained]
        pending = [i for i in timeline if not i.is_completed]
        candidate: Instant | None = nth
        if pending and nth.time > pending[0].time:
            before = [i for i in completed if i.time < pending[0].time]
            candidate = before[-1] if before else None
        completions = sorted((i.completion_time for i in completed if i.completion_time is not None),
                             key=lambda t: t.normalized)
        if not completions:  # layout 1 records no completion times: Hudi's rule
            return candidate
        # An instant carried over from layout 1 (no completion time in its name) completed before
        # the table's upgrade, so before every instant that records one: with fewer of those than
        # are retained, the first retained commit to complete is a legacy one, earlier than all of
        # them. Falling back to Hudi's rule for the whole timeline dropped what the rule keeps.
        since = completions[-retained] if len(completions) >= retained else completions[0]
        return _completed_since(completed, since, candidate)

    def summary(self) -> str:
        return f"keep the latest {self.retained} commits"

    def nothing_yet(self, meta: TableMetadata, ectr: Instant | None) -> str | None:
        if ectr is not None:
            return None
        completed = len(meta.timeline.completed_writes)
        return f"{_count(completed, 'completed commit')}, not more than the {self.retained} retained"


class KeepLatestByHours(_ByCommitTime):
    """Keep what a query started in the last `hours_retained` hours reads."""

    name = CleanPolicyName.KEEP_LATEST_BY_HOURS

    def earliest_commit_to_retain(self, meta: TableMetadata, *, now: datetime) -> Instant | None:
        """Hudi's ECTR (the first completed instant requested at or after the cutoff), moved back to
        any earlier instant that *completed* at or after the cutoff (timeline layout 2 records it).

        A query sees the writes completed when it starts, so until a long write completes, queries
        read the slice before it (or, for a replacecommit, the groups it replaces). Hudi's rule
        alone leaves such a write, requested before the window and completed inside it, out of the
        window, and deletes what every query started inside the window before its completion
        reads. Stricter than Hudi: it only keeps more. Layout 1 records no completion time.
        """
        completed = [i for i in meta.timeline.writes_and_compactions if i.is_completed]
        cutoff = hours_cutoff(now, self.retained, meta.config.timezone)
        return _completed_since(completed, cutoff, next((i for i in completed if i.time >= cutoff), None))

    def summary(self) -> str:
        return f"keep {self.retained} h of history"

    def nothing_yet(self, meta: TableMetadata, ectr: Instant | None) -> str | None:
        if ectr is not None:
            return None
        return f"no commit inside the {self.retained} h window yet, so every version may still be read"


class KeepLatestFileVersions(PolicyPlanner):
    """Keep the newest `file_versions_retained` slices of every file group (no ECTR)."""

    name = CleanPolicyName.KEEP_LATEST_FILE_VERSIONS

    def earliest_commit_to_retain(self, meta: TableMetadata, *, now: datetime) -> Instant | None:
        return None

    def full_listing_reason(self) -> str:
        return f"{self.name} always lists every partition"

    def partition_deletions(
        self, state: TableState, groups: Sequence[FileGroup], ectr: Instant | None, protected: Protection,
        *, has_pending_files: bool,
    ) -> tuple[list[FileSlice], bool]:
        """Hudi's versions rule; but with a bound to record (`ectr`: a clustering is pending, see
        `runner.plan.clean._before_pending_replaces`) only the versions no savepoint from that bound
        on reads (`needed_from`), since Hudi lets a user savepoint any commit at or after it."""
        replaced = state.metadata.replaced
        active = [g for g in groups if g.key not in replaced and g.slices]
        replaced_groups = [g for g in groups if g.key in replaced]
        deleted = _replaced_slices(replaced_groups, protected, before=None, replaced=replaced)
        for group in active:
            deleted.extend(_old_versions(group, self.retained, protected))
        if ectr is not None:
            needed = {id(s) for g in groups for s in needed_from(g, ectr.time, replaced.get(g.key))}
            deleted = [s for s in deleted if id(s) not in needed]
        return deleted, not active and not has_pending_files

    def bare_deletions(
        self, state: TableState, groups: Iterable[FileGroup], ectr: Instant | None,
    ) -> Iterator[tuple[FileSlice, str]]:
        for group in groups:
            replaced_at = state.metadata.replaced.get(group.key)
            needed = {id(s) for s in needed_from(group, ectr.time, replaced_at)} if ectr is not None else set()
            if replaced_at is not None:
                reason = f"replaced by {_replacer(state, replaced_at)} {replaced_at}"
                yield from ((s, reason) for s in group.slices if id(s) not in needed)
                continue
            for number, s in enumerate(group.slices, start=1):
                if number > self.retained and id(s) not in needed:
                    yield s, f"version {number} of {self.retained} retained"

    def summary(self) -> str:
        return f"keep {self.retained} versions of every file group"

    def nothing_yet(self, meta: TableMetadata, ectr: Instant | None) -> str | None:
        return None

    def nothing_to_delete(self, ectr: Instant | None) -> str:
        return f"no file group has more than {_count(self.retained, 'version')}"


PLANNERS: Mapping[CleanPolicyName, type[PolicyPlanner]] = {
    planner.name: planner for planner in (KeepLatestCommits, KeepLatestFileVersions, KeepLatestByHours)
}


def planner_for(clean: CleanPolicy) -> PolicyPlanner:
    """The planner of the declared policy, bound to its declared values."""
    return PLANNERS[clean.policy](clean)


# Earlier than any instant time: the cutoff of a window wider than the calendar.
EARLIEST_INSTANT = InstantTime("0" * 17)


def hours_cutoff(now: datetime, hours: int, table_timezone: str) -> InstantTime:
    """`now - hours`, rendered as an instant time in the table's timeline timezone (UTC or LOCAL)."""
    aware = now if now.tzinfo else now.replace(tzinfo=UTC)
    zone = UTC if table_timezone.upper() == "UTC" else None
    try:
        local = (aware - timedelta(hours=hours)).astimezone(zone)
    except OverflowError:  # before year 1: the window holds the whole history
        return EARLIEST_INSTANT
    if local.year < 1000:  # instant times have four-digit years; no Hudi instant is that old
        return EARLIEST_INSTANT
    return InstantTime.from_datetime(local.replace(tzinfo=None))


def _completed_since(completed: Sequence[Instant], since: InstantTime, ectr: Instant | None) -> Instant | None:
    """`ectr`, or the first of `completed` (by requested time) that completed at or after `since`
    when that comes earlier (None stays None): a query started at `since` or later reads, for each file group, the
    newest slice completed by then, so the slices of every write completed since (and the newest
    one before the earliest of them) must stay. Equal to `ectr` when writes complete in the order
    they were requested; only ever earlier (keeping more) otherwise. Layout 1 records no completion
    time, so its instants never move it."""
    if ectr is None:  # Hudi cleans nothing then; so does this rule
        return None
    late = next((i for i in completed if i.completion_time is not None and i.completion_time >= since), None)
    return late if late is not None and late.time < ectr.time else ectr


def needed_from(group: FileGroup, bound: InstantTime, replaced_at: InstantTime | None) -> list[FileSlice]:
    """The slices of `group` a savepoint of a commit at or after `bound` may list: the one it read
    as of `bound` and every later one, none if a replacecommit at or before `bound` replaced it.

    Hudi refuses a savepoint older than the last clean's earliest commit to retain
    (`SavepointActionExecutor`: "beyond the lookup window"), so a clean recording `bound` vouches
    that these are all still there. A savepoint lists the latest slice left as of its commit; one
    the clean deleted leaves it an older version, or none, to restore.
    """
    if replaced_at is not None and replaced_at <= bound:
        return []
    floor = next((s.base_instant for s in group.slices if s.base_instant <= bound), None)
    return [s for s in group.slices if floor is None or s.base_instant >= floor]


def _replaced_slices(
    groups: Iterable[FileGroup],
    protected: Protection,
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


def _slices_before_ectr(group: FileGroup, ectr: InstantTime, protected: Protection) -> list[FileSlice]:
    """Old slices of an active group that are neither savepointed nor needed by a compaction."""
    return [
        s
        for s in _older_than_ectr(group, ectr)
        if not protected.savepointed_slice(s) and not protected.needed_for_compaction(group, s)
    ]


def _older_than_ectr(group: FileGroup, ectr: InstantTime) -> list[FileSlice]:
    """Hudi keeps the latest slice and the newest slice before the ECTR (a query at the ECTR reads it)."""
    latest = group.slices[0].base_instant
    before = next((s.base_instant for s in group.slices if s.base_instant < ectr), None)
    return [s for s in group.slices if s.base_instant < ectr and s.base_instant not in (latest, before)]


def _old_versions(group: FileGroup, versions: int, protected: Protection) -> list[FileSlice]:
    """KEEP_LATEST_FILE_VERSIONS: the slices protected for compaction count as one kept version."""
    candidates = [s for s in group.slices if not protected.needed_for_compaction(group, s)]
    keep = versions - (1 if protected.in_pending_compaction(group) else 0)
    return [s for s in candidates[max(keep, 0):] if not protected.savepointed_slice(s)]


def _replacer(state: TableState, time: InstantTime) -> str:
    commit = state.metadata.commits.get(time)
    operation = (commit.operation_type or "") if commit is not None else ""
    if operation.upper() == "CLUSTER":
        return "clustering"
    return operation.lower() or "replacecommit"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
