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
- expression indexes (`ExpressionIndexer.buildClean`): per index definition of type `bloom_filters`
  the bloom tombstones above, of type `column_stats` column-stats tombstones of its source fields,
  in the index's own partition. The runner tombstones the records that partition holds for each
  cleaned file (`held_by_file`); an expression index of another type is refused.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from runner.hudi.files import BaseFile
from runner.hudi.mdt import keys
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.partitions import (
    BLOOM_FILTERS,
    COLUMN_STATS,
    EXPRESSION_INDEX_PREFIX,
    FILES,
    UNTOUCHED_BY_CLEAN,
)
from runner.hudi.mdt.tombstones import IndexTombstones
from runner.hudi.metadata import CleanMetadata


@dataclass(frozen=True, slots=True)
class MdtCommit:
    """One MDT deltacommit: its instant (the data instant's) and encoded record values per MDT
    partition and key (HoodieMetadataRecord Avro binary, in the table's own schema)."""

    instant: str
    records: Mapping[str, Mapping[str, bytes]]


def unsupported_partitions(mdt_partitions: Collection[str]) -> list[str]:
    """MDT partitions a clean would have to update but the runner cannot (unknown kinds)."""
    known = (FILES, COLUMN_STATS, BLOOM_FILTERS)
    return sorted(p for p in mdt_partitions
                  if p not in known and not p.startswith((*UNTOUCHED_BY_CLEAN, EXPRESSION_INDEX_PREFIX)))


def held_by_file(records: Mapping[str, rec.MetadataRecord]) -> dict[str, list[tuple[str, str]]]:
    """The live per-file records of an index partition (column stats and bloom filters) by the
    key's file id (its last 24 characters): file id -> [(record key, column, or "" for a bloom filter)].

    Used where the runner cannot name a clean's tombstones from the table alone: on table version
    6 (Hudi 0.14/0.15 tombstone the columns of the writer's config, which no table file records)
    and for expression indexes (whose keys depend on how the expression was indexed). The records
    the MDT holds for a file are exactly what the tombstones have to cover, and their keys carry
    the partition id the writer used.
    """
    out: dict[str, list[tuple[str, str]]] = {}
    for key, record in records.items():
        if len(key) < _FILE_PART:
            continue
        if record.get("type") == rec.COLUMN_STATS:
            stats = record.get("ColumnStatsMetadata") or {}
            if not stats.get("isDeleted") and stats.get("columnName"):
                out.setdefault(key[-_FILE_ID:], []).append((key, stats["columnName"]))
        elif record.get("type") == rec.BLOOM_FILTER:
            if not (record.get("BloomFilterMetadata") or {}).get("isDeleted"):
                out.setdefault(key[-_FILE_ID:], []).append((key, ""))
    return out


# The end of a column-stats key: partition id (Base64 of 8 bytes) + file id (Base64 of 16 bytes).
_FILE_ID = 24
_FILE_PART = 12 + _FILE_ID


def partition_id(data_partition: str) -> str:
    """How the MDT names a data partition: `.` for a non-partitioned table's root."""
    return data_partition or rec.NON_PARTITIONED_NAME


def clean_commit(
    instant: str, clean: CleanMetadata, *, mdt_partitions: Collection[str], stats_columns: Collection[str],
    schema: str, held: Mapping[str, Mapping[str, Sequence[tuple[str, str]]]] | None = None,
    legacy_keys: bool = False,
) -> MdtCommit:
    """The records Hudi writes to the MDT for a completed clean, encoded with `schema` (the `files`
    partition's only when FILES is among `mdt_partitions`, which it always is in a real MDT).

    `held`: MDT partition -> `held_by_file` of its records, for the index partitions whose
    tombstones are those of the records the MDT holds for each cleaned file (column_stats on table
    version 6, instead of one per `stats_columns`; expression indexes): a column-stats tombstone
    per held column-stats record, a bloom-filter tombstone per held bloom filter of a base file.

    `legacy_keys` (table version 6): Hudi 0.14/0.15's commits key a non-partitioned table's bloom
    filters with the partition path as it is (""), its initialization and reader with `.`; the
    tombstone goes under both keys (one without a record is a no-op).
    """
    files: dict[str, bytes] = {}
    deleted_partitions: dict[str, tuple[int, bool]] = {}
    deleted: list[tuple[str, tuple[str, ...]]] = []
    for partition, meta in clean.partition_metadata.items():
        pid = partition_id(partition)
        if FILES in mdt_partitions:
            files[pid] = rec.encode_file_list(schema, dict.fromkeys(meta.delete_path_patterns, (0, True)))
        if meta.is_partition_deleted:
            deleted_partitions[pid] = (0, True)
        deleted.append((pid, meta.delete_path_patterns))
    if deleted_partitions and FILES in mdt_partitions:
        files[rec.ALL_PARTITIONS_KEY] = rec.encode_file_list(
            schema, deleted_partitions, record_type=rec.PARTITION_LIST)
    out: dict[str, Mapping[str, bytes]] = {FILES: files} if FILES in mdt_partitions else {}
    with_stats = COLUMN_STATS in mdt_partitions and bool(stats_columns)
    # Tombstones differ only in file and column name: spliced into one encoded template (built only
    # when needed: a table without column stats may have a schema without their fields).
    templated = with_stats or bool(held)
    head, mid, tail = rec.string_template(schema, _column_stats_tombstone) if templated else (b"", b"", b"")
    with_blooms = BLOOM_FILTERS in mdt_partitions
    bloom_value = rec.encode_record(schema, _bloom_tombstone(instant)) if with_blooms or held else b""
    # Millions of index tombstones: built as whole arrays (tombstones.py), not record by record.
    if with_stats:
        columns = [(keys.name_id(c), mid + rec.avro_string(c) + tail) for c in stats_columns]
        stats = IndexTombstones(deleted, columns, name_prefix=head)
        if stats:
            out[COLUMN_STATS] = stats
    if with_blooms:
        base_files = [(pid, tuple(n for n in names if BaseFile.parse(n) is not None)) for pid, names in deleted]
        blooms: Mapping[str, bytes] = IndexTombstones(base_files, [("", bloom_value)], name_prefix=None)
        if legacy_keys:
            legacy = _legacy_root_blooms(clean, bloom_value)
            blooms = {**blooms, **legacy} if legacy else blooms
        if blooms:
            out[BLOOM_FILTERS] = blooms
    for held_partition, by_file in (held or {}).items():
        tombstones = _held_tombstones(clean, by_file, head, mid, tail, bloom_value)
        if tombstones:
            out[held_partition] = {**out.get(held_partition, {}), **tombstones}
    return MdtCommit(instant, out)


def _legacy_root_blooms(clean: CleanMetadata, bloom_value: bytes) -> dict[str, bytes]:
    """Bloom tombstones of a non-partitioned table's files under the "" partition key as well."""
    root = keys.name_id("")
    meta = clean.partition_metadata.get("")
    names = meta.delete_path_patterns if meta is not None else ()
    return {root + keys.file_id(n): bloom_value for n in names if BaseFile.parse(n) is not None}


def _held_tombstones(clean: CleanMetadata, by_file: Mapping[str, Sequence[tuple[str, str]]],
                     head: bytes, mid: bytes, tail: bytes, bloom_value: bytes) -> dict[str, bytes]:
    """A tombstone for every record the partition holds for a cleaned file (`held_by_file`)."""
    out: dict[str, bytes] = {}
    for partition, meta in clean.partition_metadata.items():
        partition_key = keys.name_id(partition_id(partition))
        # Hudi 0.x keyed a non-partitioned table's stats with `.` or with "" depending on the path
        # that wrote them (initialization or commit): a held record of either kind is the file's.
        partition_keys = {partition_key} | (set() if partition else {keys.name_id("")})
        for name in meta.delete_path_patterns:
            for held_key, column in by_file.get(keys.file_id(name), ()):
                if held_key[-_FILE_PART:-_FILE_ID] not in partition_keys:
                    continue
                if column:
                    out[held_key] = head + rec.avro_string(name) + mid + rec.avro_string(column) + tail
                elif BaseFile.parse(name) is not None:
                    out[held_key] = bloom_value
    return out


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
