"""Where each record of an upsert or insert goes: Hudi's UpsertPartitioner as a pure function.

Hudi gives every file group a write touches its own bucket (one Spark task): an *update* bucket
for each existing file group receiving updates, then, per partition, the inserts are spread by
`assign_inserts`: small files first (each becomes an update bucket too, so its old records are
merged into its next version), then new file groups with fresh ids. Inserts are then routed to the
buckets in proportion to the planned counts.

Hudi routes each insert by a hash of its key against the buckets' cumulative weights, so bucket
sizes only approximate the plan. Here the inserts of a partition are numbered in input order and
bucket `i` takes the consecutive range of numbers it was planned to hold, so every file receives
exactly the number of records `assign_inserts` planned for it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from runner.declarations.model import FileSizing
from runner.hudi import bucket_index
from runner.hudi.files import BaseFile
from runner.sizing import assign_inserts


@dataclass(frozen=True, slots=True)
class Bucket:
    """One file group the write produces a new file for.

    Args:
        file_id: the group's id; a new group's id is `<uuid4>-0`.
        partition: relative partition path (`""` when not partitioned).
        base_file: the group's latest base file, whose records are merged into the new file
            (copy-on-write); None for a new file group.
        updates: records of this write that replace records of `base_file`.
        inserts: new records planned for this file.
    """

    file_id: str
    partition: str
    base_file: BaseFile | None
    updates: int = 0
    inserts: int = 0

    @property
    def prev_commit(self) -> str | None:
        """The base instant merged into (`prevCommit` in the write stat); None for a new group."""
        return None if self.base_file is None else str(self.base_file.instant_time)


@dataclass(frozen=True, slots=True)
class InsertRange:
    """The inserts of `partition` numbered `start` (inclusive) to `end` (exclusive) go to `file_id`."""

    partition: str
    start: int
    end: int
    file_id: str


@dataclass(frozen=True, slots=True)
class Routing:
    """The buckets of one write and how its inserts are spread over them."""

    buckets: tuple[Bucket, ...]
    ranges: tuple[InsertRange, ...]

    def bucket(self, file_id: str) -> Bucket:
        return next(b for b in self.buckets if b.file_id == file_id)


def insert_targets(ranges: Sequence[InsertRange]) -> tuple[dict[str, str], dict[str, list[InsertRange]]]:
    """How each partition's inserts are routed: `whole` maps a partition whose inserts all go to one
    file group (the usual case) to that file id; `split` lists, per partition spread over several
    groups, its ranges in order. Both engines route by this, so they fill the same file groups."""
    per_partition: dict[str, list[InsertRange]] = {}
    for r in ranges:
        per_partition.setdefault(r.partition, []).append(r)
    whole = {p: rs[0].file_id for p, rs in per_partition.items() if len(rs) == 1}
    split = {p: rs for p, rs in per_partition.items() if len(rs) > 1}
    return whole, split


def new_file_id() -> str:
    """A new file group id as Hudi makes one: a random UUID and the first file index, `-0`."""
    return bucket_index.new_file_id()


def plan_routing(
    updates: Mapping[tuple[str, str], int],
    inserts: Mapping[str, int],
    latest: Mapping[str, Sequence[BaseFile]],
    *,
    sizing: FileSizing,
    avg_record_size: int,
    auto_split: bool,
    blocked: Collection[tuple[str, str]] = (),
    make_file_id: Callable[[], str] = new_file_id,
) -> Routing:
    """Plan the buckets of an upsert or insert.

    Args:
        updates: records to update per `(partition, file_id)` (from the index lookup).
        inserts: new records per partition.
        latest: per partition, the latest committed base file of each active file group, in view
            order.
        blocked: `(partition, file_id)` of groups in pending clustering or compaction: never small
            files (the caller refuses updates to them, as Hudi's default update strategy does).
        sizing: the declared file sizes.
        avg_record_size: bytes per record, from the commit history.
        auto_split: size new file groups by `max_file_size // avg_record_size` records
            (`hoodie.copyonwrite.insert.auto.split`) rather than `insert_split_size`.
        make_file_id: id source for new file groups (tests pass a deterministic one).

    Returns:
        Update buckets first (by partition and file id), then each partition's small-file and new
        buckets in `assign_inserts` order, and the insert ranges.

    Raises:
        ValueError: an update names a file group that `latest` does not list.
    """
    by_key: dict[tuple[str, str], Bucket] = {}
    for (partition, file_id), count in sorted(updates.items()):
        base = _find(latest.get(partition, ()), file_id)
        if base is None:
            raise ValueError(f"update for file group {partition}/{file_id} that has no latest base file")
        by_key[(partition, file_id)] = Bucket(file_id, partition, base, updates=count)
    ranges: list[InsertRange] = []
    for partition, count in sorted(inserts.items()):
        files = [f for f in latest.get(partition, ()) if (partition, f.file_id) not in blocked]
        planned = assign_inserts(
            [(f.file_id, max(f.size, 0)) for f in files],
            count,
            max_file_size=sizing.max_file_size,
            small_file_limit=sizing.small_file_limit,
            insert_split_size=sizing.insert_split_size,
            avg_record_size=avg_record_size,
            auto_split=auto_split,
        )
        start = 0
        for planned_bucket in planned:
            file_id = planned_bucket.file_id or make_file_id()
            current = by_key.get((partition, file_id))
            base = current.base_file if current else (_find(files, file_id) if planned_bucket.file_id else None)
            by_key[(partition, file_id)] = Bucket(
                file_id, partition, base, current.updates if current else 0, planned_bucket.records
            )
            ranges.append(InsertRange(partition, start, start + planned_bucket.records, file_id))
            start += planned_bucket.records
    return Routing(tuple(by_key.values()), tuple(ranges))


def _find(files: Sequence[BaseFile], file_id: str) -> BaseFile | None:
    return next((f for f in files if f.file_id == file_id), None)
