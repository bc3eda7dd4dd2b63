"""Reads and decodes the contents of instant files, with Hudi's rules on which may be empty.

Empty files Hudi writes or tolerates: requested commit/deltacommit files (always empty), inflight
files (often empty), `.clean.requested`/`.clean.inflight` left by a crash (Hudi skips them),
completed cleans (Hudi deletes them and falls back to a full listing), and a completed commit
(Hudi reads it as empty metadata). Empty files Hudi does not allow, and neither do we, because the
cleaner could not know what they protect: compaction and log-compaction plans, savepoints.
"""

from __future__ import annotations

from runner.errors import CorruptMetadataError
from runner.hudi.avro import read_container
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.metadata import (
    CleanMetadata,
    CleanPlan,
    CommitMetadata,
    CompactionOperation,
    SavepointMetadata,
    decode_clean_metadata,
    decode_clean_plan,
    decode_commit_metadata,
    decode_compaction_plan,
    decode_requested_replace,
    decode_savepoint_metadata,
)
from runner.hudi.storage import Storage
from runner.hudi.timeline import Timeline

_EMPTY_COMMIT = CommitMetadata(
    operation_type=None,
    partition_to_write_stats={},
    partition_to_replace_file_ids={},
    extra_metadata={},
    compacted=False,
)


class InstantReader:
    """Decodes the instant files of one timeline folder on demand."""

    def __init__(self, storage: Storage, folder: str, timeline: Timeline) -> None:
        self._storage = storage
        self._folder = folder
        self._timeline = timeline

    def read(self, instant: Instant) -> bytes:
        return self._storage.read(self.path(instant))

    def path(self, instant: Instant) -> str:
        return f"{self._folder}/{instant.file_name}"

    def completed_commits(self) -> dict[InstantTime, CommitMetadata]:
        """Metadata of every completed commit, deltacommit and replacecommit, by requested time."""
        result: dict[InstantTime, CommitMetadata] = {}
        for instant in self._timeline.completed_writes:
            data = self.read(instant)
            result[instant.time] = (
                decode_commit_metadata(data, path=self.path(instant)) if data.strip() else _EMPTY_COMMIT
            )
        return result

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
            data = self.read(instant)
            if not data:
                empty.append(instant)
                continue
            return (instant, decode_clean_metadata(data, path=self.path(instant))), tuple(empty)
        return None, tuple(empty)

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



RUNNER_MARKER = ("runner", "hudi-runner")


def _has_runner_marker(data: bytes, path: str) -> bool:
    """Whether a clustering plan carries this runner's marker in its extraMetadata."""
    plan = read_container(data, path=path).get("clusteringPlan")
    extra = plan.get("extraMetadata") if isinstance(plan, dict) else None
    return isinstance(extra, dict) and extra.get(RUNNER_MARKER[0]) == RUNNER_MARKER[1]
