"""Rollbacks, restores and savepoints that change which file slices readers need.

A rollback of a *completed* write (`hudi-cli commit rollback`, or each step of a restore to a
savepoint) deletes that write's files and then its instant. Until it completes, the write still
looks committed, so its slices look like the latest ones and the slices before them like old
versions a cleaner may delete; once it completes, exactly those older slices are the latest again.
Cleaning in between deletes the data readers are about to fall back to, and resizing copies rows
the rollback is undoing into new file groups. A rollback of a write that never completed is
harmless here: that write's files are uncommitted, never deleted or rewritten.

Planning refuses while one is pending (`refuse_pending_undo`). Hudi writers do not take the
runner's lock, so one may also start (or even finish) after the locked re-plan, while apply starts
Spark or writes the metadata table: `history_moved` compares the table with the one the plan was
made from, just before a clean is recorded, before its first delete and before a resize completes
(the metadata table's presence and partitions too, which decide how apply records its changes).
"""

from __future__ import annotations

from runner.errors import CorruptMetadataError, RefusedError
from runner.hudi.instant import Action, InstantTime, State
from runner.hudi.metadata import decode_rollback_plan
from runner.hudi.properties import TableConfig
from runner.hudi.state import METADATA_TABLE, PROPERTIES, TableMetadata, read_timeline_with_mdt
from runner.hudi.timeline import Timeline
from runner.storage import Storage

_HINT = ("let Hudi finish the rollback or restore (its next write, or `hudi-cli`, completes it), then plan "
         "again; the runner does not clean or resize a table whose history is being undone.")


def refuse_pending_undo(storage: Storage, meta: TableMetadata) -> None:
    """Refuse to plan maintenance while a restore, or a rollback of a completed write, is pending.

    Raises:
        RefusedError: naming the pending instant file and what it undoes; nothing was changed.
    """
    why = _pending_undo(storage, meta.timeline, meta.timeline_folder)
    if why is not None:
        raise RefusedError(
            f"table {storage.uri}: {why}; expected no rollback or restore of a completed write "
            "in progress: the file slices before that write become the latest again once it completes, "
            "so cleaning or resizing now could delete or copy the wrong ones; nothing was changed",
            hint=_HINT,
        )


def refuse_pending_restore(storage: Storage, meta: TableMetadata) -> None:
    """Refuse to start a write while a restore is requested or inflight, as Hudi's write client does
    ("Found pending restore in active timeline"): the restore rolls back the writes its plan lists,
    one at a time, and a commit started meanwhile merges their rows into files no restore undoes.

    Raises:
        RefusedError: naming the restore's instant file; nothing was written.
    """
    for instant in meta.timeline.pending(Action.RESTORE):
        shown = _shown(meta.timeline, meta.timeline_folder, instant.time, instant.action)
        raise RefusedError(
            f"table {storage.uri}: a restore is in progress ({shown}); expected no pending restore before a "
            "write: the write would copy rows of the writes being rolled back into new files, which stay once "
            "the restore completes; nothing was written",
            hint="let Hudi complete the restore (run it again with `hudi-cli` or Spark's restore procedure), "
            "then write again.",
        )


def history_moved(storage: Storage, before: TableMetadata, *, savepoints: bool,
                  now: TableMetadata | None = None) -> str | None:
    """Why the table, read now (or `now`, when the caller has just read it), no longer supports a
    plan made from `before`; None if it does.

    It moved when a restore, or a rollback of a write `before` shows completed, appeared since (in
    any state: a fast one may already be done, its write's instant gone), or, with `savepoints`, a
    savepoint appeared (in any state: a `.savepoint.inflight` lists the slices of its instant as
    they are now). Rollbacks of writes that never completed (Hudi rolls failed writes back before
    each new one) and everything else a concurrent writer adds (new slices only make older ones
    older) leave the plan valid.

    It also moved when the metadata table appeared, went, or changed its partitions (built or being
    built): whether and how apply records its change there was decided from `before`, and a
    metadata table that does not hear of deleted or replaced files lists them to its readers.
    """
    if now is None:
        config, timeline, folder, has_mdt = read_timeline_with_mdt(storage)
    else:
        config, timeline, folder, has_mdt = now.config, now.timeline, now.timeline_folder, now.has_metadata_table
    mdt = _metadata_table_change(before, config, has_mdt)
    if mdt is not None:
        return mdt
    seen = {(i.time.normalized, i.family) for i in before.timeline.instants}
    completed = {str(i.time) for i in before.timeline.instants if i.is_completed}
    for instant in timeline.instants:
        if (instant.time.normalized, instant.family) in seen:
            continue
        shown = _shown(timeline, folder, instant.time, instant.action)
        if instant.family is Action.RESTORE:
            return f"a restore ({shown}) was started since the plan was made"
        if instant.family is Action.SAVEPOINT and savepoints:
            return (f"a savepoint of {instant.time} ({shown}) was started since the plan was made; it lists "
                    "the slices of that instant, which the plan may delete")
        if instant.family is Action.ROLLBACK:
            target = _rollback_target(storage, timeline, folder, instant.time)
            if target is None:
                return (f"a rollback ({shown}) was started since the plan was made and its plan does not say "
                        "which write it undoes")
            if target in completed:
                return f"a rollback of the completed write {target} ({shown}) was started since the plan was made"
    return _pending_undo(storage, timeline, folder)


def rollbacks_of(storage: Storage, timeline: Timeline, folder: str, time: InstantTime) -> dict[InstantTime, str]:
    """The rollbacks on `timeline` (any state) whose plan undoes instant `time`, each with its file."""
    return {
        instant.time: _shown(timeline, folder, instant.time, instant.action)
        for instant in timeline.instants
        if instant.family is Action.ROLLBACK and _rollback_target(storage, timeline, folder, instant.time) == str(time)
    }


def _metadata_table_change(before: TableMetadata, config: TableConfig, exists: bool) -> str | None:
    was = before.config
    for key, old, new in (
        ("hoodie.table.metadata.partitions", was.metadata_partitions, config.metadata_partitions),
        ("hoodie.table.metadata.partitions.inflight", was.metadata_partitions_inflight,
         config.metadata_partitions_inflight),
    ):
        if sorted(old) != sorted(new):
            return (f"{PROPERTIES} changed its metadata table since the plan was made ({key}: was "
                    f"{','.join(old) or 'empty'}, now {','.join(new) or 'empty'})")
    if exists != before.has_metadata_table:
        return f"{METADATA_TABLE} {'appeared' if exists else 'was removed'} since the plan was made"
    return None


def _pending_undo(storage: Storage, timeline: Timeline, folder: str) -> str | None:
    completed = {str(i.time) for i in timeline.instants if i.is_completed}
    for instant in timeline.pending(Action.ROLLBACK, Action.RESTORE):
        shown = _shown(timeline, folder, instant.time, instant.action)
        if instant.action is Action.RESTORE:
            return f"a restore is in progress, rolling back completed writes ({shown})"
        target = _rollback_target(storage, timeline, folder, instant.time)
        if target is not None and target not in completed:
            continue  # undoes a write that never completed: its files are not the runner's to touch
        return (f"a rollback of the completed write {target} is in progress ({shown})" if target is not None
                else f"a rollback is in progress and its plan does not say which write it undoes ({shown})")
    return None


def _shown(timeline: Timeline, folder: str, time: InstantTime, action: Action) -> str:
    """The instant's most advanced file, as a path from the table's root (rollbacks, restores and
    savepoints keep their action in every state)."""
    files = [i for i in timeline.files if i.time == time and i.action is action]
    return f"{folder}/{max(files, key=lambda i: i.state.rank).file_name}" if files else f"{folder}/{time}"


def _rollback_target(storage: Storage, timeline: Timeline, folder: str, time: InstantTime) -> str | None:
    """The instant time a rollback undoes, from its requested plan (kept after it completes); None
    if unreadable."""
    requested = timeline.file_for(time, Action.ROLLBACK, State.REQUESTED)
    if requested is None:
        return None
    path = f"{folder}/{requested.file_name}"
    try:
        return decode_rollback_plan(storage.read(path), path=path).instant_time
    except CorruptMetadataError:
        return None
