"""On-disk formats of a synthetic Hudi table that the runner's own codecs do not write.

`hoodie.properties` as Hudi 0.14 (table version 6) or 1.0 (version 8) writes it for a table without
a metadata table, `.hoodie_partition_metadata`, deterministic file ids and write tokens, the
MERGE_ON_READ log block format, and the compaction plan (`runner.hudi.metadata` only decodes
compaction plans; the runner never schedules one). Commit metadata, savepoints and requested
replacecommits are encoded by `runner.hudi.metadata`.
"""

from __future__ import annotations

import io
import struct
import uuid
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import fastavro

from runner.hudi.properties import format_properties
from runner.vocabulary import TableType

_V8_MERGE_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"  # Hudi 1.x EVENT_TIME_ORDERING merger id
_ID_NAMESPACE = uuid.UUID("5b0c1a7e-3f1d-4c63-9a57-6d1e2f3a4b5c")

_LOG_MAGIC = b"#HUDI#"
_LOG_FORMAT_VERSION = 1
_PARQUET_DATA_BLOCK = 5  # HoodieLogBlockType ordinal
_HEADER_INSTANT_TIME, _HEADER_SCHEMA = 0, 2  # HeaderMetadataType ordinals


def table_properties(
    *,
    name: str,
    table_type: TableType,
    version: int,
    record_key: str,
    partition_field: str | None,
    ordering_field: str,
    hive_style: bool,
    create_schema: str,
) -> dict[str, str]:
    """The `hoodie.properties` keys Hudi writes when it creates a table without a metadata table.

    Version 6 names the key generator by class (`hoodie.table.keygenerator.class`), version 8 by
    type; version 8 also records its initial version, timeline folders and record merge mode.
    `hoodie.table.checksum` is CRC32 of `<database>.<table>`, which Hudi checks on load.
    """
    props = {
        "hoodie.table.name": name,
        "hoodie.table.type": table_type,
        "hoodie.table.version": str(version),
        "hoodie.timeline.layout.version": "1" if version == 6 else "2",
        "hoodie.table.recordkey.fields": record_key,
        "hoodie.table.precombine.field": ordering_field,
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.archivelog.folder": "archived",
        "hoodie.populate.meta.fields": "true",
        "hoodie.datasource.write.hive_style_partitioning": str(hive_style).lower(),
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.database.name": "default",
        "hoodie.table.create.schema": create_schema,
    }
    if partition_field:
        props["hoodie.table.partition.fields"] = partition_field
    if version == 6:
        keygen = "SimpleKeyGenerator" if partition_field else "NonpartitionedKeyGenerator"
        props["hoodie.table.keygenerator.class"] = f"org.apache.hudi.keygen.{keygen}"
        if table_type is TableType.MERGE_ON_READ:
            payload = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
            props["hoodie.compaction.payload.class"] = payload
    else:
        props |= {
            "hoodie.table.initial.version": str(version),
            "hoodie.table.keygenerator.type": "SIMPLE" if partition_field else "NON_PARTITION",
            "hoodie.timeline.path": "timeline",
            "hoodie.timeline.history.path": "history",
            "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
            "hoodie.record.merge.strategy.id": _V8_MERGE_STRATEGY,
            "hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
        }
    props["hoodie.table.checksum"] = str(zlib.crc32(f"default.{name}".encode()))
    return props


def properties_text(props: Mapping[str, str], *, comment: str) -> bytes:
    """A Java properties file with one leading comment line, ISO-8859-1 encoded as Hudi reads it."""
    return (f"#{comment}\n" + format_properties(props)).encode("latin-1")


def partition_metadata(partition: str, commit_time: str) -> bytes:
    """`.hoodie_partition_metadata`: the instant that created the partition and its folder depth."""
    depth = partition.count("/") + 1 if partition else 0
    props = {"commitTime": commit_time, "partitionDepth": str(depth)}
    return properties_text(props, comment="partition metadata")


def file_id(table: str, seed: int, ordinal: int) -> str:
    """A deterministic file id: a UUID (v5 of table, seed and ordinal) plus Hudi's `-0` suffix."""
    return f"{uuid.uuid5(_ID_NAMESPACE, f'{table}/{seed}/{ordinal}')}-0"


def bucket_file_id(bucket: int, file_id: str) -> str:
    """`file_id` renamed as Hudi's bucket index names a bucket's file group: its first 8 characters
    replaced by the zero-padded bucket number (`BucketIdentifier.newBucketFileIdPrefix`)."""
    return f"{bucket:08d}{file_id[8:]}"


def parquet_log_block(*, instant: str, schema_json: str, parquet: bytes) -> bytes:
    """A Hudi log file holding one Parquet data block.

    Layout (`HoodieLogFormatWriter`): magic `#HUDI#`, block size (long, every byte after it),
    log format version (int), block type (int), header, content length (long), content, footer,
    and the block's total length (long, every byte before it). Header and footer are maps
    written as a count (int) then `(key ordinal int, value length int, UTF-8 value)` entries.
    The header carries the writing instant, which readers use to skip blocks of uncommitted
    instants, and the Avro schema of the records.
    """
    header = _log_metadata({_HEADER_INSTANT_TIME: instant, _HEADER_SCHEMA: schema_json})
    body = (
        struct.pack(">ii", _LOG_FORMAT_VERSION, _PARQUET_DATA_BLOCK)
        + header
        + struct.pack(">q", len(parquet))
        + parquet
        + _log_metadata({})
    )
    block = _LOG_MAGIC + struct.pack(">q", len(body) + 8) + body
    return block + struct.pack(">q", len(block))


def _log_metadata(entries: Mapping[int, str]) -> bytes:
    out = [struct.pack(">i", len(entries))]
    for key, value in entries.items():
        data = value.encode()
        out.append(struct.pack(">ii", key, len(data)) + data)
    return b"".join(out)


def hive_field(partitions: Sequence[str]) -> str | None:
    """The partition field named by hive-style `field=value` partition paths; None without partitions."""
    if not partitions:
        return None
    fields = {p.rsplit("/", 1)[-1].split("=", 1)[0] for p in partitions if "=" in p}
    if len(fields) != 1 or not is_hive_style(partitions):
        raise ValueError(
            f"pass partition_field: cannot derive one field from partitions {list(partitions)[:3]}"
        )
    return fields.pop()


def is_hive_style(partitions: Sequence[str]) -> bool:
    """Partition folders are `field=value` (`hoodie.datasource.write.hive_style_partitioning`)."""
    return bool(partitions) and all("=" in p for p in partitions if p)


# Hudi's HoodieCompactionPlan.avsc, without the fields added after plan version 2 (`strategy`,
# `preserveHoodieMetadata`, `missingSchedulePartitions`): readers fill them from their defaults.
_COMPACTION_PLAN_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "HoodieCompactionPlan",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "operations", "default": None, "type": ["null", {"type": "array", "items": {
            "type": "record",
            "name": "HoodieCompactionOperation",
            "fields": [
                {"name": "baseInstantTime", "type": ["null", "string"]},
                {"name": "deltaFilePaths", "type": ["null", {"type": "array", "items": "string"}],
                 "default": None},
                {"name": "dataFilePath", "type": ["null", "string"], "default": None},
                {"name": "fileId", "type": ["null", "string"]},
                {"name": "partitionPath", "type": ["null", "string"], "default": None},
                {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}], "default": None},
                {"name": "bootstrapFilePath", "type": ["null", "string"], "default": None},
            ],
        }}]},
        {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
})


def compaction_plan(operations: Sequence[Mapping[str, Any]]) -> bytes:
    """`<t>.compaction.requested`: a `HoodieCompactionPlan` (plan version 2, which names files by
    name, not path), one operation per file slice, as an Avro container with one record."""
    buffer = io.BytesIO()
    record = {"operations": list(operations), "extraMetadata": None, "version": 2}
    fastavro.writer(buffer, _COMPACTION_PLAN_SCHEMA, [record], codec="null")
    return buffer.getvalue()
