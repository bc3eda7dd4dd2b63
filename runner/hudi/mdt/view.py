"""Which metadata-table files and blocks a reader uses: validity and file slicing, pure.

Validity (apache/hudi `HoodieTableMetadataUtil.getValidInstantTimestamps`): the metadata table is
written *before* the data-table instant completes, so a reader merges a log block only if its
INSTANT_TIME is
- a completed data-table instant, or
- a completed MDT deltacommit that Hudi's version writes without a data-table instant: on 1.x
  (table version 8+) any whose data-table instant is not pending (indexing commits, and instants
  whose data-table instant is gone); on 0.14/0.15 (version 6) only MDT-internal ones, i.e. a
  millisecond instant plus a three-digit suffix that is an MDT operation (`001`…`006`) or a
  partition initialization (`010` and up) (`isValidInstant`), or
- an instant rolled back by a completed data-table rollback, or an MDT rollback/restore, or
- an MDT initialization deltacommit (`00000000000000…`),
and, on the MDT side, the block's instant is a completed MDT instant (or older than the MDT's
active timeline, i.e. archived: `containsOrBeforeTimelineStarts`).

Slicing: table version 8+ names each log after its own deltacommit and assigns it to the latest
base file whose instant is not after the log's completion time. Version 6 names a log after the
base instant of the slice it extends (`.{fileId}_{baseInstant}.log.{version}_{token}`), so a
slice is its base file plus the logs carrying the base file's instant; a group without a base
file is the logs of its latest base instant.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from runner.hudi.files import BaseFile, LogFile
from runner.hudi.instant import Action
from runner.hudi.timeline import Timeline

SOLO_COMMIT_TIMESTAMP = "00000000000000"
MILLIS_INSTANT_LENGTH = 17
# 0.14/0.15 `OperationSuffix`: compaction, clean, restore, indexer, log compaction, rollback
MDT_OPERATION_SUFFIXES = frozenset({"001", "002", "003", "004", "005", "006"})
FIRST_INIT_SUFFIX = "010"


@dataclass(frozen=True, slots=True)
class MdtSlice:
    """The latest file slice of one MDT file group: base HFile (if any) and logs in merge order."""

    file_id: str
    base_file: BaseFile | None
    log_files: tuple[LogFile, ...]


def valid_instants(
    data_timeline: Timeline,
    mdt_timeline: Timeline,
    rolled_back: Collection[str],
    *,
    table_version: int = 8,
) -> frozenset[str]:
    """Instant times whose MDT log blocks a reader merges (see the module docstring)."""
    pending_data = {i.time for i in data_timeline.instants if not i.is_completed}
    valid = {str(i.time) for i in data_timeline.instants if i.is_completed}
    for instant in mdt_timeline.instants:
        if not instant.is_completed:
            continue
        if instant.action is Action.DELTA_COMMIT and _mdt_only_is_valid(str(instant.time), pending_data, table_version):
            valid.add(str(instant.time))
        if instant.action in (Action.ROLLBACK, Action.RESTORE):
            valid.add(str(instant.time))
    valid.update(rolled_back)
    return frozenset(valid)


def _mdt_only_is_valid(time: str, pending_data: Collection[str], table_version: int) -> bool:
    """Whether a completed MDT deltacommit counts without a completed data instant of its time."""
    if table_version >= 8:
        return time not in pending_data
    return is_mdt_internal(time) or time.startswith(SOLO_COMMIT_TIMESTAMP)


def is_mdt_internal(time: str) -> bool:
    """An MDT-only instant of Hudi 0.14/0.15: milliseconds plus an operation or initialization suffix."""
    if len(time) != MILLIS_INSTANT_LENGTH + 3:
        return False
    suffix = time[-3:]
    return suffix in MDT_OPERATION_SUFFIXES or (suffix.isdigit() and suffix >= FIRST_INIT_SUFFIX)


def completed_mdt_instants(mdt_timeline: Timeline) -> dict[str, str]:
    """Completed MDT instant time -> completion time (the requested time on layout 1)."""
    return {str(i.time): str(i.completion_time or i.time) for i in mdt_timeline.instants if i.is_completed}


def is_committed_on_mdt(time: str, mdt_timeline: Timeline, completed: dict[str, str]) -> bool:
    """Completed on the MDT timeline, or older than its first instant (archived)."""
    if time in completed:
        return True
    first = mdt_timeline.instants[0].time if mdt_timeline.instants else None
    return first is not None and time < first


def latest_slices(names: Iterable[tuple[str, int]], mdt_timeline: Timeline, *, table_version: int) -> list[MdtSlice]:
    """The latest slice of every file group in one MDT partition folder listing (name, size)."""
    completed = completed_mdt_instants(mdt_timeline)
    bases: dict[str, list[BaseFile]] = {}
    logs: dict[str, list[LogFile]] = {}
    for name, size in names:
        base = BaseFile.parse(name, size)
        if base is not None and base.extension == "hfile":
            if is_committed_on_mdt(base.instant_time, mdt_timeline, completed):
                bases.setdefault(base.file_id, []).append(base)
            continue
        log = LogFile.parse(name, size)
        if log is not None and not log.cdc:
            logs.setdefault(log.file_id, []).append(log)
    slices = []
    for file_id in sorted(set(bases) | set(logs)):
        base = max(bases.get(file_id, []), key=lambda b: b.instant_time, default=None)
        group_logs = logs.get(file_id, [])
        if table_version < 8:
            base_instant = base.instant_time if base else max(log.instant_time for log in group_logs)
            members = [log for log in group_logs if log.instant_time == base_instant]
        else:
            members = [log for log in group_logs if _in_slice(log, base, mdt_timeline, completed)]
        slices.append(MdtSlice(file_id, base, tuple(sorted(members, key=lambda log: log.sort_key))))
    return slices


def _in_slice(log: LogFile, base: BaseFile | None, timeline: Timeline, completed: dict[str, str]) -> bool:
    if not is_committed_on_mdt(log.instant_time, timeline, completed):
        return False
    if base is None:
        return True
    finished = completed.get(log.instant_time, log.instant_time)
    # A log that completed before the base's compaction was planned is inside that base already.
    return finished >= base.instant_time
