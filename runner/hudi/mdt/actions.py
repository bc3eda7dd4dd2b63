"""The metadata-table records a data-table action produces, per MDT partition (pure).

CLEAN (apache/hudi `HoodieTableMetadataUtil.convertMetadataToRecords(HoodieCleanMetadata)` and its
`convertMetadataToFilesPartitionRecords` / `...BloomFilterRecords` / `...ColumnStatsRecords`; the
1.x indexers' `buildClean`):
- `files`: for every partition of the clean metadata, one file-list record marking each of its
  `deletePathPatterns` deleted; if a partition was deleted, an `__all_partitions__` record marking it.
- `column_stats`: a tombstone per deleted file (base *and* log files: Hudi 1.x indexes log files of
  merge-on-read tables too) and indexed column.
- `bloom_filters`: a tombstone per deleted base file only.
- `record_index`, `partition_stats`, secondary indexes: nothing (their `buildClean` is empty).
- expression indexes: column-stats or bloom tombstones per index definition; not implemented here,
  so an action on a table that has one is refused (`unsupported_partitions`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from runner.hudi.files import BaseFile
from runner.hudi.mdt import keys
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.tombstones import IndexTombstones
from runner.hudi.metadata import CleanMetadata

FILES = "files"
COLUMN_STATS = "column_stats"
BLOOM_FILTERS = "bloom_filters"
# Partitions a clean leaves alone: they map record keys or partitions, not files.
UNTOUCHED_BY_CLEAN = ("record_index", "partition_stats", "secondary_index_")


@dataclass(frozen=True, slots=True)
class MdtCommit:
    """One MDT deltacommit: its instant (the data instant's) and encoded record values per MDT
    partition and key (HoodieMetadataRecord Avro binary, in the table's own schema)."""

    instant: str
    records: Mapping[str, Mapping[str, bytes]]


def unsupported_partitions(mdt_partitions: Collection[str]) -> list[str]:
    """MDT partitions a clean would have to update but the runner cannot (expression indexes, unknown)."""
    known = (FILES, COLUMN_STATS, BLOOM_FILTERS)
    return sorted(p for p in mdt_partitions if p not in known and not p.startswith(UNTOUCHED_BY_CLEAN))


def partition_id(data_partition: str) -> str:
    """How the MDT names a data partition: `.` for a non-partitioned table's root."""
    return data_partition or rec.NON_PARTITIONED_NAME


def clean_commit(
    instant: str, clean: CleanMetadata, *, mdt_partitions: Collection[str], stats_columns: Collection[str],
    schema: str,
) -> MdtCommit:
    """The records Hudi writes to the MDT for a completed clean, encoded with `schema`."""
    files: dict[str, bytes] = {}
    deleted_partitions: dict[str, tuple[int, bool]] = {}
    deleted: list[tuple[str, tuple[str, ...]]] = []
    for partition, meta in clean.partition_metadata.items():
        pid = partition_id(partition)
        files[pid] = rec.encode_file_list(schema, dict.fromkeys(meta.delete_path_patterns, (0, True)))
        if meta.is_partition_deleted:
            deleted_partitions[pid] = (0, True)
        deleted.append((pid, meta.delete_path_patterns))
    out: dict[str, Mapping[str, bytes]] = {FILES: files}
    # Millions of index tombstones: built as whole arrays (tombstones.py), not record by record.
    if COLUMN_STATS in mdt_partitions and stats_columns:
        # Tombstones differ only in file and column name: spliced into one encoded template.
        head, mid, tail = rec.string_template(schema, _column_stats_tombstone)
        columns = [(keys.name_id(c), mid + rec.avro_string(c) + tail) for c in stats_columns]
        stats = IndexTombstones(deleted, columns, name_prefix=head)
        if stats:
            out[COLUMN_STATS] = stats
    if BLOOM_FILTERS in mdt_partitions:
        base_files = [(pid, tuple(n for n in names if BaseFile.parse(n) is not None)) for pid, names in deleted]
        bloom_value = rec.encode_record(schema, _bloom_tombstone(instant))
        blooms = IndexTombstones(base_files, [("", bloom_value)], name_prefix=None)
        if blooms:
            out[BLOOM_FILTERS] = blooms
    if deleted_partitions:
        files[rec.ALL_PARTITIONS_KEY] = rec.encode_file_list(
            schema, deleted_partitions, record_type=rec.PARTITION_LIST)
    return MdtCommit(instant, out)


def _column_stats_tombstone(file_name: str, column: str) -> rec.MetadataRecord:
    # HoodieColumnRangeMetadata.stub: no min/max, counts -1, deleted.
    return {
        "key": "",
        "type": rec.COLUMN_STATS,
        "ColumnStatsMetadata": {
            "fileName": file_name, "columnName": column, "minValue": None, "maxValue": None,
            "valueCount": -1, "nullCount": -1, "totalSize": -1, "totalUncompressedSize": -1,
            "isDeleted": True,
        },
    }


def _bloom_tombstone(instant: str) -> rec.MetadataRecord:
    return {
        "key": "",
        "type": rec.BLOOM_FILTER,
        "BloomFilterMetadata": {"type": "", "timestamp": instant, "bloomFilter": b"", "isDeleted": True},
    }
