"""Why each file is in a clean plan, which files a savepoint or pending compaction keeps, and why a
clean deletes nothing (pure).

`plan_clean` decides; this module explains its decision afterwards by re-reading the same rules
without protections (each policy's `bare_deletions` in `runner.plan.policies`): a slice the bare
policy would delete is either in the plan (and its files get the rule as their reason) or kept (and
gets the savepoint or compaction that protects it). Keeping the explanation apart leaves the
cleaner's rules in one place.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from runner.declarations.model import CleanPolicy
from runner.hudi.files import FileSlice, relative_path
from runner.hudi.state import TableState
from runner.plan.clean import CleanScope
from runner.plan.model import CleanStep, FileKept
from runner.plan.policies import planner_for


def explain_clean(policy: CleanPolicy, state: TableState, scope: CleanScope, step: CleanStep) -> CleanStep:
    """`step` with a reason on every file, the files kept by protections, and the overall why."""
    reasons = dict(_policy_reasons(policy, state, scope))
    planned = {f.path for f in step.files_to_delete}
    files = tuple(replace(f, reason=reasons.get(f.path, f.reason)) for f in step.files_to_delete)
    kept_by = _Protections(state)
    kept = tuple(sorted(
        (FileKept(partition, path, size, kept_by.of(partition, path))
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
    wanted = set(state.partitions if scope.partitions is None else scope.partitions)
    groups = (g for g in state.file_groups if g.partition in wanted and g.slices)
    return planner_for(policy).bare_deletions(state, groups, scope.earliest_commit_to_retain)


class _Protections:
    """Which savepoint or pending compaction keeps a file, from indexes built once on first use:
    a savepoint can keep a large share of a table, and searching every file group and savepoint
    list per kept file made explaining it kept files x files."""

    def __init__(self, state: TableState) -> None:
        self._state = state
        self._savepoints: dict[str, set[str]] | None = None
        self._file_ids: dict[tuple[str, str], str] | None = None
        self._compactions: dict[tuple[str, str], str] | None = None

    def of(self, partition: str, path: str) -> str:
        meta = self._state.metadata
        name = path.rsplit("/", 1)[-1]
        if self._savepoints is None:
            self._savepoints = {}
            for time, sp in meta.savepoints.items():
                for names in sp.partition_files.values():
                    for saved in names:
                        self._savepoints.setdefault(saved, set()).add(str(time))
        savepoints = sorted(self._savepoints.get(name, ()))
        if savepoints:
            return f"kept for savepoint {', '.join(savepoints)}"
        if self._file_ids is None:  # the first group and slice naming the file, as a search would find
            self._file_ids = {}
            for g in self._state.file_groups:
                for s in g.slices:
                    for file_name in s.file_names:
                        self._file_ids.setdefault((g.partition, file_name), g.file_id)
        if self._compactions is None:  # the first plan, in timeline order, holding the group
            self._compactions = {}
            for instant, operations in meta.compaction_plans.items():
                for op in operations:
                    self._compactions.setdefault((op.partition_path, op.file_id), str(instant.time))
        file_id = self._file_ids.get((partition, name))
        compaction = self._compactions.get((partition, file_id)) if file_id is not None else None
        if compaction is not None:
            return f"kept for pending compaction {compaction}"
        if (partition, file_id) in meta.pending_log_compaction:
            return "kept for a pending log compaction"
        return "kept: a pending compaction needs its slice"


def _why(policy: CleanPolicy, state: TableState, scope: CleanScope, step: CleanStep) -> str:
    planner = planner_for(policy)
    ectr = scope.earliest_commit_to_retain
    rule = planner.summary()
    kept = f"; {_count(len(step.kept), 'file')} kept for savepoints or pending compactions" if step.kept else ""
    if not step.is_empty:
        anchor = f", earliest commit to retain {ectr.time}" if ectr is not None else ""
        return f"{rule}{anchor}{kept}"
    why = planner.nothing_yet(state.metadata, ectr)
    if why is None:
        why = scope.reason if scope.partitions == () else planner.nothing_to_delete(ectr)
    return f"{rule}: {why}{kept}"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
