"""The file-system view: partitions, file groups and their committed file slices.

Rules (Hudi's `AbstractTableFileSystemView` / `HoodieFileGroup`, and hudi-rs agrees on the fixtures):
- A partition is a folder holding `.hoodie_partition_metadata` (or its `.parquet`/`.orc` form).
  A folder holding its own `.hoodie` is another table nested inside this one, never a partition,
  and nothing below it belongs to this table. Hudi's file-system listing
  (`FileSystemBackedTableMetadata.getPartitionPathWithPathPrefix`) skips only folders named
  `.hoodie` and would count a nested table's marked folders as partitions; we are stricter, since
  treating another table's files as ours would delete them.
- A data file counts only if the instant that wrote it is committed: a completed write, a pending
  compaction (its output slice), or an instant older than the active timeline (archived). Files of
  requested, inflight or failed writes are `uncommitted` and are never planned for deletion.
- A pending compaction opens a new, possibly empty, slice at the compaction instant.
- Log files: layout 1 names the slice's base instant in the log name; layout 2 names the delta
  commit, and the log joins the newest slice whose base instant is <= the commit's completion time.
  For a delta commit archived off the active timeline that completion time comes from the LSM
  timeline (`runner.hudi.archived_timeline`); when it records none, the log joins the group's
  latest slice, as Hudi's `HoodieFileGroup.getBaseInstantTime` takes it (so no clean deletes it,
  and no resize rewrites that slice's base file without it).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import runner.progress as progress
from runner.hudi.files import BaseFile, FileGroup, FileSlice, LogFile, relative_path
from runner.hudi.instant import Action, Instant, InstantTime
from runner.hudi.metadata import CommitMetadata, CompactionOperation
from runner.hudi.timeline import Timeline

if TYPE_CHECKING:  # annotations only: the Hudi model reads through whatever Storage it is given
    from runner.storage import Storage

PARTITION_MARKER = ".hoodie_partition_metadata"
_MARKER_DOT = PARTITION_MARKER + "."
_REPORT_EVERY = 1_000  # files listed between two progress reports


@dataclass(frozen=True, slots=True)
class ListedFiles:
    """Files found in partition folders. `files` maps a partition to its (name, size) entries.

    `crowded` are the partitions whose folder holds more than Hudi's marker and data files: a file
    of another kind, or a folder (another table's, another tool's). Such a folder must outlive any
    clean, since deleting a partition deletes its folder with everything in it.
    """

    partitions: tuple[str, ...]
    files: Mapping[str, tuple[tuple[str, int], ...]]
    unrecognized: tuple[str, ...] = ()
    crowded: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class View:
    """Committed file groups, uncommitted data files, and the listing's `crowded` partitions plus
    those holding a file that is neither a base nor a log file."""

    groups: tuple[FileGroup, ...]
    uncommitted: tuple[str, ...]
    crowded: frozenset[str] = frozenset()


def _is_marker(name: str) -> bool:
    return name.startswith(PARTITION_MARKER) and (name == PARTITION_MARKER or name.startswith(_MARKER_DOT))


def discover_partitions(storage: Storage) -> ListedFiles:
    """List the whole table once and find its partitions by their marker files.

    Files inside a nested table (a folder below the base path holding its own `.hoodie`) are left
    out entirely: they are neither partitions nor unrecognised files of this table. Every rule here
    is decided once per folder, not once per file: a table has a hundred files per folder or more.
    """
    by_dir = _walked(storage)
    nested = nested_table_roots(by_dir)
    ours: dict[str, list[_Entry]] = {}
    for folder, entries in by_dir.items():
        if _is_hoodie_folder(folder) or _inside(folder, nested):
            continue
        ours[folder] = entries if folder else [e for e in entries if e[0] != ".hoodie"]
    # Every folder counts here, a nested table's too: it lies inside the partition's folder.
    return _classify(ours, subfolders=(f for f in by_dir if f and not _is_hoodie_folder(f)))


def list_partitions(storage: Storage, partitions: Collection[str]) -> ListedFiles:
    """List only the given partitions (one directory listing each); missing ones are skipped,
    and so is a folder that is, or lies inside, a nested table's base path, and one reached through
    a symbolic link (a store that has links says which: the whole-table walk never enters them, so
    neither does this listing, and nothing is planned or recorded through a link)."""
    by_dir: dict[str, list[_Entry]] = {}
    with_folders: list[str] = []
    is_table: dict[str, bool] = {}
    wanted = sorted(set(partitions))
    linked = getattr(storage, "through_link", None)
    progress.begin("listing partitions", "partitions", len(wanted))
    for partition in wanted:
        if linked is not None and linked(partition):
            pass
        elif not _in_nested_table(storage, partition, is_table):
            listed = storage.list_dir(partition)
            by_dir[partition] = [(_name(f.path), f.size) for f in listed if not f.is_dir]
            with_folders.extend(f.path for f in listed if f.is_dir)
        progress.advance(1, sum(size for _, size in by_dir.get(partition, ())))
    return _classify(by_dir, subfolders=with_folders)


# One listed file: its name (no folder) and size in bytes.
_Entry = tuple[str, int]


def _walked(storage: Storage) -> dict[str, list[_Entry]]:
    """Everything below the base path by folder, with the running count reported every
    `_REPORT_EVERY` files (a whole-table listing of S3 can take minutes)."""
    progress.begin("listing the table's files", "files")
    by_folder = getattr(storage, "walk_folders", None)
    if by_folder is not None:  # a store that lists a folder at a time (local disk) hands it over whole
        return _walked_by_folder(by_folder())
    by_dir: dict[str, list[_Entry]] = {}
    count = size = 0
    for info in storage.walk(""):
        folder, _, name = info.path.rpartition("/")
        entries = by_dir.get(folder)
        if entries is None:
            entries = by_dir[folder] = []
        entries.append((name, info.size))
        count += 1
        size += info.size
        if count == _REPORT_EVERY:
            progress.advance(count, size)
            count = size = 0
    progress.advance(count, size)
    return by_dir


def _walked_by_folder(folders: Iterable[tuple[str, list[_Entry]]]) -> dict[str, list[_Entry]]:
    """`_walked` from a listing that gives each folder's files at once, each folder once."""
    by_dir: dict[str, list[_Entry]] = {}
    count = size = 0
    for folder, entries in folders:
        known = by_dir.get(folder)
        if known is None:
            by_dir[folder] = entries
        else:
            known.extend(entries)
        count += len(entries)
        size += sum(entry[1] for entry in entries)
        if count >= _REPORT_EVERY:
            progress.advance(count, size)
            count = size = 0
    progress.advance(count, size)
    return by_dir


def nested_table_roots(folders: Iterable[str]) -> frozenset[str]:
    """Folders below the base path (relative, never "") that hold a `.hoodie` folder of their own,
    found among the folders that hold files: a folder's first `.hoodie` segment other than the
    table's own (at the top) names the root before it."""
    roots = set()
    for folder in folders:
        if ".hoodie" not in folder:
            continue
        parts = folder.split("/")
        for depth, part in enumerate(parts):
            if part == ".hoodie" and depth > 0:
                roots.add("/".join(parts[:depth]))
                break
    return frozenset(roots)


def _is_hoodie_folder(folder: str) -> bool:
    return folder == ".hoodie" or folder.startswith(".hoodie/")


def _inside(folder: str, roots: frozenset[str]) -> bool:
    """`folder` is one of `roots` or lies below one."""
    if not roots or not folder:
        return False
    parts = folder.split("/")
    return any("/".join(parts[:depth]) in roots for depth in range(1, len(parts) + 1))


def _in_nested_table(storage: Storage, partition: str, cache: dict[str, bool]) -> bool:
    """Whether `partition` or a folder above it (below the base path) holds its own `.hoodie`."""
    parts = [p for p in partition.split("/") if p]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        if folder not in cache:
            cache[folder] = storage.stat(f"{folder}/.hoodie") is not None
        if cache[folder]:
            return True
    return False


def _classify(by_dir: Mapping[str, list[_Entry]], *, subfolders: Iterable[str] = ()) -> ListedFiles:
    """Partitions and their files; `subfolders` are folders found below the base path, whose
    partitions above them are `crowded` (files of other kinds are found by `build_file_groups`,
    which parses every name anyway)."""
    partitions: list[str] = []
    files: dict[str, tuple[_Entry, ...]] = {}
    unrecognized: list[str] = []
    crowded: set[str] = set()
    for folder, entries in by_dir.items():
        ordered = sorted(entries)  # a local listing comes sorted already: one pass, no reordering
        start, end = _marker_run(ordered)
        kept = [e for e in ordered[start:end] if not _is_marker(e[0])]
        if len(kept) < end - start:  # a marker: a partition (its markers are not data)
            partitions.append(folder)
            files[folder] = (*ordered[:start], *kept, *ordered[end:])
        else:
            unrecognized.extend(relative_path(folder, n) for n, _ in entries)
    partition_set = set(partitions)
    for folder in subfolders:
        parts = folder.split("/")
        crowded.update(p for depth in range(1, len(parts)) if (p := "/".join(parts[:depth])) in partition_set)
    return ListedFiles(tuple(sorted(partitions)), files, tuple(sorted(unrecognized)), frozenset(crowded))


def _marker_run(ordered: list[_Entry]) -> tuple[int, int]:
    """Where the names starting with `PARTITION_MARKER` lie in a folder's sorted entries: one
    contiguous run (sorted strings sharing a prefix are adjacent), found by bisection, so only
    those few names are tested one by one rather than every data file of the folder."""
    start = end = bisect_left(ordered, (PARTITION_MARKER,))
    while end < len(ordered) and ordered[end][0].startswith(PARTITION_MARKER):
        end += 1
    return start, end


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def build_file_groups(
    listed: ListedFiles,
    *,
    timeline: Timeline,
    layout: int,
    commits: Mapping[InstantTime, CommitMetadata],
    pending_compaction: Mapping[Instant, tuple[CompactionOperation, ...]],
    archived_completions: Callable[[frozenset[InstantTime]], Mapping[InstantTime, InstantTime]] | None = None,
) -> View:
    """Assemble committed file slices per file group from a listing (pure but for
    `archived_completions`, which reads the completion times of archived delta commits on layout 2,
    asked only when a log file names one)."""
    committed = {i.time for i in timeline.completed_writes} | {i.time for i in pending_compaction}
    earliest = timeline.earliest_write
    completion = _completion_times(timeline)

    def is_committed(time: InstantTime) -> bool:
        return time in committed or (earliest is not None and time < earliest)

    slices: dict[tuple[str, str], dict[InstantTime, _Parts]] = defaultdict(dict)
    uncommitted: list[str] = []
    logs: list[tuple[str, LogFile]] = []
    # A table's files carry few distinct instant times: each is judged once, not once per file.
    judged: dict[InstantTime, bool] = {}
    crowded = set(listed.crowded)
    for partition, entries in listed.files.items():
        for name, size in entries:
            base = BaseFile.parse(name, size)
            if base is None:
                log = LogFile.parse(name, size)
                if log is not None:
                    logs.append((partition, log))
                else:
                    crowded.add(partition)
                continue
            time = base.instant_time
            ok = judged.get(time)
            if ok is None:
                ok = judged[time] = is_committed(time)
            if not ok:
                uncommitted.append(relative_path(partition, name))
                continue
            by_time = slices[(partition, base.file_id)]
            entry = by_time.get(time)
            if entry is None:
                by_time[time] = _Parts(base)
            else:
                _add_base(entry, base, partition, commits, uncommitted)
    for instant, ops in pending_compaction.items():
        for op in ops:
            slices[(op.partition_path, op.file_id)].setdefault(instant.time, _Parts())
    if layout != 1 and logs:
        archived = frozenset(log.instant_time for _, log in logs
                             if log.instant_time not in completion and is_committed(log.instant_time))
        if archived:
            found = archived_completions(archived) if archived_completions is not None else {}
            completion = {**completion, **{t: found.get(t, _UNKNOWN) for t in archived}}
    for partition, log in logs:
        slot = _slice_for_log(log, slices[(partition, log.file_id)], layout, completion, is_committed)
        if slot is None:
            uncommitted.append(relative_path(partition, log.name))
        else:
            parts = slices[(partition, log.file_id)].setdefault(slot, _Parts())
            if parts.logs is None:
                parts.logs = []
            parts.logs.append(log)
    order = _InstantOrder()
    groups = tuple(_group(p, f, by_time, order) for (p, f), by_time in sorted(slices.items()) if by_time)
    return View(groups, tuple(sorted(uncommitted)), frozenset(crowded))


@dataclass(slots=True)
class _Parts:
    """The files found for one slice while the view is assembled: at most one base, any logs
    (None until the first: most slices of a copy-on-write table have none, and an empty list per
    slice is an allocation per file)."""

    base: BaseFile | None = None
    logs: list[LogFile] | None = None


def _add_base(
    entry: _Parts,
    base: BaseFile,
    partition: str,
    commits: Mapping[InstantTime, CommitMetadata],
    uncommitted: list[str],
) -> None:
    """Add a committed base file to the slice of its instant; of two with the same instant (a
    retried task's leftover), keep the one the commit's write stats name and treat the other as
    uncommitted."""
    current = entry.base
    if current is None:
        entry.base = base
        return
    written = _written_names(commits.get(base.instant_time))
    keep, drop = (base, current) if base.name in written and current.name not in written else (current, base)
    entry.base = keep
    uncommitted.append(relative_path(partition, drop.name))


def _written_names(meta: CommitMetadata | None) -> frozenset[str]:
    if meta is None:
        return frozenset()
    return frozenset(
        (s.path or "").rsplit("/", 1)[-1] for stats in meta.partition_to_write_stats.values() for s in stats
    )


def _completion_times(timeline: Timeline) -> dict[InstantTime, InstantTime]:
    return {
        i.time: i.completion_time or i.time
        for i in timeline.completed(Action.DELTA_COMMIT, Action.COMMIT, Action.REPLACE_COMMIT)
    }


def _slice_for_log(
    log: LogFile,
    by_time: Mapping[InstantTime, _Parts],
    layout: int,
    completion: Mapping[InstantTime, InstantTime],
    is_committed: object,
) -> InstantTime | None:
    """The base instant of the slice a committed log file belongs to; None if uncommitted."""
    assert callable(is_committed)
    if layout == 1:
        return log.instant_time if is_committed(log.instant_time) else None
    done = completion.get(log.instant_time)
    if done is None:
        if not is_committed(log.instant_time):
            return None
        done = _UNKNOWN  # archived, and no history asked: as an archived commit found nowhere
    if done is _UNKNOWN:  # archived, and its completion time recorded nowhere: Hudi's latest slice
        return max(by_time, key=lambda t: t.normalized) if by_time else log.instant_time
    candidates = [t for t in by_time if t <= done]
    return max(candidates, key=lambda t: t.normalized) if candidates else log.instant_time


# The completion time of an archived delta commit that no history records (a sentinel, never a time).
_UNKNOWN = InstantTime("9" * 17)


class _InstantOrder(dict[InstantTime, str]):
    """Each instant time's sort key (`InstantTime.normalized`), computed once per distinct time: a
    table has a few instants and tens of thousands of slices, and `__getitem__` as the sort key runs
    without a Python call per slice."""

    def __missing__(self, time: InstantTime) -> str:
        key = self[time] = time.normalized
        return key


def _group(partition: str, file_id: str, by_time: Mapping[InstantTime, _Parts], order: _InstantOrder) -> FileGroup:
    times = sorted(by_time, key=order.__getitem__, reverse=True) if len(by_time) > 1 else by_time
    slices = []
    for time in times:
        parts = by_time[time]
        logs = tuple(sorted(parts.logs, key=_log_order)) if parts.logs else ()
        slices.append(FileSlice(partition, file_id, time, parts.base, logs))
    return FileGroup(partition, file_id, tuple(slices))


def _log_order(log: LogFile) -> tuple[str, int, str]:
    return log.sort_key
