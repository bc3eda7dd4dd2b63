"""Which existing file groups a pending (requested or inflight) write may still change.

A resize replaces file groups with copies of their latest slices. If a write that is still in
flight adds a slice to one of them, or inserts into it as a small file, and completes after the
replacecommit, its rows are hidden by the replacement: a lost update. So before replacing a group
the runner must know every pending write's reach, from what Hudi records while a write runs:

- the inflight file of a commit or deltacommit holds the workload profile
  (`BaseCommitActionExecutor.saveWorkloadProfileMetadataToInflight`): per partition one stat with an
  empty file id counting the partition's inserts, and one stat per file group receiving updates (or,
  in newer releases, small-file inserts);
- a write's markers (`.hoodie/.temp/<instant>/<partition>/<file>.marker.<IOType>`, or the
  timeline-server's `MARKERS<n>` files listing such names) name every data file it created or is
  creating;
- insert_overwrite and delete_partition (pending replacecommits without a clustering plan) replace
  every group of the partitions in their profile.

A partition that receives inserts is blocked as a whole: Hudi routes inserts into small files,
exactly the files a resize rewrites, and the profile does not always say which. A pending write with
no profile yet (only its requested file, or an empty inflight file, as Hudi's bulk insert writes)
cannot be bounded at all and blocks the whole table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.errors import CorruptMetadataError, StorageError
from runner.hudi.files import BaseFile, LogFile
from runner.hudi.instant import Action, Instant, State
from runner.hudi.metadata import decode_commit_metadata, decode_requested_replace
from runner.hudi.timeline import Timeline

if TYPE_CHECKING:  # annotations only: the Hudi model reads through whatever Storage it is given
    from runner.storage import Storage

MARKER_DIR = ".hoodie/.temp"
_MARKER_SUFFIX = re.compile(r"\.marker\.[A-Z_]+$")
_WRITES = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING)

FileGroupKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class PendingWrites:
    """The reach of every pending write on a timeline.

    Args:
        groups: existing file groups a pending write updates, merges into or replaces.
        partitions: partitions where a pending write inserts or overwrites, so any small file group
            there may change.
        unknown: pending writes whose reach cannot be known yet, each with the reason.
    """

    groups: frozenset[FileGroupKey] = frozenset()
    partitions: frozenset[str] = frozenset()
    unknown: tuple[str, ...] = ()

    def blocks(self, key: FileGroupKey) -> bool:
        """Whether a pending write may change the file group `key`."""
        return bool(self.unknown) or key in self.groups or key[0] in self.partitions

    def reached_partitions(self) -> frozenset[str] | None:
        """Partitions a pending write may still write into (its inserts, and the file groups it
        updates); None when some write's reach is unknown, so that any partition may be."""
        if self.unknown:
            return None
        return self.partitions | {partition for partition, _ in self.groups}

    def reason(self, key: FileGroupKey) -> str | None:
        """Why `key` may change, for messages; None when no pending write reaches it."""
        if self.unknown:
            return self.unknown[0]
        if key in self.groups:
            return f"a pending write updates file group {key[1]} in partition {key[0]!r}"
        if key[0] in self.partitions:
            return f"a pending write inserts into partition {key[0]!r}, possibly into its small files"
        return None


NONE = PendingWrites()


def read_pending_writes(storage: Storage, folder: str, timeline: Timeline) -> PendingWrites:
    """The reach of the pending commits, deltacommits and non-clustering replacecommits on `timeline`.

    Args:
        storage: rooted at the table's base path.
        folder: the timeline folder (`.hoodie` or `.hoodie/timeline`).
        timeline: the active timeline read from it.
    """
    groups: set[FileGroupKey] = set()
    partitions: set[str] = set()
    unknown: list[str] = []
    for instant in timeline.pending(*_WRITES):
        clustering = instant.action in (Action.REPLACE_COMMIT, Action.CLUSTERING)
        if clustering and _is_clustering(storage, folder, timeline, instant):
            continue  # a clustering plan names its own groups (TableMetadata.pending_clustering)
        groups.update(_marked_groups(storage, str(instant.time)))
        reach = _profile(storage, folder, timeline, instant)
        if reach is None:
            unknown.append(
                f"the pending {instant.action} {instant.time} has not recorded which file groups it "
                "writes (no workload profile in its inflight file), or overwrites the whole table"
            )
            continue
        groups.update(reach[0])
        partitions.update(reach[1])
    return PendingWrites(frozenset(groups), frozenset(partitions), tuple(unknown))


def _is_clustering(storage: Storage, folder: str, timeline: Timeline, instant: Instant) -> bool:
    requested = timeline.file_for(instant.time, instant.action, State.REQUESTED)
    if requested is None:
        return False
    data = storage.read(f"{folder}/{requested.file_name}")
    try:
        return decode_requested_replace(data, path=requested.file_name).clustering_groups is not None
    except CorruptMetadataError:
        return False


def _profile(storage: Storage, folder: str, timeline: Timeline,
             instant: Instant) -> tuple[set[FileGroupKey], set[str]] | None:
    """Groups and partitions named by the inflight workload profile; None when there is none."""
    inflight = timeline.file_for(instant.time, instant.action, State.INFLIGHT)
    if inflight is None:
        return None
    data = storage.read(f"{folder}/{inflight.file_name}")
    if not data.strip():
        return None
    try:
        profile = decode_commit_metadata(data, path=inflight.file_name)
    except CorruptMetadataError:
        return None
    if (profile.operation_type or "").upper() == "INSERT_OVERWRITE_TABLE":
        return None  # replaces every file group of every partition, whatever its profile lists
    groups: set[FileGroupKey] = set()
    partitions: set[str] = set()
    overwrite = instant.action in (Action.REPLACE_COMMIT, Action.CLUSTERING)
    for partition, stats in profile.partition_to_write_stats.items():
        if overwrite:
            partitions.add(partition)
        for stat in stats:
            if stat.file_id:
                groups.add((partition, stat.file_id))
            elif stat.num_inserts or stat.num_writes:
                partitions.add(partition)
    for partition, file_ids in profile.partition_to_replace_file_ids.items():
        groups.update((partition, f) for f in file_ids)
    return groups, partitions


def _marked_groups(storage: Storage, instant: str) -> set[FileGroupKey]:
    """File groups of the data files an instant's markers name (direct or timeline-server markers)."""
    root = f"{MARKER_DIR}/{instant}"
    try:
        if storage.stat(root) is None:
            return set()
        entries = list(storage.walk(root))
    except StorageError:
        return set()
    names: list[str] = []
    for info in entries:
        rel = info.path[len(root) + 1:]
        leaf = rel.rsplit("/", 1)[-1]
        if re.fullmatch(r"MARKERS\d+", leaf):
            names.extend(line.strip() for line in storage.read(info.path).decode("utf-8", "replace").splitlines())
        elif _MARKER_SUFFIX.search(leaf):
            names.append(rel)
    groups: set[FileGroupKey] = set()
    for name in names:
        path = _MARKER_SUFFIX.sub("", name)
        partition, _, file_name = path.rpartition("/")
        parsed = BaseFile.parse(file_name) or LogFile.parse(file_name)
        if parsed is not None:
            groups.add((partition, parsed.file_id))
    return groups
