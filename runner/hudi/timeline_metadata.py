"""Reads and decodes the contents of instant files, with Hudi's rules on which may be empty.

Empty files Hudi writes or tolerates: requested commit/deltacommit files (always empty), inflight
files (often empty), `.clean.requested`/`.clean.inflight` left by a crash (Hudi skips them),
completed cleans (Hudi deletes them and falls back to a full listing), and a completed commit
(Hudi reads it as empty metadata). Empty files Hudi does not allow, and neither do we, because the
cleaner could not know what they protect: compaction and log-compaction plans, savepoints.

Decoding is lazy and cached. A completed commit's metadata can list every file a write touched, so
decoding all of them is what made planning slow on long timelines, while a plan needs only a few:
replacecommits (replaced file groups), the commits of the incremental cleaning window, the newest
commit with a schema. `LazyCommits` decodes a commit on first access. Decoded metadata is cached
by instant file (name, size and modification time from the timeline listing) for the life of the
process: Hudi never rewrites a completed instant file, so a later read of the same table (apply
re-reads the timeline after taking the lock and after each step) decodes nothing twice, and a file
that was replaced anyway has another size or time and is decoded afresh.

The last completed clean is decoded the same way one level down: its top-level fields now, its
per-partition lists of deleted files (all but a few bytes of it) only if something reads them.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from runner.errors import CorruptMetadataError
from runner.hudi.avro import read_container
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.json_text import too_large
from runner.hudi.metadata import (
    CleanMetadata,
    CleanPlan,
    CommitMetadata,
    CompactionOperation,
    SavepointMetadata,
    decode_clean_plan,
    decode_clean_summary,
    decode_commit_metadata,
    decode_compaction_plan,
    decode_requested_replace,
    decode_savepoint_metadata,
)
from runner.hudi.timeline import Timeline

if TYPE_CHECKING:  # annotations only: the Hudi model reads through whatever Storage it is given
    from runner.storage import Storage

_EMPTY_COMMIT = CommitMetadata(
    operation_type=None,
    partition_to_write_stats={},
    partition_to_replace_file_ids={},
    extra_metadata={},
    compacted=False,
)

T = TypeVar("T")
# (size, modification time in ms) of an instant file, as the timeline listing saw it.
FileStamp = tuple[int, int | None]


class DecodedCache:
    """Decoded instant files, least recently used first out, keyed by file identity.

    The bound is in instant files, not bytes: a few hundred covers the active timelines of the
    tables one run plans, and the planner holds the same objects while it works anyway.
    """

    def __init__(self, max_entries: int = 512) -> None:
        self._max = max_entries
        self._entries: OrderedDict[tuple[object, ...], object] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_decode(self, key: tuple[object, ...], decode: Callable[[], T]) -> T:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]  # type: ignore[return-value]
        value = decode()
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


DECODED = DecodedCache()


class InstantReader:
    """Decodes the instant files of one timeline folder on demand.

    Args:
        stamps: size and modification time of each instant file by name, from the listing that
            produced `timeline`; files with a stamp are cached across readers (see `DECODED`).
    """

    def __init__(self, storage: Storage, folder: str, timeline: Timeline, *,
                 stamps: Mapping[str, FileStamp] | None = None, cache: DecodedCache = DECODED) -> None:
        self._storage = storage
        self._folder = folder
        self._timeline = timeline
        self._stamps = stamps or {}
        self._cache = cache

    def read(self, instant: Instant) -> bytes:
        """The instant file's bytes; one the listing showed too large is not read.

        Raises:
            CorruptMetadataError: the listing gave the file a size no instant file has.
        """
        stamp = self._stamps.get(instant.file_name)
        refused = too_large(self.path(instant), stamp[0] if stamp is not None else None)
        if refused is not None:
            raise refused
        return self._storage.read(self.path(instant))

    def path(self, instant: Instant) -> str:
        return f"{self._folder}/{instant.file_name}"

    def completed_commits(self) -> LazyCommits:
        """Metadata of every completed commit, deltacommit and replacecommit, by requested time,
        decoded when first looked up."""
        return LazyCommits(self, self._timeline.completed_writes)

    def commit(self, instant: Instant) -> CommitMetadata:
        """One completed write's metadata (an empty file reads as empty metadata, as in Hudi)."""
        def decode() -> CommitMetadata:
            data = self.read(instant)
            return decode_commit_metadata(data, path=self.path(instant)) if data.strip() else _EMPTY_COMMIT

        return self._cached("commit", instant, decode)

    def _cached(self, kind: str, instant: Instant, decode: Callable[[], T]) -> T:
        stamp = self._stamps.get(instant.file_name)
        if stamp is None:
            return decode()
        return self._cache.get_or_decode((kind, self._storage.uri, self.path(instant), *stamp), decode)

    def pending_operations(self, action: Action) -> dict[Instant, tuple[CompactionOperation, ...]]:
        """Operations of every pending compaction (or log compaction), read from its requested plan."""
        result: dict[Instant, tuple[CompactionOperation, ...]] = {}
        for instant in self._timeline.pending(action):
            requested = self._requested_file(instant)
            result[instant] = decode_compaction_plan(self._required(requested), path=self.path(requested))
        return result

    def pending_clustering(self) -> tuple[frozenset[tuple[str, str]], tuple[InstantTime, ...]]:
        """File groups named by a pending clustering plan (a pending replacecommit or clustering
        whose requested file carries a plan; insert_overwrite requests carry none), and which of
        those pending instants this runner scheduled (its marker in the plan's extraMetadata)."""
        groups: set[tuple[str, str]] = set()
        own: list[InstantTime] = []
        for instant in self._timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING):
            requested = self._requested_file(instant)
            data = self.read(requested)
            replace = decode_requested_replace(data, path=self.path(requested))
            for group in replace.clustering_groups or ():
                groups.update((s.partition_path, s.file_id) for s in group.slices)
            if replace.is_clustering and _has_runner_marker(data, self.path(requested)):
                own.append(instant.time)
        return frozenset(groups), tuple(own)

    def savepoints(self) -> dict[InstantTime, SavepointMetadata]:
        return {
            instant.time: decode_savepoint_metadata(self._required(instant), path=self.path(instant))
            for instant in self._timeline.completed(Action.SAVEPOINT)
        }

    def last_completed_clean(self) -> tuple[tuple[Instant, CleanMetadata] | None, tuple[Instant, ...]]:
        """The newest completed clean with content, and the empty completed cleans Hudi would delete."""
        empty: list[Instant] = []
        for instant in reversed(self._timeline.completed(Action.CLEAN)):
            if self._stamps.get(instant.file_name, (None,))[0] == 0:
                empty.append(instant)  # the listing already says it is empty
                continue
            meta = self._cached("clean", instant, functools.partial(self._clean_metadata, instant))
            if meta is None:
                empty.append(instant)
                continue
            return (instant, meta), tuple(empty)
        return None, tuple(empty)

    def _clean_metadata(self, instant: Instant) -> CleanMetadata | None:
        data = self.read(instant)
        # Planning needs the retention boundary and extra metadata, not the per-partition lists of
        # deleted files that make up nearly all of the file: those decode on first access only.
        return decode_clean_summary(data, path=self.path(instant)) if data else None

    def pending_cleans(self) -> tuple[tuple[Instant, CleanPlan | None], ...]:
        """Requested or inflight cleans, oldest first; an empty plan file decodes to None."""
        result = []
        for instant in self._timeline.pending(Action.CLEAN):
            requested = self._timeline.file_for(instant.time, Action.CLEAN, State.REQUESTED)
            data = self.read(requested) if requested else b""
            plan = (
                decode_clean_plan(data, path=self.path(requested), base_path=self._storage.uri)
                if data and requested
                else None
            )
            result.append((instant, plan))
        return tuple(result)

    def _requested_file(self, instant: Instant) -> Instant:
        requested = self._timeline.file_for(instant.time, instant.action, State.REQUESTED)
        if requested is None:
            raise CorruptMetadataError(
                f"{self.path(instant)} has no matching {instant.time}.{instant.action}.requested plan",
                path=self.path(instant),
            )
        return requested

    def _required(self, instant: Instant) -> bytes:
        data = self.read(instant)
        if not data:
            raise CorruptMetadataError(
                f"{self.path(instant)} is empty, but Hudi always writes its content here; "
                "the runner cannot tell what it protects",
                path=self.path(instant),
                hint="restore the file from a backup, or let Hudi repair the table before maintenance.",
            )
        return data



class LazyCommits(Mapping[InstantTime, CommitMetadata]):
    """Completed writes by requested time; a value is read and decoded on first access only.

    Keys, length and membership come from the timeline and cost nothing. Decoding errors surface
    on access, naming the instant file, exactly as an eager read would have raised them.
    """

    def __init__(self, reader: InstantReader, instants: tuple[Instant, ...]) -> None:
        self._reader = reader
        self._instants = {i.time: i for i in instants}
        self._decoded: dict[InstantTime, CommitMetadata] = {}

    def __getitem__(self, time: InstantTime) -> CommitMetadata:
        found = self._decoded.get(time)
        if found is None:
            found = self._decoded[time] = self._reader.commit(self._instants[time])
        return found

    def __contains__(self, time: object) -> bool:
        return time in self._instants

    def __iter__(self) -> Iterator[InstantTime]:
        return iter(self._instants)

    def __len__(self) -> int:
        return len(self._instants)

    @property
    def decoded(self) -> frozenset[InstantTime]:
        """The instants decoded so far (what a plan actually needed)."""
        return frozenset(self._decoded)


RUNNER_MARKER = ("runner", "hudi-runner")


def _has_runner_marker(data: bytes, path: str) -> bool:
    """Whether a clustering plan carries this runner's marker in its extraMetadata."""
    plan = read_container(data, path=path).get("clusteringPlan")
    extra = plan.get("extraMetadata") if isinstance(plan, dict) else None
    return isinstance(extra, dict) and extra.get(RUNNER_MARKER[0]) == RUNNER_MARKER[1]
