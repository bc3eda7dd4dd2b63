"""Commit metadata: what a commit, deltacommit or replacecommit wrote, per partition and file.

Completed write instants (and their inflight workload profiles) hold `HoodieCommitMetadata`, or
`HoodieReplaceCommitMetadata` for a completed replacecommit, which adds the file groups it replaced.
Table version 6 (timeline layout 1) writes them as Jackson JSON, versions 8+ (layout 2) as Avro. The
decoder tells them apart by content, because a layout 2 table can still hold layout 1 instants
written before an upgrade.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from runner.hudi.avro import is_avro_container, write_container
from runner.hudi.metadata._fields import (
    Fields,
    FrozenMap,
    avro_fields,
    basename,
    freeze,
    frozen_lists,
    json_fields,
)

NULL_COMMIT = "null"  # HoodieWriteStat.NULL_COMMIT: the prevCommit of a file group's first file


@dataclass(frozen=True, slots=True)
class WriteStat:
    """What one write task did to one file (`HoodieWriteStat`).

    Args:
        partition_path: relative partition path, `""` for a non-partitioned table.
        file_id: the file group written (`""` in inflight workload profiles).
        path: the written file relative to the base path: a base file, or for a merge-on-read
            append the log file; None in inflight workload profiles.
        prev_commit: base instant of the slice this write merged into or appended to; None for a
            file group's first file (Hudi writes the string "null").
        num_writes: records in the written file; Hudi sums these as "records written".
        total_write_bytes: bytes written (for a log append, the bytes appended).
        file_size_in_bytes: size of the file after the write.
        log_version, log_offset, base_file, log_files: merge-on-read appends only: the log file's
            version and starting offset, the slice's base file name (None if log-only) and the log
            file names (`HoodieDeltaWriteStat`).
        prev_base_file: compaction and merges on v8+: the base file that was rewritten.
        total_log_*, total_*_compacted: compaction and log-scan counters.
    """

    partition_path: str
    file_id: str
    path: str | None
    prev_commit: str | None
    num_writes: int = 0
    num_inserts: int = 0
    num_update_writes: int = 0
    num_deletes: int = 0
    total_write_bytes: int = 0
    file_size_in_bytes: int = 0
    total_write_errors: int = 0
    total_log_records: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_blocks: int = 0
    total_rollback_blocks: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    log_version: int | None = None
    log_offset: int | None = None
    base_file: str | None = None
    log_files: tuple[str, ...] = ()
    prev_base_file: str | None = None

    def __post_init__(self) -> None:
        freeze(self, "log_files", tuple(self.log_files))

    @property
    def file_name(self) -> str | None:
        """The written file's name, without its partition folder."""
        return None if self.path is None else basename(self.path)


@dataclass(frozen=True, slots=True)
class CommitMetadata:
    """`HoodieCommitMetadata` / `HoodieReplaceCommitMetadata` of one write instant.

    Args:
        operation_type: Hudi's `WriteOperationType` name (UPSERT, BULK_INSERT, INSERT_OVERWRITE,
            CLUSTER, COMPACT, ...); None when the writer recorded none.
        partition_to_write_stats: write stats per relative partition path.
        partition_to_replace_file_ids: file groups a replacecommit replaced, per partition.
        extra_metadata: free-form strings; `schema` holds the writer's Avro schema JSON, which
            readers (hudi-rs too) take the table schema from.
        compacted: True for the commit that completes a compaction.
        is_replace: the record is a `HoodieReplaceCommitMetadata`. Hudi 1.x reads a completed
            replacecommit only under that record name, so this follows the instant's action: set it
            for a completed replacecommit even when it replaced nothing.
    """

    operation_type: str | None
    partition_to_write_stats: Mapping[str, tuple[WriteStat, ...]]
    partition_to_replace_file_ids: Mapping[str, tuple[str, ...]] = field(default_factory=FrozenMap)
    extra_metadata: Mapping[str, str] = field(default_factory=FrozenMap)
    compacted: bool = False
    is_replace: bool = False

    def __post_init__(self) -> None:
        freeze(self, "partition_to_write_stats", frozen_lists(self.partition_to_write_stats))
        freeze(self, "partition_to_replace_file_ids", frozen_lists(self.partition_to_replace_file_ids))
        freeze(self, "extra_metadata", FrozenMap(self.extra_metadata))
        if any(self.partition_to_replace_file_ids.values()) and not self.is_replace:
            raise ValueError(
                "replaced file ids need is_replace=True: only a replacecommit replaces file groups"
            )

    @property
    def write_stats(self) -> tuple[WriteStat, ...]:
        """Every write stat, partition by partition."""
        return tuple(stat for stats in self.partition_to_write_stats.values() for stat in stats)

    @property
    def total_bytes_written(self) -> int:
        """Σ totalWriteBytes, Hudi's `fetchTotalBytesWritten` (used to estimate bytes per record)."""
        return sum(stat.total_write_bytes for stat in self.write_stats)

    @property
    def total_records_written(self) -> int:
        """Σ numWrites, Hudi's `fetchTotalRecordsWritten`."""
        return sum(stat.num_writes for stat in self.write_stats)

    @property
    def partitions(self) -> tuple[str, ...]:
        """Partitions the instant touched, written to or with replaced file groups, sorted."""
        return tuple(sorted(set(self.partition_to_write_stats) | set(self.partition_to_replace_file_ids)))


_EXPECTED = "commit metadata: Jackson JSON (table version 6) or an Avro object container file (versions 8+)"

# (WriteStat field, Hudi name) of the integer counters, in the order Hudi's JSON lists them.
_COUNTERS = (
    ("num_writes", "numWrites"),
    ("num_deletes", "numDeletes"),
    ("num_update_writes", "numUpdateWrites"),
    ("num_inserts", "numInserts"),
    ("total_write_bytes", "totalWriteBytes"),
    ("total_write_errors", "totalWriteErrors"),
    ("total_log_records", "totalLogRecords"),
    ("total_log_files_compacted", "totalLogFilesCompacted"),
    ("total_log_size_compacted", "totalLogSizeCompacted"),
    ("total_updated_records_compacted", "totalUpdatedRecordsCompacted"),
    ("total_log_blocks", "totalLogBlocks"),
    ("total_corrupt_log_blocks", "totalCorruptLogBlock"),
    ("total_rollback_blocks", "totalRollbackBlocks"),
    ("file_size_in_bytes", "fileSizeInBytes"),
)


def decode_commit_metadata(data: bytes, *, path: str) -> CommitMetadata:
    """Decode commit metadata of any supported table version: Avro if it starts with `Obj\\x01`, else JSON.

    Args:
        data: the instant file's bytes (a completed or inflight commit, deltacommit or replacecommit).
        path: the file, for error messages.

    Raises:
        CorruptMetadataError: empty, invalid JSON, truncated Avro, or a field of the wrong type.
    """
    if is_avro_container(data):
        record = avro_fields(data, path=path, what="commit metadata")
    else:
        record = json_fields(data, path=path, expected=_EXPECTED, what="commit metadata")
    stats = {
        partition: tuple(_write_stat(stat, partition) for stat in items)
        for partition, items in record.record_lists("partitionToWriteStats")
    }
    return CommitMetadata(
        operation_type=record.opt_text("operationType"),
        partition_to_write_stats=stats,
        partition_to_replace_file_ids=record.text_lists("partitionToReplaceFileIds"),
        extra_metadata=record.text_map("extraMetadata"),
        compacted=record.flag("compacted"),
        is_replace="partitionToReplaceFileIds" in record.keys,
    )


def _write_stat(f: Fields, partition: str) -> WriteStat:
    prev = f.opt_text("prevCommit")
    counters = {name: f.number(key) for name, key in _COUNTERS}
    return WriteStat(
        partition_path=f.opt_text("partitionPath") or partition,  # inflight profiles leave it null
        file_id=f.opt_text("fileId") or "",
        path=f.opt_text("path"),
        prev_commit=None if prev in (None, NULL_COMMIT) else prev,
        log_version=f.opt_number("logVersion"),
        log_offset=f.opt_number("logOffset"),
        base_file=f.opt_text("baseFile") or None,
        log_files=f.texts("logFiles"),
        prev_base_file=f.opt_text("prevBaseFile") or None,
        **counters,
    )


def encode_commit_metadata(meta: CommitMetadata, *, layout: int) -> bytes:
    """Encode commit metadata for a timeline layout: 1 → Hudi 0.14's JSON, 2 → Hudi 1.x's Avro.

    Layout 1 writes the full `HoodieWriteStat` field set, plus `HoodieDeltaWriteStat`'s log fields
    for log appends, so Jackson and hudi-rs read it; a replacecommit adds `partitionToReplaceFileIds`.
    Layout 2 writes a `HoodieCommitMetadata` or, with `is_replace`, a `HoodieReplaceCommitMetadata`.
    Both keep every `WriteStat` field, so decoding gives back the same value.

    Raises:
        ValueError: a layout other than 1 or 2.
    """
    if layout not in (1, 2):
        raise ValueError(f"timeline layout must be 1 (table version 6) or 2 (versions 8+), got {layout}")
    to_record = _stat_json if layout == 1 else _stat_avro
    record: dict[str, object] = {
        "partitionToWriteStats": {
            partition: [to_record(stat) for stat in stats]
            for partition, stats in meta.partition_to_write_stats.items()
        },
        "compacted": meta.compacted,
        "extraMetadata": dict(meta.extra_metadata),
    }
    if layout == 2:
        record["version"] = 1
    record["operationType"] = meta.operation_type
    if meta.is_replace:
        record["partitionToReplaceFileIds"] = {
            p: list(ids) for p, ids in meta.partition_to_replace_file_ids.items()
        }
    if layout == 1:
        return json.dumps(record, indent=2, ensure_ascii=False).encode("utf-8")
    return write_container(
        "HoodieReplaceCommitMetadata" if meta.is_replace else "HoodieCommitMetadata", record
    )


def _stat_json(s: WriteStat) -> dict[str, object]:
    counters = {key: getattr(s, name) for name, key in _COUNTERS}
    head = ("numWrites", "numDeletes", "numUpdateWrites", "numInserts", "totalWriteBytes", "totalWriteErrors")
    out: dict[str, object] = {"fileId": s.file_id, "path": s.path, "cdcStats": None}
    out["prevCommit"] = s.prev_commit or NULL_COMMIT
    out |= {key: counters[key] for key in head}
    out |= {"tempPath": None, "partitionPath": s.partition_path}
    out |= {key: value for key, value in counters.items() if key not in out}
    out |= {"minEventTime": None, "maxEventTime": None, "runtimeStats": None}
    if s.prev_base_file is not None:  # a Hudi 1.x field; 0.14's Jackson reader ignores it
        out["prevBaseFile"] = s.prev_base_file
    if s.log_files or s.base_file is not None or s.log_version is not None or s.log_offset is not None:
        out |= {
            "logVersion": s.log_version,
            "logOffset": s.log_offset,
            "baseFile": s.base_file or "",
            "logFiles": list(s.log_files),
        }
    return out


def _stat_avro(s: WriteStat) -> dict[str, object]:
    out: dict[str, object] = {key: getattr(s, name) for name, key in _COUNTERS}
    out |= {"fileId": s.file_id, "path": s.path, "prevCommit": s.prev_commit or NULL_COMMIT}
    out |= {"partitionPath": s.partition_path, "logVersion": s.log_version, "logOffset": s.log_offset}
    out |= {"baseFile": s.base_file, "prevBaseFile": s.prev_base_file}
    out["logFiles"] = list(s.log_files) if s.log_files else None
    return out
