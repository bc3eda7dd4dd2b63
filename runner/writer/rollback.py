"""Rolling back failed writes before a new one, as Hudi's EAGER failed-writes cleaning policy does.

A commit left requested or inflight (the writer died or raised) is invisible to readers, but its
files sit in partitions and its instant holds back every clean (the earliest commit to retain stops
before the earliest pending write). Before writing, each such commit `T`, and each pending
replacecommit without a clustering plan (an insert overwrite or delete_partition whose writer died;
Hudi's EAGER policy rolls back every pending write but compactions and clusterings), is rolled back
the way Hudi 0.14's `BaseRollbackActionExecutor` does:

1. `R.rollback.requested`: a `HoodieRollbackPlan` naming `T` and one request per file to delete.
2. `R.rollback.inflight` (empty).
3. Delete `T`'s data files: every file its markers name, plus any base file of instant `T` in the
   partitions those markers or `T`'s workload profile name. With no markers at all (a writer that
   writes none), every partition is listed.
   Hidden temporary files of `T`'s data files (`.<name>.<hex>.tmp`, what a writer killed while
   streaming a file leaves on local storage) in those partitions are deleted too; they were never
   published, so the plan and the metadata do not list them.
4. Delete `T`'s marker folder, then `T.inflight`, then `T.commit.requested` (for a replacecommit,
   `T.replacecommit.inflight`, then `T.replacecommit.requested`).
5. `R.rollback`: a `HoodieRollbackMetadata` listing the deleted files per partition.

A rollback found pending (a crash in steps 2-4) is finished under its own instant `R`, if what it
undoes is a write that never completed (or is gone); one of a completed write or of a clustering
(Hudi's `commit rollback`, a restore) is refused, since Hudi first takes such an instant back to
inflight, and finishing it here would delete its files and keep its instant. A pending
commit whose `.hoodie/.heartbeat/T` was touched in the last two minutes belongs to a live Hudi
writer (Hudi's heartbeat: 60 s interval, 2 tolerable misses) and is refused rather than destroyed,
unless the heartbeat is a runner write's (`runner.writer.heartbeat`): that write held the runner
lock this one holds, so it died. A rolled-back commit's heartbeat file is deleted, as Hudi does.

The Avro schemas below are those Hudi 0.14/0.15 embed in these files (checked against a rollback a
Hudi 0.15 writer left in the hudi-rs fixture `v6_nonpartitioned_rollback`).
"""

from __future__ import annotations

import io
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from runner.errors import CorruptMetadataError, RefusedError, RunnerError
from runner.hudi.avro import read_container
from runner.hudi.files import BaseFile, LogFile
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.metadata import decode_commit_metadata, decode_requested_replace
from runner.hudi.properties import TableConfig
from runner.hudi.state import read_timeline
from runner.hudi.timeline import Timeline
from runner.hudi.timeline_writer import TimelineWriter, new_instant_time
from runner.hudi.view import discover_partitions, list_partitions
from runner.storage import Storage
from runner.writer.heartbeat import heartbeat_path, is_runners
from runner.writer.markers import delete_markers, marked_files, marker_dir

HEARTBEAT_TOLERANCE_MS = 120_000
_NS = "org.apache.hudi.avro.model"
_STRING = "string"
_INSTANT_INFO = {
    "type": "record", "name": "HoodieInstantInfo", "namespace": _NS,
    "fields": [{"name": "commitTime", "type": _STRING}, {"name": "action", "type": _STRING}],
}
ROLLBACK_PLAN = {
    "type": "record", "name": "HoodieRollbackPlan", "namespace": _NS,
    "fields": [
        {"name": "instantToRollback", "type": ["null", _INSTANT_INFO], "default": None},
        {"name": "RollbackRequests", "default": None, "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "HoodieRollbackRequest",
            "fields": [
                {"name": "partitionPath", "type": _STRING},
                {"name": "fileId", "type": ["null", _STRING], "default": None},
                {"name": "latestBaseInstant", "type": ["null", _STRING], "default": None},
                {"name": "filesToBeDeleted", "type": {"type": "array", "items": _STRING, "default": []},
                 "default": []},
                {"name": "logBlocksToBeDeleted", "type": ["null", {"type": "map", "values": "long"}], "default": None},
            ]}}]},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}
ROLLBACK_METADATA = {
    "type": "record", "name": "HoodieRollbackMetadata", "namespace": _NS,
    "fields": [
        {"name": "startRollbackTime", "type": _STRING},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": {"type": "array", "items": _STRING}},
        {"name": "partitionMetadata", "type": {"type": "map", "values": {
            "type": "record", "name": "HoodieRollbackPartitionMetadata",
            "fields": [
                {"name": "partitionPath", "type": _STRING},
                {"name": "successDeleteFiles", "type": {"type": "array", "items": _STRING}},
                {"name": "failedDeleteFiles", "type": {"type": "array", "items": _STRING}},
                {"name": "rollbackLogFiles", "type": ["null", {"type": "map", "values": "long"}], "default": None},
                {"name": "logFilesFromFailedCommit", "type": ["null", {"type": "map", "values": "long"}],
                 "default": None},
            ]}}},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "instantsRollback", "type": {"type": "array", "items": _INSTANT_INFO, "default": []},
         "default": []},
    ],
}


def rollback_failed_writes(storage: Storage, config: TableConfig) -> tuple[str, ...]:
    """Finish pending rollbacks, then roll back every requested or inflight commit.

    Returns:
        The instant times of the commits rolled back, oldest first.

    Raises:
        RefusedError: a pending commit has a fresh Hudi heartbeat (a live writer owns it), or a
            pending rollback undoes a completed write or a replacecommit (Hudi's to finish).
    """
    _, timeline, folder = read_timeline(storage)
    writer = TimelineWriter(storage, folder, config.timeline_layout_version)
    done: list[str] = []
    rollbacks = [(pending, _plan_target(storage, folder, pending.time, timeline))
                 for pending in timeline.pending(Action.ROLLBACK)]
    for pending, target in rollbacks:  # all checked before any runs
        _refuse_unless_failed_commit(storage, folder, timeline, pending, target)
    for pending, target in rollbacks:
        _execute(storage, writer, timeline, pending, target)
        storage.delete(heartbeat_path(target))  # as Hudi's `rollbackFailedWrites` does
        done.append(target)
    _, timeline, _ = read_timeline(storage)
    failed_writes = failed_writes_of(storage, folder, timeline)
    for failed in failed_writes:  # all checked before any is rolled back
        _refuse_if_live(storage, failed.time)
    for failed in failed_writes:
        _, timeline, _ = read_timeline(storage)
        rollback_time = new_instant_time(timeline, clock=datetime.now(UTC), table_timezone=config.timezone)
        files = failed_files(storage, folder, timeline, failed.time)
        plan = _encode(ROLLBACK_PLAN, _plan(storage, failed.time, files, failed.family))
        requested = writer.requested(rollback_time, Action.ROLLBACK, plan)
        _execute(storage, writer, timeline, requested, str(failed.time))
        storage.delete(heartbeat_path(str(failed.time)))
        done.append(str(failed.time))
    return tuple(sorted(done))


def failed_writes_of(storage: Storage, folder: str, timeline: Timeline) -> list[Instant]:
    """The pending writes Hudi's EAGER policy rolls back, oldest first: every pending commit, and
    every pending replacecommit whose requested file carries no clustering plan (an insert
    overwrite or delete_partition). A clustering (Hudi's, or a resize of the runner's) is never
    one, nor a replacecommit whose requested file is missing or cannot be read: it may be one."""
    failed = list(timeline.pending(Action.COMMIT))
    for instant in timeline.pending(Action.REPLACE_COMMIT):
        if _is_failed_overwrite(storage, folder, timeline, instant.time):
            failed.append(instant)
    return sorted(failed, key=lambda i: i.sort_key)


def _is_failed_overwrite(storage: Storage, folder: str, timeline: Timeline, time_: InstantTime) -> bool:
    requested = timeline.file_for(time_, Action.REPLACE_COMMIT, State.REQUESTED)
    if requested is None:
        return False
    path = f"{folder}/{requested.file_name}"
    try:
        return not decode_requested_replace(storage.read(path), path=path).is_clustering
    except RunnerError:
        return False


def failed_files(storage: Storage, folder: str, timeline: Timeline, instant: InstantTime) -> list[str]:
    """Relative paths of every data file instant `instant` may have written (see module doc)."""
    return _written_by(storage, folder, timeline, instant)[0]


def _written_by(storage: Storage, folder: str, timeline: Timeline, instant: InstantTime
                ) -> tuple[list[str], list[str]]:
    """The data files instant `instant` may have written, and the hidden temporary files
    (`.<name>.<hex>.tmp`) of its data files that a write killed while streaming them left behind."""
    marked = marked_files(storage, str(instant))
    if storage.stat(marker_dir(str(instant))) is None:
        listed = discover_partitions(storage)
    else:
        partitions = {path.rpartition("/")[0] for path in marked}
        partitions |= _profile_partitions(storage, folder, timeline, instant)
        listed = list_partitions(storage, partitions)
    found = set(marked)
    temporary: set[str] = set()
    for partition, entries in listed.files.items():
        for name, _ in entries:
            leftover = _temporary_file_of(name)
            parsed = BaseFile.parse(leftover or name) or LogFile.parse(leftover or name)
            if parsed is not None and parsed.instant_time == instant:
                (temporary if leftover else found).add(f"{partition}/{name}" if partition else name)
    return sorted(p for p in found if storage.stat(p) is not None), sorted(temporary)


def _temporary_file_of(name: str) -> str | None:
    """The file a hidden temporary file is being written for (`LocalStorage.create_new` streams a
    file to `.<name>.<hex>.tmp` and links it into place when complete), or None for any other name."""
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    target, _, _ = name[1:].removesuffix(".tmp").rpartition(".")
    return target or None


def _execute(storage: Storage, writer: TimelineWriter, timeline: Timeline, rollback: Instant, target: str) -> None:
    started = time.monotonic()
    if rollback.state is State.REQUESTED:
        rollback = writer.inflight(rollback.time, Action.ROLLBACK, b"")
    _, current, folder = read_timeline(storage)
    action = _undone_action(current, target)
    files, temporary = _written_by(storage, folder, current, InstantTime(target))
    deleted = [path for path in files if storage.delete(path)]
    # Never published, so no reader or Hudi plan knows them: removed, but not listed as rolled back.
    for path in temporary:
        storage.delete(path)
    delete_markers(storage, target)
    for state in (State.INFLIGHT, State.REQUESTED):
        instant = current.file_for(target, action, state)
        if instant is not None:
            storage.delete(f"{folder}/{instant.file_name}")
    meta = _metadata(storage, rollback.time, target, deleted, int((time.monotonic() - started) * 1000), action)
    writer.complete(rollback, _encode(ROLLBACK_METADATA, meta), completion=None)


def _undone_action(timeline: Timeline, target: str) -> Action:
    """The action of the pending write `target` (a commit when it is gone already)."""
    pending = next((i for i in timeline.pending(Action.COMMIT, Action.REPLACE_COMMIT) if str(i.time) == target), None)
    return pending.action if pending is not None else Action.COMMIT


def _plan(storage: Storage, target: InstantTime, files: Sequence[str], action: Action) -> dict[str, object]:
    requests = [
        {
            "partitionPath": path.rpartition("/")[0],
            "fileId": "",
            "latestBaseInstant": "",
            "filesToBeDeleted": [_full(storage, path)],
            "logBlocksToBeDeleted": {},
        }
        for path in files
    ]
    return {
        "instantToRollback": {"commitTime": str(target), "action": action.value},
        "RollbackRequests": requests,
        "version": 1,
    }


def _metadata(storage: Storage, time_: str, target: str, deleted: Sequence[str], took_ms: int,
              action: Action) -> dict[str, object]:
    partitions: dict[str, dict[str, object]] = {}
    for path in deleted:
        partition = path.rpartition("/")[0]
        entry = partitions.setdefault(
            partition,
            {
                "partitionPath": partition,
                "successDeleteFiles": [],
                "failedDeleteFiles": [],
                "rollbackLogFiles": {},
                "logFilesFromFailedCommit": {},
            },
        )
        files = entry["successDeleteFiles"]
        assert isinstance(files, list)
        files.append(_full(storage, path))
    return {
        "startRollbackTime": str(time_),
        "timeTakenInMillis": took_ms,
        "totalFilesDeleted": len(deleted),
        "commitsRollback": [target],
        "partitionMetadata": partitions,
        "version": 1,
        "instantsRollback": [{"commitTime": target, "action": action.value}],
    }


def _refuse_unless_failed_commit(storage: Storage, folder: str, timeline: Timeline, rollback: Instant,
                                 target: str) -> None:
    """Refuse to finish a pending rollback of anything but a write that never completed.

    `_execute` undoes a failed commit or insert overwrite: its files, then its requested and
    inflight instants. A rollback of a completed write (Hudi's `commit rollback`, a restore's
    steps), of a clustering or of any other action is Hudi's to finish: Hudi first takes the
    completed instant back to inflight, and a replacecommit hides the file groups it replaced;
    finished here, the files would go while the instant stayed.
    """
    overwrites = {str(i.time) for i in failed_writes_of(storage, folder, timeline) if i.family is Action.REPLACE_COMMIT}
    undone = next((i for i in timeline.instants
                   if str(i.time) == target and (i.is_completed or i.family is not Action.COMMIT)
                   and not (not i.is_completed and str(i.time) in overwrites)), None)
    if undone is None:
        return
    what = "the completed write" if undone.is_completed else f"the pending {undone.action}"
    requested = timeline.file_for(rollback.time, Action.ROLLBACK, State.REQUESTED)
    shown = f"{folder}/{(requested or rollback).file_name}"
    raise RefusedError(
        f"Refusing to write {storage.uri}: the pending rollback {shown} undoes {what} {target} "
        f"({folder}/{undone.file_name}); the writer finishes only rollbacks of commits that never completed, "
        "and finishing this one would delete its files but leave its instant; nothing was written.",
        hint="let Hudi finish the rollback (its next write, or `hudi-cli`), then write again.",
    )


def _plan_target(storage: Storage, folder: str, rollback_time: InstantTime, timeline: Timeline) -> str:
    requested = timeline.file_for(rollback_time, Action.ROLLBACK, State.REQUESTED)
    path = f"{folder}/{requested.file_name}" if requested else f"{folder}/{rollback_time}.rollback.requested"
    record = read_container(storage.read(path), path=path)
    target = record.get("instantToRollback")
    if not isinstance(target, dict) or not isinstance(target.get("commitTime"), str):
        raise CorruptMetadataError(f"Cannot decode {path}: the rollback plan names no instant", path=path)
    return str(target["commitTime"])


def _profile_partitions(storage: Storage, folder: str, timeline: Timeline, instant: InstantTime) -> set[str]:
    inflight = timeline.file_for(instant, _undone_action(timeline, str(instant)), State.INFLIGHT)
    if inflight is None:
        return set()
    path = f"{folder}/{inflight.file_name}"
    data = storage.read(path)
    return set(decode_commit_metadata(data, path=path).partition_to_write_stats) if data.strip() else set()


def _refuse_if_live(storage: Storage, instant: InstantTime) -> None:
    """Refuse to roll back a commit with a fresh Hudi heartbeat; a runner write's own heartbeat is
    no sign of life, since that write held the runner lock this write holds now."""
    beat = storage.stat(heartbeat_path(str(instant)))
    if beat is not None and is_runners(storage, str(instant)):
        return
    if beat is not None and beat.mtime_ms is not None:
        age = time.time() * 1000 - beat.mtime_ms
        if age <= HEARTBEAT_TOLERANCE_MS:
            raise RefusedError(
                f"Commit {instant} of {storage.uri} is pending and its Hudi heartbeat is {age / 1000:.0f} s old: "
                "a Hudi writer is still running it, so it is not rolled back.",
                hint="wait for that writer to finish (or fail for more than two minutes), then write again.",
            )


def _full(storage: Storage, path: str) -> str:
    return f"{storage.uri.rstrip('/')}/{path}"


def _encode(schema: Mapping[str, object], record: Mapping[str, object]) -> bytes:
    import fastavro

    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(dict(schema)), [dict(record)], codec="null", validator=True)
    return out.getvalue()
