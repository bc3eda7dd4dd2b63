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
from runner.hudi.metadata import CleanMetadata

FILES = "files"
COLUMN_STATS = "column_stats"
BLOOM_FILTERS = "bloom_filters"
# Partitions a clean leaves alone: they map record keys or partitions, not files.
UNTOUCHED_BY_CLEAN = ("record_index", "partition_stats", "secondary_index_")


@dataclass(frozen=True, slots=True)
class MdtCommit:
    """One MDT deltacommit: its instant (the data instant's) and records per MDT partition."""

    instant: str
    records: Mapping[str, Mapping[str, rec.MetadataRecord]]


def unsupported_partitions(mdt_partitions: Collection[str]) -> list[str]:
    """MDT partitions a clean would have to update but the runner cannot (expression indexes, unknown)."""
    known = (FILES, COLUMN_STATS, BLOOM_FILTERS)
    return sorted(p for p in mdt_partitions if p not in known and not p.startswith(UNTOUCHED_BY_CLEAN))


def partition_id(data_partition: str) -> str:
    """How the MDT names a data partition: `.` for a non-partitioned table's root."""
    return data_partition or rec.NON_PARTITIONED_NAME


def clean_commit(
    instant: str, clean: CleanMetadata, *, mdt_partitions: Collection[str], stats_columns: Collection[str]
) -> MdtCommit:
    """The records Hudi writes to the MDT for a completed clean."""
    files: dict[str, rec.MetadataRecord] = {}
    deleted_partitions: dict[str, tuple[int, bool]] = {}
    stats: dict[str, rec.MetadataRecord] = {}
    blooms: dict[str, rec.MetadataRecord] = {}
    for partition, meta in clean.partition_metadata.items():
        pid = partition_id(partition)
        files[pid] = rec.file_list_record({name: (0, True) for name in meta.delete_path_patterns})
        if meta.is_partition_deleted:
            deleted_partitions[pid] = (0, True)
        for name in meta.delete_path_patterns:
            for column in stats_columns:
                stats[keys.column_stats_key(column, pid, name)] = _column_stats_tombstone(name, column)
            if BaseFile.parse(name) is not None:
                blooms[keys.bloom_filter_key(pid, name)] = _bloom_tombstone(instant)
    if deleted_partitions:
        files[rec.ALL_PARTITIONS_KEY] = rec.file_list_record(deleted_partitions, record_type=rec.PARTITION_LIST)
    out: dict[str, Mapping[str, rec.MetadataRecord]] = {FILES: files}
    if COLUMN_STATS in mdt_partitions and stats:
        out[COLUMN_STATS] = stats
    if BLOOM_FILTERS in mdt_partitions and blooms:
        out[BLOOM_FILTERS] = blooms
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
