"""The index partitions of a synthetic metadata table: `column_stats` and `bloom_filters`.

What Hudi 1.0 (`HoodieTableMetadataUtil.convertMetadataToColumnStatsRecords`, the bloom-filter
indexer's `convertMetadataToBloomFilterRecords`) adds for every base file a write creates:

* `column_stats`: per indexed column one type-3 record keyed `column id + partition id + file id`
  (`runner.hudi.mdt.keys`), with the Parquet footer's statistics summed over row groups
  (`ParquetUtils.readColumnStatsFromMetadata`): min and max wrapped in the record of their type
  (`StringWrapper`, `LongWrapper`, `DoubleWrapper`), `valueCount` and `nullCount`, and the column
  chunks' compressed and uncompressed sizes; `isDeleted` and `isTightBound` false.
* `bloom_filters`: one type-4 record keyed `partition id + file id` holding the file's bloom
  filter (`BloomFilter.serializeToString()` as UTF-8 bytes), its type code and the instant.

The indexed columns are the table's index definitions (`.hoodie/.index_defs/index.json`,
`column_stats.sourceFields`) on table version 8; Hudi 0.14/0.15 (version 6) keep them in the
writer's config only, so a version-6 table has no index definitions file.

Expression indexes (`ExpressionIndex`, version 8 only: Hudi 0.x has none) use the identity
expression over one column and hold the records of their index type in their own partition.

Not modelled: column stats of log files (Hudi 1.x indexes those too) and `partition_stats`.
The synthetic base files carry no bloom filter footer; the record holds the filter Hudi's writer
would have put there (`runner.hudi.bloom`, over the file's record keys).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from runner.hudi import bloom
from runner.hudi.mdt import keys
from runner.hudi.mdt import records as rec

COLUMN_STATS = "column_stats"
BLOOM_FILTERS = "bloom_filters"
INDEXES = (COLUMN_STATS, BLOOM_FILTERS)
INDEX_DEFS_PATH = ".hoodie/.index_defs/index.json"
# File groups per index partition (`hoodie.metadata.index.*.file.group.count`); two, so that the
# runner's shard choice is exercised.
FILE_GROUPS = {COLUMN_STATS: ("col-stats-0000-0", "col-stats-0001-0"),
               BLOOM_FILTERS: ("bloom-filters-0000-0", "bloom-filters-0001-0")}
_NAMESPACE = "org.apache.hudi.avro.model"
# HoodieMetadata.avsc's min/max union, in its order (the branch index is part of the encoding).
_WRAPPERS = (
    ("BooleanWrapper", "boolean"), ("IntWrapper", "int"), ("LongWrapper", "long"), ("FloatWrapper", "float"),
    ("DoubleWrapper", "double"), ("BytesWrapper", "bytes"), ("StringWrapper", "string"),
)
_WRAPPER_OF = {pa.int64(): "LongWrapper", pa.float64(): "DoubleWrapper", pa.string(): "StringWrapper"}


def index_payload_fields() -> list[dict[str, Any]]:
    """The `BloomFilterMetadata` and `ColumnStatsMetadata` fields of `HoodieMetadataRecord`."""
    bloom_filter = {
        "type": "record", "name": "HoodieMetadataBloomFilter",
        "fields": [{"name": "type", "type": "string"}, {"name": "timestamp", "type": "string"},
                   {"name": "bloomFilter", "type": "bytes"}, {"name": "isDeleted", "type": "boolean"}],
    }
    # The max union names the wrapper records the min union defined.
    wrappers: list[object] = ["null"]
    wrappers += [{"type": "record", "name": n, "fields": [{"name": "value", "type": kind}]} for n, kind in _WRAPPERS]
    wrapper_names: list[object] = ["null", *(n for n, _ in _WRAPPERS)]
    optional_long = ["null", "long"]
    column_stats = {
        "type": "record", "name": "HoodieMetadataColumnStats",
        "fields": [
            {"name": "fileName", "type": ["null", "string"], "default": None},
            {"name": "columnName", "type": ["null", "string"], "default": None},
            {"name": "minValue", "type": wrappers, "default": None},
            {"name": "maxValue", "type": wrapper_names, "default": None},
            *({"name": n, "type": optional_long, "default": None}
              for n in ("valueCount", "nullCount", "totalSize", "totalUncompressedSize")),
            {"name": "isDeleted", "type": "boolean"},
            {"name": "isTightBound", "type": "boolean", "default": False},
        ],
    }
    return [
        {"name": "BloomFilterMetadata", "type": ["null", bloom_filter], "default": None},
        {"name": "ColumnStatsMetadata", "type": ["null", column_stats], "default": None},
    ]


@dataclass(frozen=True, slots=True)
class ExpressionIndex:
    """An expression index (Hudi 1.x `CREATE INDEX ... USING column_stats|bloom_filters`) over one
    column with the identity expression: its records are those of that index type, in the
    partition `name` (`expr_index_<index name>`), file group `expr-index-<index name>-0000-0`."""

    name: str
    index_type: str
    column: str

    @property
    def file_group(self) -> str:
        return f"{self.name.replace('_', '-')}-0000-0"  # getFileIDForFileGroup: `_` -> `-`, shard, `-0`


def index_definitions(columns: Sequence[str] | None, expressions: Sequence[ExpressionIndex] = ()) -> bytes:
    """`.hoodie/.index_defs/index.json` with the column_stats index over `columns` (if given) and the
    expression indexes (Hudi 1.0's shape)."""
    definitions: dict[str, dict[str, object]] = {}
    if columns is not None:
        definitions[COLUMN_STATS] = {"indexName": COLUMN_STATS, "indexType": COLUMN_STATS,
                                     "indexFunction": COLUMN_STATS, "sourceFields": list(columns), "indexOptions": {}}
    for e in expressions:
        definitions[e.name] = {"indexName": e.name, "indexType": e.index_type, "indexFunction": "identity",
                               "sourceFields": [e.column], "indexOptions": {}}
    return json.dumps({"indexDefinitions": definitions}, indent=2).encode()


def expression_records(data: bytes, *, partition: str, file_name: str, instant: str, index: ExpressionIndex,
                       schema: str) -> dict[str, bytes]:
    """Key -> encoded record of one base file in an identity expression index: the column's stats,
    or the bloom filter of its values as strings."""
    pid = partition or rec.NON_PARTITIONED_NAME
    parquet = pq.ParquetFile(pa.BufferReader(data))
    if index.index_type == COLUMN_STATS:
        return {
            keys.column_stats_key(column, pid, file_name): rec.encode_record(
                schema, {"key": "", "type": rec.COLUMN_STATS, "ColumnStatsMetadata": stats})
            for column, stats in footer_column_stats(parquet, file_name, [index.column]).items()
        }
    values = parquet.read(columns=[index.column]).column(0).combine_chunks().cast(pa.string())
    return {keys.bloom_filter_key(pid, file_name): rec.encode_record(
        schema, rec.bloom_filter_record(bloom.TYPE_CODE, instant, bloom.serialize(values).encode("utf-8")))}


def base_file_records(
    data: bytes, *, partition: str, file_name: str, instant: str, indexes: Sequence[str], columns: Sequence[str],
    schema: str, version: int = 8,
) -> dict[str, dict[str, bytes]]:
    """MDT partition -> key -> encoded record, for one base file a write added.

    A non-partitioned table's root is `.` in the keys, except in those Hudi 0.x's commits write
    (`version` 6), which hash the write stat's partition path as it is, "".
    """
    pid = partition or rec.NON_PARTITIONED_NAME
    stats_pid = partition if version < 8 else pid
    out: dict[str, dict[str, bytes]] = {}
    parquet = pq.ParquetFile(pa.BufferReader(data))
    if COLUMN_STATS in indexes:
        out[COLUMN_STATS] = {
            keys.column_stats_key(column, stats_pid, file_name): rec.encode_record(
                schema, {"key": "", "type": rec.COLUMN_STATS, "ColumnStatsMetadata": stats})
            for column, stats in footer_column_stats(parquet, file_name, columns).items()
        }
    if BLOOM_FILTERS in indexes:
        record_keys = parquet.read(columns=["_hoodie_record_key"]).column(0).combine_chunks()
        serialized = bloom.serialize(record_keys).encode("utf-8")
        out[BLOOM_FILTERS] = {
            keys.bloom_filter_key(stats_pid, file_name): rec.encode_record(
                schema, rec.bloom_filter_record(bloom.TYPE_CODE, instant, serialized))
        }
    return out


def footer_column_stats(parquet: pq.ParquetFile, file_name: str, columns: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Column -> `HoodieMetadataColumnStats` from a Parquet footer, as Hudi reads it for a new file."""
    meta = parquet.metadata
    arrow = parquet.schema_arrow
    out: dict[str, dict[str, Any]] = {}
    for column in columns:
        index = arrow.get_field_index(column)
        wrapper = f"{_NAMESPACE}.{_WRAPPER_OF[arrow.field(index).type]}"
        lows: list[Any] = []
        highs: list[Any] = []
        values = nulls = compressed = uncompressed = 0
        for g in range(meta.num_row_groups):
            chunk = meta.row_group(g).column(index)
            values += chunk.num_values
            compressed += chunk.total_compressed_size
            uncompressed += chunk.total_uncompressed_size
            stats = chunk.statistics
            if stats is not None:
                nulls += stats.null_count or 0
                if stats.has_min_max:
                    lows.append(stats.min)
                    highs.append(stats.max)
        # Python orders str by code point, which is Parquet's order for strings (unsigned UTF-8 bytes).
        out[column] = {
            "fileName": file_name, "columnName": column,
            "minValue": (wrapper, {"value": min(lows)}) if lows else None,
            "maxValue": (wrapper, {"value": max(highs)}) if highs else None,
            "valueCount": values, "nullCount": nulls, "totalSize": compressed, "totalUncompressedSize": uncompressed,
            "isDeleted": False, "isTightBound": False,
        }
    return out


def merge_into(target: dict[str, dict[str, bytes]], more: Mapping[str, Mapping[str, bytes]]) -> None:
    for partition, records in more.items():
        target.setdefault(partition, {}).update(records)
