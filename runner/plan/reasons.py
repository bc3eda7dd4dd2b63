"""Why each file is in a clean plan, which files a savepoint or pending compaction keeps, and why a
clean deletes nothing (pure).

`plan_clean` decides; this module explains its decision afterwards by re-reading the same rules
without protections: a slice the bare policy would delete is either in the plan (and its files get
the rule as their reason) or kept (and gets the savepoint or compaction that protects it). Keeping
the explanation apart leaves the cleaner's rules in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from runner.declarations.model import CleanPolicy, CleanPolicyName
from runner.hudi.files import FileGroup, FileSlice, relative_path
from runner.hudi.instant import Instant
from runner.hudi.state import TableState
from runner.plan.clean import CleanScope
from runner.plan.model import CleanStep, FileKept


def explain_clean(policy: CleanPolicy, state: TableState, scope: CleanScope, step: CleanStep) -> CleanStep:
    """`step` with a reason on every file, the files kept by protections, and the overall why."""
    reasons = dict(_policy_reasons(policy, state, scope))
    planned = {f.path for f in step.files_to_delete}
    files = tuple(replace(f, reason=reasons.get(f.path, f.reason)) for f in step.files_to_delete)
    kept = tuple(sorted(
        (FileKept(partition, path, size, _protection(state, partition, path))
         for path, (partition, size) in _would_delete_files(policy, state, scope).items() if path not in planned),
        key=lambda f: f.path,
    ))
    explained = replace(step, files_to_delete=files, kept=kept)
    return replace(explained, why=_why(policy, state, scope, explained))


def _policy_reasons(policy: CleanPolicy, state: TableState, scope: CleanScope) -> Iterator[tuple[str, str]]:
    for file_slice, reason in _would_delete(policy, state, scope):
        for f in file_slice.files:
            text = reason if f is file_slice.base_file else f"log file of a cleaned slice ({reason})"
            yield relative_path(file_slice.partition, f.name), text


def _would_delete_files(policy: CleanPolicy, state: TableState, scope: CleanScope) -> dict[str, tuple[str, int]]:
    return {
        relative_path(s.partition, f.name): (s.partition, max(f.size, 0))
        for s, _ in _would_delete(policy, state, scope)
        for f in s.files
    }


def _would_delete(policy: CleanPolicy, state: TableState, scope: CleanScope) -> Iterator[tuple[FileSlice, str]]:
    """Every slice the bare policy deletes (no savepoints, no pending compactions), with its rule."""
    meta = state.metadata
    ectr = scope.earliest_commit_to_retain
    by_versions = policy.policy is CleanPolicyName.KEEP_LATEST_FILE_VERSIONS
    retained = policy.commits_retained if policy.policy is CleanPolicyName.KEEP_LATEST_COMMITS else 0
    if not by_versions and (ectr is None or len(meta.timeline.completed_writes) <= retained):
        return
    wanted = set(state.partitions if scope.partitions is None else scope.partitions)
    for group in (g for g in state.file_groups if g.partition in wanted and g.slices):
        replaced_at = meta.replaced.get(group.key)
        if replaced_at is not None:
            if by_versions or (ectr is not None and replaced_at < ectr.time):
                reason = f"replaced by {_replacer(state, replaced_at)} {replaced_at}"
                yield from ((s, reason) for s in group.slices)
        elif by_versions:
            versions = policy.file_versions_retained
            for number, s in enumerate(group.slices, start=1):
                if number > versions:
                    yield s, f"version {number} of {versions} retained"
        elif ectr is not None:
            yield from ((s, f"older than the earliest commit to retain {ectr.time}")
                        for s in _older_than_ectr(group, ectr))


def _older_than_ectr(group: FileGroup, ectr: Instant) -> Iterable[FileSlice]:
    """Hudi keeps the latest slice and the newest slice before the ECTR (a query at the ECTR reads it)."""
    latest = group.slices[0].base_instant
    before = next((s.base_instant for s in group.slices if s.base_instant < ectr.time), None)
    return [s for s in group.slices if s.base_instant < ectr.time and s.base_instant not in (latest, before)]


def _replacer(state: TableState, time: str) -> str:
    commit = state.metadata.commits.get(time)  # type: ignore[call-overload]
    operation = (commit.operation_type or "") if commit is not None else ""
    if operation.upper() == "CLUSTER":
        return "clustering"
    return operation.lower() or "replacecommit"


def _protection(state: TableState, partition: str, path: str) -> str:
    meta = state.metadata
    name = path.rsplit("/", 1)[-1]
    savepoints = sorted(str(t) for t, sp in meta.savepoints.items()
                        if any(name in names for names in sp.partition_files.values()))
    if savepoints:
        return f"kept for savepoint {', '.join(savepoints)}"
    file_id = next((g.file_id for g in state.file_groups if g.partition == partition
                    for s in g.slices if name in s.file_names), None)
    for instant, operations in meta.compaction_plans.items():
        if any(op.partition_path == partition and op.file_id == file_id for op in operations):
            return f"kept for pending compaction {instant.time}"
    if (partition, file_id) in meta.pending_log_compaction:
        return "kept for a pending log compaction"
    return "kept: a pending compaction needs its slice"


def _why(policy: CleanPolicy, state: TableState, scope: CleanScope, step: CleanStep) -> str:
    ectr = scope.earliest_commit_to_retain
    rule = {
        CleanPolicyName.KEEP_LATEST_COMMITS: f"keep the latest {policy.commits_retained} commits",
        CleanPolicyName.KEEP_LATEST_BY_HOURS: f"keep {policy.hours_retained} h of history",
        CleanPolicyName.KEEP_LATEST_FILE_VERSIONS: f"keep {policy.file_versions_retained} versions of every file group",
    }[policy.policy]
    kept = f"; {_count(len(step.kept), 'file')} kept for savepoints or pending compactions" if step.kept else ""
    if not step.is_empty:
        anchor = f", earliest commit to retain {ectr.time}" if ectr is not None else ""
        return f"{rule}{anchor}{kept}"
    completed = len(state.metadata.timeline.completed_writes)
    if policy.policy is CleanPolicyName.KEEP_LATEST_COMMITS and ectr is None:
        why = f"{_count(completed, 'completed commit')}, not more than the {policy.commits_retained} retained"
    elif policy.policy is CleanPolicyName.KEEP_LATEST_BY_HOURS and ectr is None:
        why = f"no commit inside the {policy.hours_retained} h window yet, so every version may still be read"
    elif scope.partitions == ():
        why = scope.reason
    elif policy.policy is CleanPolicyName.KEEP_LATEST_FILE_VERSIONS:
        why = f"no file group has more than {_count(policy.file_versions_retained, 'version')}"
    else:
        why = f"no file version older than the earliest commit to retain {ectr.time if ectr else ''} is superseded"
    return f"{rule}: {why}{kept}"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
