"""Rollbacks and restores in progress: while one is pending, the table's history is being rewritten.

A rollback of a *completed* write (`hudi-cli commit rollback`, or each step of a restore to a
savepoint) deletes that write's files and then its instant. Until it completes, the write still
looks committed, so its slices look like the latest ones and the slices before them like old
versions a cleaner may delete; once it completes, exactly those older slices are the latest again.
Cleaning in between deletes the data readers are about to fall back to, and resizing copies rows
the rollback is undoing into new file groups. A rollback of a write that never completed is
harmless here: that write's files are uncommitted, never deleted or rewritten.
"""

from __future__ import annotations

from runner.errors import CorruptMetadataError, RefusedError
from runner.hudi.instant import Action, InstantTime, State
from runner.hudi.metadata import decode_rollback_plan
from runner.hudi.state import TableMetadata
from runner.storage import Storage

_HINT = ("let Hudi finish the rollback or restore (its next write, or `hudi-cli`, completes it), then plan "
         "again; the runner does not clean or resize a table whose history is being undone.")


def refuse_pending_undo(storage: Storage, meta: TableMetadata) -> None:
    """Refuse to plan maintenance while a restore, or a rollback of a completed write, is pending.

    Raises:
        RefusedError: naming the pending instant file and what it undoes; nothing was changed.
    """
    timeline = meta.timeline
    completed = {str(i.time) for i in timeline.instants if i.is_completed}
    for instant in timeline.pending(Action.ROLLBACK, Action.RESTORE):
        pending = timeline.file_for(instant.time, instant.action, instant.state)
        shown = f"{meta.timeline_folder}/{pending.file_name if pending else instant.time}"
        if instant.action is Action.RESTORE:
            why = "a restore is in progress, rolling back completed writes"
        else:
            target = _rollback_target(storage, meta, instant.time)
            if target is not None and target not in completed:
                continue  # undoes a write that never completed: its files are not the runner's to touch
            why = (f"a rollback of the completed write {target} is in progress" if target is not None
                   else "a rollback is in progress and its plan does not say which write it undoes")
        raise RefusedError(
            f"table {storage.uri}: {why} ({shown}; expected no rollback or restore of a completed write "
            "in progress): the file slices before that write become the latest again once it completes, "
            "so cleaning or resizing now could delete or copy the wrong ones; nothing was changed",
            hint=_HINT,
        )


def _rollback_target(storage: Storage, meta: TableMetadata, time: InstantTime) -> str | None:
    """The instant time a pending rollback undoes, from its requested plan; None if unreadable."""
    requested = meta.timeline.file_for(time, Action.ROLLBACK, State.REQUESTED)
    if requested is None:
        return None
    path = f"{meta.timeline_folder}/{requested.file_name}"
    try:
        return decode_rollback_plan(storage.read(path), path=path).instant_time
    except CorruptMetadataError:
        return None
