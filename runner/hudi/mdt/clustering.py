"""The metadata-table records a resize (a clustering replacecommit) produces, per MDT partition (pure).

CLUSTER (apache/hudi `HoodieBackedTableMetadataWriter.update(HoodieCommitMetadata)` →
`HoodieTableMetadataUtil.convertMetadataToRecords`; reproduced record for record from the
clustering `20260307162454799` of fixture `v9_txns_simple_meta` in tests/mdt/test_resize_mdt.py):
- `files`: per written partition one file-list record adding the new base files with their sizes,
  and one `__all_partitions__` record listing the written partitions (size 0). The replaced files
  stay listed: a later clean deletes them and records that.
- `column_stats`: one record per new file and indexed column, `isTightBound` false. Hudi reads the
  new file's Parquet footer; the new file holds exactly the inputs' rows, so its min, max, value and
  null counts are the inputs' records merged, and only the column-chunk sizes come from the new
  file's footer. (The inputs' records also carry each column's value type and wrapper record.)
- `partition_stats` (1.x): per written partition and column, the new files' stats merged with the
  `column_stats` of every file in the partition's latest slices *including the pending clustering*
  (`getPartitionLatestFileSlicesIncludingInflight`: the inputs are not yet replaced, so they count
  too, and the counts and sizes cover both), `isTightBound` true, `fileName` = the partition.
- `record_index`: per record key in a new file, its new location (`convertMetadataToRecordIndexRecords`
  reads the new base file's keys; every key of a new file group is an insert there). No deletes:
  every key still exists.
- `bloom_filters` (`BloomFiltersIndexer.convertMetadataToBloomFilterRecords` for a commit): per new
  base file one record, `type` the filter's type, `timestamp` the instant, `bloomFilter` the UTF-8
  bytes of `BloomFilter.serializeToString()` of the filter Hudi reads from the file's footer (which
  is the footer's own Base64 string), `isDeleted` false. The replaced files keep their records
  until a clean writes their tombstones (the write stats name only new files).
- secondary indexes: nothing (they map values to record keys, which a resize does not change).
- expression indexes: not implemented, so a resize of such a table is refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from runner.errors import InternalError
from runner.hudi.instant import InstantTime
from runner.hudi.mdt import keys
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.actions import MdtCommit, partition_id
from runner.hudi.mdt.partitions import BLOOM_FILTERS, COLUMN_STATS, FILES
from runner.hudi.properties import TableConfig

PARTITION_STATS = "partition_stats"
RECORD_INDEX = "record_index"
# Partitions whose records a resize cannot change: they map values or partitions to record keys.
UNTOUCHED_BY_RESIZE = ("secondary_index_",)
_RESIZE_PARTITIONS = (FILES, COLUMN_STATS, PARTITION_STATS, RECORD_INDEX, BLOOM_FILTERS)
# org.apache.hudi.stats.ValueType ordinals whose min/max need more than their Python order.
_STRING, _BYTES, _FIXED, _DECIMAL, _UUID = 7, 8, 9, 10, 11
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class NewBaseFile:
    """One base file a resize wrote, with what its MDT records need.

    Args:
        partition: data partition path, "" for a non-partitioned table.
        name: the file name.
        size: its size in bytes.
        inputs: names of the base files (same partition) whose rows it holds.
        column_sizes: column -> (total compressed, total uncompressed) bytes of its column chunks.
        record_keys: the `_hoodie_record_key` of every row (only read when there is a record index).
        bloom_filter: (type code, serialized filter) from its footer (only read when there is a
            bloom_filters index).
    """

    partition: str
    name: str
    size: int
    inputs: tuple[str, ...]
    column_sizes: Mapping[str, tuple[int, int]]
    record_keys: Sequence[str] = ()
    bloom_filter: tuple[str, str] | None = None

    @property
    def file_id(self) -> str:
        return self.name.split("_", 1)[0]


def resize_refusals(config: TableConfig) -> list[str]:
    """MDT partitions of this table a resize cannot keep in step, with why (empty when it can)."""
    reasons = []
    unknown = sorted(p for p in config.metadata_partitions
                     if p not in _RESIZE_PARTITIONS and not p.startswith(UNTOUCHED_BY_RESIZE))
    if unknown:
        reasons.append(f"the runner cannot update the metadata partitions {', '.join(unknown)} for a resize")
    if COLUMN_STATS in config.metadata_partitions and config.version < 8:
        reasons.append("Hudi 0.14/0.15 keep the columns of the column_stats index in the writer's config "
                       "(hoodie.metadata.index.column.stats.column.list), not in this version-6 table, so the "
                       "runner cannot tell which column stats the new files need")
    keyed = [p for p in (RECORD_INDEX, BLOOM_FILTERS) if p in config.metadata_partitions]
    if keyed and not config.populate_meta_fields:
        reasons.append(f"the {' and '.join(keyed)} need{'s' if len(keyed) == 1 else ''} each row's record key, "
                       "and this table has no `_hoodie_record_key` column (hoodie.populate.meta.fields=false)")
    return reasons


def will_not_resize(reasons: Sequence[str]) -> str:
    """The one sentence plan and apply give for refusing to resize a table because of its MDT."""
    return "the runner will not resize this table while keeping its metadata table, because " + "; ".join(reasons)


def stats_key(column: str, partition: str, file_name: str) -> str:
    return keys.column_stats_key(column, partition_id(partition), file_name)


def missing_stats(inputs: Iterable[tuple[str, str]], columns: Collection[str],
                  column_stats: Mapping[str, rec.MetadataRecord]) -> list[str]:
    """`partition/file: column` of every input (partition, file name) without a live column_stats record."""
    missing = []
    for partition, name in inputs:
        for column in columns:
            record = column_stats.get(stats_key(column, partition, name))
            if record is None or _stats(record).get("isDeleted"):
                missing.append(f"{partition}/{name}: {column}" if partition else f"{name}: {column}")
    return missing


def record_index_millis(instant: str, table_timezone: str) -> int:
    """`HoodieMetadataPayload.parseRecordIndexInstantTime`: the instant as epoch milliseconds, read
    in the table's timeline timezone (LOCAL: this machine's, which also named the instant)."""
    wall = InstantTime(instant).to_datetime()
    aware = wall.replace(tzinfo=UTC) if table_timezone.upper() == "UTC" else wall.astimezone()
    return (aware - _EPOCH) // timedelta(milliseconds=1)


def resize_commit(
    instant: str, files: Sequence[NewBaseFile], *, mdt_partitions: Collection[str], stats_columns: Sequence[str],
    column_stats: Mapping[str, rec.MetadataRecord], latest_files: Mapping[str, Collection[str]],
    schema: str, table_timezone: str,
) -> MdtCommit:
    """The records Hudi writes to the MDT for a completed clustering that wrote `files`.

    Args:
        column_stats: the MDT's column_stats records (decoded `with_names`), at least those of the
            inputs and of `latest_files`.
        latest_files: written partition -> names of the files in its latest slices, the inputs included.
    """
    by_partition: dict[str, list[NewBaseFile]] = {}
    for f in files:
        by_partition.setdefault(f.partition, []).append(f)
    out: dict[str, Mapping[str, bytes]] = {FILES: _files_records(by_partition, schema)}
    with_stats = COLUMN_STATS in mdt_partitions and bool(stats_columns)
    if with_stats:
        new_stats = {f.name: _new_file_stats(f, stats_columns, column_stats) for f in files}
        out[COLUMN_STATS] = {
            stats_key(column, f.partition, f.name): rec.encode_record(schema, _stats_record(record))
            for f in files for column, record in new_stats[f.name].items()
        }
        if PARTITION_STATS in mdt_partitions:
            out[PARTITION_STATS] = _partition_stats(by_partition, new_stats, stats_columns, column_stats,
                                                    latest_files, schema)
    if RECORD_INDEX in mdt_partitions:
        millis = record_index_millis(instant, table_timezone)
        index: dict[str, bytes] = {}
        for f in files:
            value = rec.encode_record(schema, _record_index_record(f, millis))  # the key is not in the value
            index.update(dict.fromkeys(f.record_keys, value))
        out[RECORD_INDEX] = index
    if BLOOM_FILTERS in mdt_partitions:
        out[BLOOM_FILTERS] = _bloom_records(instant, files, schema)
    return MdtCommit(instant, out)


def _bloom_records(instant: str, files: Sequence[NewBaseFile], schema: str) -> dict[str, bytes]:
    out = {}
    for f in files:
        if f.bloom_filter is None:
            raise InternalError(f"{f.partition}/{f.name}: its bloom filter was not read for the bloom_filters index")
        type_code, serialized = f.bloom_filter
        out[keys.bloom_filter_key(partition_id(f.partition), f.name)] = rec.encode_record(
            schema, rec.bloom_filter_record(type_code, instant, serialized.encode("utf-8")))
    return out


def _files_records(by_partition: Mapping[str, Sequence[NewBaseFile]], schema: str) -> dict[str, bytes]:
    records = {
        partition_id(p): rec.encode_record(schema, rec.file_list_record({f.name: (f.size, False) for f in written}))
        for p, written in by_partition.items()
    }
    records[rec.ALL_PARTITIONS_KEY] = rec.encode_record(schema, rec.file_list_record(
        {partition_id(p): (0, False) for p in by_partition}, record_type=rec.PARTITION_LIST))
    return records


def _stats(record: Mapping[str, Any]) -> dict[str, Any]:
    return dict(record.get("ColumnStatsMetadata") or {})


def _new_file_stats(f: NewBaseFile, columns: Sequence[str],
                    column_stats: Mapping[str, rec.MetadataRecord]) -> dict[str, dict[str, Any]]:
    """Column -> the new file's ColumnStatsMetadata: the inputs' merged, with the new chunk sizes."""
    out = {}
    for column in columns:
        inputs = [_stats(column_stats[stats_key(column, f.partition, name)]) for name in f.inputs]
        merged = _merge(inputs, java_order=False)
        compressed, uncompressed = f.column_sizes.get(column, (0, 0))
        merged.update(fileName=f.name, totalSize=compressed, totalUncompressedSize=uncompressed, isTightBound=False)
        out[column] = merged
    return out


def _partition_stats(
    by_partition: Mapping[str, Sequence[NewBaseFile]], new_stats: Mapping[str, Mapping[str, dict[str, Any]]],
    columns: Sequence[str], column_stats: Mapping[str, rec.MetadataRecord],
    latest_files: Mapping[str, Collection[str]], schema: str,
) -> dict[str, bytes]:
    out = {}
    for partition, written in by_partition.items():
        pid = partition_id(partition)
        for column in columns:
            parts = [new_stats[f.name][column] for f in written]
            for name in sorted(latest_files.get(partition, ())):
                record = column_stats.get(stats_key(column, partition, name))
                if record is not None and not _stats(record).get("isDeleted"):
                    parts.append(_stats(record))
            merged = _merge(parts, java_order=True)
            merged.update(fileName=partition, isTightBound=True)
            out[keys.name_id(column) + keys.name_id(pid)] = rec.encode_record(
                schema, {"key": "", "type": rec.PARTITION_STATS, "ColumnStatsMetadata": merged})
    return out


def _merge(parts: Sequence[Mapping[str, Any]], *, java_order: bool) -> dict[str, Any]:
    """`HoodieColumnRangeMetadata` merging: min of mins, max of maxes, counts and sizes summed.

    File-level values follow Parquet's statistics order (strings and bytes as unsigned bytes);
    partition-level ones Java's `compareTo`, as Hudi's `getColumnRangeInPartition` merges them.
    """
    first = parts[0]
    value_type = (first.get("valueType") or {}).get("typeOrdinal")
    order = _order(value_type, java_order)
    mins = [p["minValue"] for p in parts if p.get("minValue") is not None]
    maxs = [p["maxValue"] for p in parts if p.get("maxValue") is not None]
    return {
        "fileName": first.get("fileName"),
        "columnName": first.get("columnName"),
        "minValue": min(mins, key=order) if mins else None,
        "maxValue": max(maxs, key=order) if maxs else None,
        "valueCount": _sum(p.get("valueCount") for p in parts),
        "nullCount": _sum(p.get("nullCount") for p in parts),
        "totalSize": _sum(p.get("totalSize") for p in parts),
        "totalUncompressedSize": _sum(p.get("totalUncompressedSize") for p in parts),
        "isDeleted": False,
        "valueType": first.get("valueType"),
    }


def _sum(values: Iterable[int | None]) -> int:
    return sum(v for v in values if v is not None)


def _order(value_type: int | None, java_order: bool) -> Callable[[Any], Any]:
    """Sort key of a wrapped min/max value: `(record name, {"value": v})` or, for a single-record
    union, `{"value": v}`."""

    def unwrapped(wrapped: Any) -> Any:
        record = wrapped[1] if isinstance(wrapped, tuple) else wrapped
        return record["value"] if isinstance(record, Mapping) else record

    def key(wrapped: Any) -> Any:
        value = unwrapped(wrapped)
        if isinstance(value, str):
            return value.encode("utf-16-be", "surrogatepass") if java_order else value.encode("utf-8")
        if isinstance(value, bytes):
            if value_type == _DECIMAL:
                return int.from_bytes(value, "big", signed=True)  # the unscaled value, as BigInteger
            return bytes((b + 128) % 256 for b in value) if java_order else value  # ByteBuffer: signed bytes
        if isinstance(value, Decimal | bool | int | float) or value is None:
            return value
        return value  # dates and times order naturally

    return key


def _stats_record(stats: Mapping[str, Any]) -> rec.MetadataRecord:
    return {"key": "", "type": rec.COLUMN_STATS, "ColumnStatsMetadata": dict(stats)}


def _record_index_record(f: NewBaseFile, millis: int) -> rec.MetadataRecord:
    """`HoodieMetadataPayload.createRecordIndexUpdate`: a `<uuid>-<n>` file id as two signed longs
    and its index (encoding 0), any other file id as a string (encoding 1)."""
    prefix, _, index = f.file_id.rpartition("-")
    location: dict[str, Any] = {"partitionName": f.partition, "instantTime": millis, "position": None}
    try:
        bits = uuid.UUID(prefix).int
        number = int(index)
    except ValueError:
        location.update(fileIdHighBits=0, fileIdLowBits=0, fileIndex=0, fileId=f.file_id, fileIdEncoding=1)
    else:
        location.update(fileIdHighBits=_signed(bits >> 64), fileIdLowBits=_signed(bits & (2**64 - 1)),
                        fileIndex=number, fileId="", fileIdEncoding=0)
    return {"key": "", "type": rec.RECORD_INDEX, "recordIndexMetadata": location}


def _signed(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value
