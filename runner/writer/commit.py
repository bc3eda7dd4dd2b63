"""A write on the timeline: `T.commit.requested` → `T.inflight` → `T.commit`, as Hudi 0.14 writes them.

- `T.commit.requested` is empty and written first, before any data file.
- `T.inflight` holds the workload profile once the write is planned: per partition one stat with
  an empty file id counting the partition's inserts, then one per existing file group receiving
  updates (its file id, `prevCommit` = its base instant, `numUpdateWrites`).
- Data files are written (see `runner.writer.files`).
- Before completing, files that have a marker but no write stat are deleted (a retried task's
  leftovers, which readers would otherwise see as a second file of the same slice), as Hudi's
  `reconcileAgainstMarkers` does.
- `T.commit` holds one write stat per file written: file id, path, `prevCommit` (the merged base
  instant, or `"null"`), record counts, bytes, and `extraMetadata.schema`, the Avro writer schema
  readers take the table schema from. Then the marker folder is removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runner.hudi.files import relative_path
from runner.hudi.instant import Action, Instant, InstantTime
from runner.hudi.metadata import CommitMetadata, WriteStat, encode_commit_metadata
from runner.hudi.timeline_writer import TimelineWriter
from runner.storage import Storage
from runner.writer.files import WrittenFile
from runner.writer.markers import delete_markers, marked_files
from runner.writer.route import Bucket


def workload_profile(operation: str, inserts: Mapping[str, int], buckets: Sequence[Bucket]) -> CommitMetadata:
    """The inflight file's content: planned inserts per partition and updates per file group."""
    stats: dict[str, list[WriteStat]] = {}
    for partition in sorted(set(inserts) | {b.partition for b in buckets if b.updates}):
        stats[partition] = [WriteStat(partition, "", None, None, num_inserts=inserts.get(partition, 0))]
    for bucket in buckets:
        if bucket.updates:
            stats[bucket.partition].append(WriteStat(
                bucket.partition, bucket.file_id, None, bucket.prev_commit, num_update_writes=bucket.updates
            ))
    return CommitMetadata(operation_type=operation, partition_to_write_stats=_frozen(stats))


def commit_metadata(operation: str, files: Sequence[WrittenFile], schema: str) -> CommitMetadata:
    """The completed commit's content: one write stat per file, grouped by partition."""
    stats: dict[str, list[WriteStat]] = {}
    for f in sorted(files, key=lambda f: (f.partition, f.file_id)):
        stats.setdefault(f.partition, []).append(WriteStat(
            partition_path=f.partition,
            file_id=f.file_id,
            path=relative_path(f.partition, f.name),
            prev_commit=f.prev_commit,
            num_writes=f.num_writes,
            num_inserts=f.num_inserts,
            num_update_writes=f.num_update_writes,
            total_write_bytes=f.size,
            file_size_in_bytes=f.size,
        ))
    return CommitMetadata(operation_type=operation, partition_to_write_stats=_frozen(stats),
                          extra_metadata={"schema": schema})


def _frozen(stats: dict[str, list[WriteStat]]) -> dict[str, tuple[WriteStat, ...]]:
    return {partition: tuple(items) for partition, items in stats.items()}


def begin(timeline: TimelineWriter, instant: InstantTime) -> Instant:
    """Write the empty `T.commit.requested`."""
    return timeline.requested(instant, Action.COMMIT, b"")


def mark_inflight(timeline: TimelineWriter, instant: InstantTime, profile: CommitMetadata) -> Instant:
    """Write `T.inflight` with the workload profile."""
    return timeline.inflight(instant, Action.COMMIT, encode_commit_metadata(profile, layout=1))


def complete(storage: Storage, timeline: TimelineWriter, inflight: Instant, meta: CommitMetadata) -> list[str]:
    """Delete unreported marked files, write `T.commit`, remove the markers.

    Returns:
        The relative paths deleted as leftovers.
    """
    reported = {stat.path for stat in meta.write_stats}
    leftovers = [path for path in marked_files(storage, str(inflight.time)) if path not in reported]
    for path in leftovers:
        storage.delete(path)
    timeline.complete(inflight, encode_commit_metadata(meta, layout=1), completion=None)
    delete_markers(storage, str(inflight.time))
    return leftovers
