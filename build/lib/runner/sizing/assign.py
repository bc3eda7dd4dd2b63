"""Where Hudi puts a partition's inserts on a copy-on-write table (UpsertPartitioner).

An `upsert` or `insert` (not `bulk_insert`) first tops up the partition's small files, the latest
base files below `hoodie.parquet.small.file.limit`, and only then opens new file groups. This is
how Hudi keeps file sizes healthy while writing. Predicting it tells the planner whether the next
write will absorb the small files anyway or whether clustering has to rewrite them.

The model covers one partition and inserts only. Updates do not change the assignment: they stay
in their own file group, and a small file that also gets updates shares that file group's bucket.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runner.sizing._checks import require_file_sizes, require_non_negative, require_positive


@dataclass(frozen=True, slots=True)
class InsertBucket:
    """A share of a partition's inserts that one Spark task writes into one file group.

    Args:
        file_id: the existing small file group that is padded (Hudi rewrites its base file with
            the old records plus these inserts), or None for a new file group. Hudi gives a new
            group a random file id prefix, so no id is predicted here.
        records: how many of the inserts go to this bucket, always > 0.
    """

    file_id: str | None
    records: int


def assign_inserts(
    base_files: Sequence[tuple[str, int]],
    inserts: int,
    *,
    max_file_size: int,
    small_file_limit: int,
    insert_split_size: int,
    avg_record_size: int,
    auto_split: bool = False,
) -> list[InsertBucket]:
    """Split one partition's inserts into buckets the way Hudi's UpsertPartitioner does.

    1. Small files are the `base_files` smaller than `small_file_limit`, taken in the given
       (file-system view) order; Hudi does not sort them. Each is padded up to `max_file_size`:
       it takes `min((max_file_size - size) // avg_record_size, remaining)` records. A small file
       with room for no whole record gets no bucket. `small_file_limit <= 0` turns this step off
       (`hoodie.parquet.small.file.limit=0`).
    2. The rest go to new file groups of `insert_split_size` records each
       (`hoodie.copyonwrite.insert.split.size`); the last one holds the remainder.
       With `auto_split` (`hoodie.copyonwrite.insert.auto.split`), a new group holds
       `max_file_size // avg_record_size` records instead. That floor division is Hudi 0.14/0.15;
       Hudi 1.x rounds up, so it may plan one more record per group.
       Either way a group holds at least one record.

    Args:
        base_files: the partition's latest base files as `(file_id, size_bytes)`, in view order.
            The caller has already left out file groups in pending clustering, as Hudi does.
        inserts: number of new records for this partition.
        max_file_size: `hoodie.parquet.max.file.size` in bytes.
        small_file_limit: `hoodie.parquet.small.file.limit` in bytes; <= 0 disables padding.
        insert_split_size: records per new file group when `auto_split` is off.
        avg_record_size: bytes per record, usually from `average_record_size`.
        auto_split: size new file groups from `max_file_size` and `avg_record_size`.

    Returns:
        The buckets in Hudi's order: padded small files first, then new file groups. Their
        `records` add up to `inserts`; no inserts gives no buckets.

    Raises:
        ValueError: when a size or count is not positive (`inserts` and file sizes may be 0),
            or when a file id is listed twice.
    """
    _check_arguments(base_files, inserts, max_file_size, insert_split_size, avg_record_size)
    padded = _pad_small_files(base_files, inserts, max_file_size, small_file_limit, avg_record_size)
    remaining = inserts - sum(bucket.records for bucket in padded)
    per_group = max(1, max_file_size // avg_record_size) if auto_split else insert_split_size
    return padded + _new_file_groups(remaining, per_group)


def _check_arguments(
    base_files: Sequence[tuple[str, int]],
    inserts: int,
    max_file_size: int,
    insert_split_size: int,
    avg_record_size: int,
) -> None:
    require_file_sizes(base_files)
    require_non_negative("inserts", inserts)
    require_positive("max_file_size", max_file_size)
    require_positive("insert_split_size", insert_split_size)
    require_positive("avg_record_size", avg_record_size)


def _pad_small_files(
    base_files: Sequence[tuple[str, int]],
    inserts: int,
    max_file_size: int,
    small_file_limit: int,
    avg_record_size: int,
) -> list[InsertBucket]:
    if small_file_limit <= 0:
        return []
    buckets: list[InsertBucket] = []
    remaining = inserts
    for file_id, size in base_files:
        if remaining == 0:
            break
        if size >= small_file_limit:
            continue
        # A file between max_file_size and a (misconfigured) larger limit has negative room.
        room = max(0, (max_file_size - size) // avg_record_size)
        records = min(room, remaining)
        if records > 0:
            buckets.append(InsertBucket(file_id, records))
            remaining -= records
    return buckets


def _new_file_groups(remaining: int, per_group: int) -> list[InsertBucket]:
    full, last = divmod(remaining, per_group)
    buckets = [InsertBucket(None, per_group)] * full
    if last:
        buckets.append(InsertBucket(None, last))
    return buckets
