"""A saved plan may only narrow the plan made under the lock; every recorded value is the fresh one.

`runner apply plan.json` must do no more than the reviewed plan and no more than the declaration
allows now. So the saved plan is read as a *selection*: which of the fresh plan's files, emptied
partitions and rewrite groups to act on (its `clean` and `resize` steps), matched by identity
(canonical path). Everything else a saved plan carries — policy, earliest commit to retain,
savepoints, last completed commit, sizes, file ids, partitions of entries, sizing limits — is
ignored and taken from the fresh plan, which is computed from storage, the timeline and the real
clock. The fresh plan's other steps (pending cleans and resizes to finish, the metadata-table
decision) are kept as they are, unless they do what the saved plan never showed
(`refuse_unreviewed`). A selection that names anything the fresh plan would not do, names it
twice, or holds an empty group is refused as a whole.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType

from runner.errors import RefusedError, RequirementFailed
from runner.execute.clean import file_id_of
from runner.execute.paths import partition_path, table_relative
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.plan.model import TablePlan
from runner.plan.sizing import BLOCKED_NOTE_PREFIXES
from runner.plan.steps import (
    ACCOMPANYING,
    Clean,
    FinishPendingClean,
    FinishPendingResize,
    Resize,
    RewriteGroup,
    StepKind,
)
from runner.shortlist import shortlist

_HINT = "re-create the plan with `runner plan` rather than editing it."

NARROWED_NOTE = (
    "the saved plan deletes less than a fresh plan would, so the clean is recorded as narrowed: the next "
    "clean lists every partition and reclaims the rest"
)

# Keeping a replaced file group, a narrowed clean may vouch for no bound past the replacecommit that
# replaced it: Hudi's archiver reads the last clean plan's earliest commit to retain as "every group
# replaced before this is cleaned" and would archive that replacecommit, so the groups the reviewer
# kept would turn live again and readers would read their records twice
# (`ClusteringUtils.getEarliestInstantToRetainForClustering`). Nor may it record a bound below what it
# deletes: Hudi lets a user savepoint any commit at or after the last clean's earliest commit to
# retain (`SavepointActionExecutor`), and a savepoint of a commit whose files this clean deleted
# would restore older records, or none. So it records that replacecommit as its bound and deletes
# nothing a savepoint from there on reads (`runner.plan.policies.needed_from`).
NARROWED_KEEPS_REPLACED = (
    "the saved plan keeps file groups replacecommit {replace} replaced, so the clean records {bound} as its "
    "earliest commit to retain (Hudi's archiver keeps the replacecommit hiding them) and deletes nothing a "
    "savepoint from {bound} on reads: {held} more of the plan's file(s) stay"
)

# The files (table-relative) a savepoint of a commit at or after the instant may list, in the partitions given.
SavepointReads = Callable[[InstantTime, Collection[str]], Collection[str]]


def narrow(saved: TablePlan, fresh: TablePlan, *, exists: Callable[[str], bool],
           replaced: Mapping[tuple[str, str], InstantTime] = MappingProxyType({}),
           savepoint_reads: SavepointReads | None = None) -> TablePlan:
    """The fresh plan restricted to what `saved` selects.

    Args:
        saved: the plan read from plan.json (untrusted).
        fresh: the plan computed under the lock from storage and the real clock.
        exists: whether a table-relative path exists; a selected file the fresh plan lacks is
            accepted only when it is gone (its delete already happened in an earlier run).
        replaced: file group -> the completed replacecommit that replaced it (`TableMetadata.replaced`),
            to tell when a narrowed clean keeps a replaced group (`NARROWED_KEEPS_REPLACED`).
        savepoint_reads: what a savepoint from an instant on reads, read from storage only then.

    Raises:
        RefusedError: the saved plan names a file or partition the fresh plan would not delete or
            rewrite, names one twice (within or across groups), or has an empty rewrite group.
    """
    clean, clean_note = _narrow_clean(saved.name, saved.clean, fresh.clean, exists, replaced, savepoint_reads)
    sizing = _narrow_sizing(saved.name, saved.sizing, fresh.sizing, fresh.notes)
    notes = fresh.notes + ((clean_note,) if clean_note else ())
    # Every other step (pending work, the metadata-table decision) is the fresh plan's own.
    kept = tuple(step for step in (clean, sizing) if step is not None)
    dropped = tuple(kind for kind, step in ((StepKind.CLEAN, clean), (StepKind.RESIZE, sizing)) if step is None)
    return replace(fresh.with_steps(*kept, without=dropped), notes=notes)


def _narrow_clean(name: str, saved: Clean | None, fresh: Clean | None, exists: Callable[[str], bool],
                  replaced: Mapping[tuple[str, str], InstantTime],
                  savepoint_reads: SavepointReads | None) -> tuple[Clean | None, str | None]:
    if saved is None or (not saved.files_to_delete and not saved.partitions_to_delete):
        return None, None
    files = _unique(name, (f.path for f in saved.files_to_delete), "file", table_relative)
    parts = _unique(name, saved.partitions_to_delete, "partition", partition_path)
    fresh_files = {f.path: f for f in fresh.files_to_delete} if fresh else {}
    fresh_parts = set(fresh.partitions_to_delete) if fresh else set()
    extra = [p for p in files if p not in fresh_files and exists(p)]
    extra += [p + "/" for p in parts if p not in fresh_parts and exists(p)]
    if extra or fresh is None:
        shown = shortlist(extra, 5)
        raise RefusedError(
            f"table {name}: the plan asks to delete what the table still needs or the policy keeps: "
            f"{shown or 'a clean the declaration no longer asks for'}; nothing was deleted",
            hint=_HINT,
        )
    chosen = tuple(fresh_files[p] for p in sorted(files) if p in fresh_files)
    chosen_parts = tuple(p for p in sorted(parts) if p in fresh_parts)
    if not chosen and not chosen_parts:
        return None, None
    whole = len(chosen) == len(fresh_files) and len(chosen_parts) == len(fresh_parts)
    if whole:
        return replace(fresh, files_to_delete=chosen, partitions_to_delete=chosen_parts), None
    # Recording the fresh bound after deleting less tells incremental cleaning that everything before
    # it was reclaimed, so the clean is marked narrowed and the next one lists every partition.
    step = replace(fresh, files_to_delete=chosen, partitions_to_delete=chosen_parts, narrowed=True)
    note = NARROWED_NOTE
    selected = {f.path for f in chosen}
    kept_replaced = [replaced[key] for f in fresh.files_to_delete if f.path not in selected
                     if (key := (f.partition, file_id_of(f.path) or "")) in replaced]
    if kept_replaced:
        first = min(kept_replaced, key=lambda t: t.normalized)
        ectr = fresh.earliest_commit_to_retain
        bound = (ectr if ectr is not None and ectr.time < first
                 else Instant(first, Action.REPLACE_COMMIT, State.COMPLETED))
        assert savepoint_reads is not None, "a narrowed clean keeping replaced groups needs what savepoints read"
        read = set(savepoint_reads(bound.time, {f.partition for f in chosen}))
        held = [f for f in chosen if f.path in read]
        chosen = tuple(f for f in chosen if f.path not in read)
        step = replace(step, files_to_delete=chosen, earliest_commit_to_retain=bound)
        note = f"{note}; {NARROWED_KEEPS_REPLACED.format(replace=first, bound=bound.time, held=len(held))}"
    # A partition goes only when the clean empties it: not while it keeps one of the plan's files there.
    deleting = {c.path for c in chosen}
    left = {f.partition for f in fresh.files_to_delete if f.path not in deleting}
    step = replace(step, partitions_to_delete=tuple(p for p in step.partitions_to_delete if p not in left))
    if step.is_empty:
        return None, None
    return step, note


def _narrow_sizing(name: str, saved: Resize | None, fresh: Resize | None, notes: Iterable[str]) -> Resize | None:
    if saved is None or not saved.groups:
        return None
    for index, group in enumerate(saved.groups):
        if not group.files:
            raise RefusedError(f"table {name}: resize group {index} of partition {group.partition!r} is empty; "
                               "nothing was rewritten", hint=_HINT)
    paths = _unique(name, (f.path for g in saved.groups for f in g.files), "resize input", table_relative)
    fresh_group = {f.path: (i, g) for i, g in enumerate(fresh.groups if fresh else ()) for f in g.files}
    missing = [p for p in paths if p not in fresh_group]
    if missing or fresh is None:
        shown = shortlist(missing, 5)
        blocked = "".join(f"; {n}" for n in notes if n.startswith(BLOCKED_NOTE_PREFIXES))
        raise RefusedError(
            f"table {name}: the plan asks to rewrite files a fresh plan would not rewrite (not small, not "
            f"the latest base file, busy, or sizing is not declared): {shown or 'every resize group'}; "
            f"nothing was rewritten{blocked}",
            hint=_HINT,
        )
    groups: list[RewriteGroup] = []
    for index, group in enumerate(saved.groups):
        owners = {fresh_group[table_relative(f.path)][0] for f in group.files}
        if len(owners) != 1:
            raise RefusedError(
                f"table {name}: resize group {index} mixes files that a fresh plan packs into different "
                "groups (or partitions); nothing was rewritten", hint=_HINT)
        selected = {table_relative(f.path) for f in group.files}
        target = fresh_group[next(iter(selected))][1]
        groups.append(RewriteGroup(target.partition, tuple(f for f in target.files if f.path in selected)))
    return replace(fresh, groups=tuple(groups))


def _unique(name: str, raw: Iterable[str], what: str, normal: Callable[..., str]) -> list[str]:
    """Canonical forms of `raw`, refusing any that repeats (two spellings of one path included)."""
    seen: dict[str, str] = {}
    for value in raw:
        canonical = normal(value, what=f"{what} in the plan of table {name}")
        if canonical in seen:
            raise RefusedError(
                f"table {name}: the plan lists {what} {canonical!r} twice ({seen[canonical]!r} and {value!r}); "
                "applying it would delete or rewrite it twice; nothing was changed", hint=_HINT)
        seen[canonical] = value
    return list(seen)


def refuse_unreviewed(saved: TablePlan, narrowed: TablePlan, pending: Mapping[str, PendingClean]) -> None:
    """Refuse work the narrowed plan would do that the saved plan never showed.

    Pending cleans and the metadata-table decision come from the fresh plan, so something that
    appeared after the plan was made (a clean Hudi scheduled, a metadata table created without a
    data commit) would otherwise run unreviewed: the timeline fingerprint leaves cleans out, and
    creating a metadata table writes no data instant. A pending clean the saved plan did not list
    is accepted only when everything it deletes is in the saved plan's own clean (an interrupted
    apply of this same plan leaves exactly such a clean behind). An interrupted resize the fresh
    plan would finish or roll back must be among the saved plan's `finish_pending_resize` instants.

    Args:
        pending: each pending clean of the table by instant time, as (files, partitions) the
            clean plan deletes, canonical and table-relative.

    Raises:
        RequirementFailed: naming the instant or step and what it would delete; nothing was changed.
    """
    if not narrowed.has_work:
        return
    listed = saved.step(StepKind.FINISH_PENDING_CLEAN)
    reviewed_instants = set(listed.instants) if isinstance(listed, FinishPendingClean) else set()
    clean = saved.clean
    reviewed_files = {table_relative(f.path) for f in clean.files_to_delete} if clean else set()
    reviewed_parts = {partition_path(p) for p in clean.partitions_to_delete} if clean else set()
    finishing = narrowed.step(StepKind.FINISH_PENDING_CLEAN)
    for instant in finishing.instants if isinstance(finishing, FinishPendingClean) else ():
        if instant in reviewed_instants:
            continue
        files, partitions = pending[instant]
        beyond = sorted(set(files) - reviewed_files) + sorted(p + "/" for p in set(partitions) - reviewed_parts)
        if beyond:
            raise RequirementFailed(
                f"table {saved.name}: pending clean {instant} appeared on the timeline after the plan was made, "
                f"and it deletes {len(beyond)} path(s) not in the plan, e.g. {beyond[0]}; nothing was changed",
                hint="run `runner plan` again, review the pending clean it shows, and apply that plan.",
            )
    shown = {s.kind for s in saved.steps}
    for step in narrowed.steps:
        if step.kind in ACCOMPANYING and step.kind not in shown:
            raise RequirementFailed(
                f"table {saved.name}: apply would now also {_DOES[step.kind]}, which the plan did not show "
                "(a metadata table appeared or changed since the plan was made); nothing was changed",
                hint="run `runner plan` again, review it, and apply that plan.",
            )
    _refuse_unshown_resizes(saved, narrowed)


def _refuse_unshown_resizes(saved: TablePlan, narrowed: TablePlan) -> None:
    """An interrupted resize is finished (or rolled back) from the fresh plan, so each of its
    instants must be one the saved plan lists: a plan stripped of the step shows no rewrite at all."""
    finishing = narrowed.step(StepKind.FINISH_PENDING_RESIZE)
    listed = saved.step(StepKind.FINISH_PENDING_RESIZE)
    reviewed = set(listed.instants) if isinstance(listed, FinishPendingResize) else set()
    unshown = sorted(set(finishing.instants) - reviewed) if isinstance(finishing, FinishPendingResize) else []
    if unshown:
        raise RequirementFailed(
            f"table {saved.name}: apply would now also finish or roll back the interrupted resize {unshown[0]} "
            f"(finish_pending_resize), which the plan did not show (expected it among the plan's "
            f"finish_pending_resize instants {sorted(reviewed)}); nothing was changed",
            hint="run `runner plan` again, review it, and apply that plan.",
        )
    # Finishing rewrites data and rolling back undoes the resize: apply does what the plan showed.
    if isinstance(finishing, FinishPendingResize) and isinstance(listed, FinishPendingResize) \
            and finishing.roll_back != listed.roll_back:
        does, shown = (("roll back", "finished") if finishing.roll_back
                       else ("finish (rewriting its files)", "rolled back"))
        raise RequirementFailed(
            f"table {saved.name}: apply would {does} the interrupted resize {finishing.instants[0]}, which the plan "
            f"showed {shown} (finish_pending_resize roll_back: expected {str(finishing.roll_back).lower()}, found "
            f"{str(listed.roll_back).lower()}); nothing was changed",
            hint="run `runner plan` again, review it, and apply that plan.",
        )


# (files, partitions) a pending clean deletes, canonical and table-relative.
PendingClean = tuple[Iterable[str], Iterable[str]]

_DOES = {
    StepKind.DISABLE_METADATA_TABLE: "remove the table's metadata table (disable_metadata_table)",
    StepKind.UPDATE_METADATA_TABLE: "record its changes in the table's metadata table (update_metadata_table)",
}
