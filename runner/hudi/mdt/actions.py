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

from collections.abc import Collection, Mapping, Sequence
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
    """One MDT deltacommit: its instant (the data instant's) and encoded record values per MDT
    partition and key (HoodieMetadataRecord Avro binary, in the table's own schema)."""

    instant: str
    records: Mapping[str, Mapping[str, bytes]]


def unsupported_partitions(mdt_partitions: Collection[str]) -> list[str]:
    """MDT partitions a clean would have to update but the runner cannot (expression indexes, unknown)."""
    known = (FILES, COLUMN_STATS, BLOOM_FILTERS)
    return sorted(p for p in mdt_partitions if p not in known and not p.startswith(UNTOUCHED_BY_CLEAN))


def held_stats_by_file(column_stats: Mapping[str, rec.MetadataRecord]) -> dict[str, list[tuple[str, str]]]:
    """The live column-stats records of an MDT by the key's file id (its last 24 characters):
    file id -> [(record key, column)].

    Hudi 0.14/0.15 tombstone the columns of the writer's config on clean; the records the MDT holds
    for a file are exactly what those tombstones have to cover, whatever that config was, and their
    keys carry the partition id the writer used.
    """
    out: dict[str, list[tuple[str, str]]] = {}
    for key, record in column_stats.items():
        stats = record.get("ColumnStatsMetadata") or {}
        if stats.get("isDeleted") or not stats.get("columnName") or len(key) < _FILE_PART:
            continue
        out.setdefault(key[-_FILE_ID:], []).append((key, stats["columnName"]))
    return out


# The end of a column-stats key: partition id (Base64 of 8 bytes) + file id (Base64 of 16 bytes).
_FILE_ID = 24
_FILE_PART = 12 + _FILE_ID


def partition_id(data_partition: str) -> str:
    """How the MDT names a data partition: `.` for a non-partitioned table's root."""
    return data_partition or rec.NON_PARTITIONED_NAME


def clean_commit(
    instant: str, clean: CleanMetadata, *, mdt_partitions: Collection[str], stats_columns: Collection[str],
    schema: str, held_stats: Mapping[str, Sequence[tuple[str, str]]] | None = None,
) -> MdtCommit:
    """The records Hudi writes to the MDT for a completed clean, encoded with `schema`.

    `held_stats` (table version 6, whose indexed columns are not in the table): instead of a
    tombstone per `stats_columns`, one per column-stats record the MDT holds for the file
    (`held_stats_by_file`).
    """
    files: dict[str, bytes] = {}
    deleted_partitions: dict[str, tuple[int, bool]] = {}
    with_stats = COLUMN_STATS in mdt_partitions and (bool(stats_columns) or held_stats is not None)
    with_blooms = BLOOM_FILTERS in mdt_partitions
    stats: dict[str, bytes] = {}
    blooms: dict[str, bytes] = {}
    bloom_value = rec.encode_record(schema, _bloom_tombstone(instant)) if with_blooms else b""
    # Tombstones differ only in file and column name: splice them into one encoded template.
    head, mid, tail = rec.string_template(schema, _column_stats_tombstone) if with_stats else (b"", b"", b"")
    column_parts = [(keys.name_id(c), mid + rec.avro_string(c) + tail) for c in stats_columns] if with_stats else []
    for partition, meta in clean.partition_metadata.items():
        pid = partition_id(partition)
        files[pid] = rec.encode_record(schema, rec.file_list_record({n: (0, True) for n in meta.delete_path_patterns}))
        if meta.is_partition_deleted:
            deleted_partitions[pid] = (0, True)
        partition_key = keys.name_id(pid)
        # Hudi 0.x keyed a non-partitioned table's stats with `.` or with "" depending on the path
        # that wrote them (initialization or commit): a held record of either kind is the file's.
        held_partition_keys = {partition_key} | (set() if partition else {keys.name_id("")})
        for name in meta.delete_path_patterns:
            partition_file_key = partition_key + keys.file_id(name)  # also the bloom-filter key
            value_head = head + rec.avro_string(name)
            for column_key, value_tail in column_parts:
                stats[column_key + partition_file_key] = value_head + value_tail
            if held_stats is not None:
                for held_key, column in held_stats.get(partition_file_key[-_FILE_ID:], ()):
                    if held_key[-_FILE_PART:-_FILE_ID] in held_partition_keys:
                        stats[held_key] = value_head + mid + rec.avro_string(column) + tail
            if with_blooms and BaseFile.parse(name) is not None:
                blooms[partition_file_key] = bloom_value
    if deleted_partitions:
        files[rec.ALL_PARTITIONS_KEY] = rec.encode_record(
            schema, rec.file_list_record(deleted_partitions, record_type=rec.PARTITION_LIST))
    out: dict[str, Mapping[str, bytes]] = {FILES: files}
    if stats:
        out[COLUMN_STATS] = stats
    if blooms:
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
