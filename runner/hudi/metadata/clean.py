"""Clean plans (`T.clean.requested`) and completed cleans, as Hudi's cleaner writes them.

A clean is two-phase: the plan lists full paths of the files to delete (`HoodieCleanerPlan`, plan
version 2), then the completed instant records per partition which file names were deleted
(`HoodieCleanMetadata`, version 2). Hudi upgrades older versions on read through
`CleanPlanMigrator` / `CleanMetadataMigrator`; the decoders here do the same, so callers only ever
see version 2 content. The newest Hudi writes version 3, with the same content.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from runner.allocation import quick_init
from runner.hudi.avro import encode_long, encode_string, write_container_with
from runner.hudi.metadata._fields import (
    Fields,
    FrozenMap,
    avro_fields,
    avro_fields_without,
    basename,
    freeze,
    frozen_lists,
    join,
)


@dataclass(frozen=True, slots=True)
class ActionInstant:
    """`HoodieActionInstant`: an instant named in a clean plan (`state` is normally `COMPLETED`)."""

    timestamp: str
    action: str
    state: str


@quick_init
@dataclass(frozen=True, slots=True)
class CleanFileInfo:
    """One file a clean plan deletes: its full path, and whether it is a bootstrap source file."""

    file_path: str
    is_bootstrap_base_file: bool = False


@dataclass(frozen=True, slots=True)
class CleanPlan:
    """`HoodieCleanerPlan`, the content of `T.clean.requested` (and of `T.clean.inflight`).

    Args:
        earliest_instant_to_retain: the retention boundary (ECTR): slices needed by this or a later
            instant are kept. None for KEEP_LATEST_FILE_VERSIONS.
        last_completed_commit_timestamp: the newest completed write when planned.
        policy: `KEEP_LATEST_COMMITS`, `KEEP_LATEST_FILE_VERSIONS` or `KEEP_LATEST_BY_HOURS`.
        file_paths_to_delete: full paths per relative partition path.
        partitions_to_delete: partitions dropped entirely (after delete_partition).
        extra_metadata: Hudi records `savepointed_timestamps` here.
        version: 2, or 3 as the newest Hudi writes; version 1 plans are migrated to 2 on decoding.
    """

    earliest_instant_to_retain: ActionInstant | None
    last_completed_commit_timestamp: str
    policy: str
    file_paths_to_delete: Mapping[str, tuple[CleanFileInfo, ...]]
    partitions_to_delete: tuple[str, ...] = ()
    extra_metadata: Mapping[str, str] = field(default_factory=FrozenMap)
    version: int = 2

    def __post_init__(self) -> None:
        freeze(self, "file_paths_to_delete", frozen_lists(self.file_paths_to_delete))
        freeze(self, "partitions_to_delete", tuple(self.partitions_to_delete))
        freeze(self, "extra_metadata", FrozenMap(self.extra_metadata))


def encode_clean_plan(plan: CleanPlan) -> bytes:
    """Encode a clean plan as Hudi's planner does: the deprecated v1 field holds an empty map.

    Raises:
        ValueError: a plan version below 2 (version 1 means file names, which we never write).
    """
    if plan.version < 2:
        raise ValueError(f"clean plans are written as version 2 or later, got version {plan.version}")
    ectr = plan.earliest_instant_to_retain
    return write_container_with(
        "HoodieCleanerPlan",
        {
            "earliestInstantToRetain": None if ectr is None else _instant_record(ectr),
            "lastCompletedCommitTimestamp": plan.last_completed_commit_timestamp,
            "policy": plan.policy,
            "filesToBeDeletedPerPartition": {},
            "version": plan.version,
            "partitionsToBeDeleted": list(plan.partitions_to_delete),
            "extraMetadata": dict(plan.extra_metadata),
        },
        {"filePathsToBeDeletedPerPartition": _NON_NULL + _encoded_file_infos(plan.file_paths_to_delete)},
    )


# Avro binary pieces of the per-file lists (see `runner.hudi.avro.write_container_with`): a union's
# branch is its index as a long, so 0x00 is null and 0x02 the second branch; blocks end with 0x00.
_NON_NULL = b"\x02"
_END = b"\x00"
_FLAG = {True: b"\x02\x01", False: b"\x02\x00", None: b"\x00"}  # ["null", "boolean"]


def _encoded_file_infos(files: Mapping[str, Sequence[CleanFileInfo]]) -> bytes:
    """`map<array<HoodieCleanFileInfo>>` as fastavro encodes it: one block of entries, each array
    one block of records (filePath: ["null", "string"], isBootstrapBaseFile: ["null", "boolean"])."""
    parts = [encode_long(len(files))] if files else []
    for partition, infos in files.items():
        parts.append(encode_string(partition))
        if infos:
            parts.append(encode_long(len(infos)))
            for info in infos:
                path = info.file_path.encode("utf-8")
                parts += (_NON_NULL, _length(len(path)), path, _FLAG[info.is_bootstrap_base_file])
        parts.append(_END)
    parts.append(_END)
    return b"".join(parts)


def _encoded_strings(values: Sequence[str]) -> bytes:
    """`array<string>` as fastavro encodes it."""
    if not values:
        return _END
    parts = [encode_long(len(values))]
    for value in values:
        data = value.encode("utf-8")
        parts += (_length(len(data)), data)
    parts.append(_END)
    return b"".join(parts)


_length = functools.lru_cache(maxsize=1024)(encode_long)  # file names and paths share a few lengths


def decode_clean_plan(data: bytes, *, path: str, base_path: str) -> CleanPlan:
    """Decode a clean plan; a version 1 plan becomes version 2 as Hudi's `CleanPlanV2MigrationHandler` does.

    Version 1 listed file names per partition; they become full paths `<base_path>/<partition>/<name>`,
    and the fields version 1 lacked (partitions to delete, extra metadata) come out empty.

    Args:
        data: the `.clean.requested` (or `.clean.inflight`) bytes.
        path: the file, for error messages.
        base_path: the table's base path as Hudi qualifies it (for example `file:/data/t`).

    Raises:
        CorruptMetadataError: not a clean plan Avro file.
    """
    f = avro_fields(data, path=path, what="clean plan")
    ectr = f.record("earliestInstantToRetain")
    version = f.number("version", default=1)
    partitions: tuple[str, ...]
    if version == 1:
        files = {
            partition: tuple(CleanFileInfo(join(base_path, partition, name)) for name in names)
            for partition, names in f.text_lists("filesToBeDeletedPerPartition").items()
        }
        partitions, extra, version = (), FrozenMap[str, str](), 2
    else:
        files = {
            partition: tuple(_clean_file(info) for info in infos)
            for partition, infos in f.record_lists("filePathsToBeDeletedPerPartition")
        }
        partitions, extra = f.texts("partitionsToBeDeleted"), f.text_map("extraMetadata")
    return CleanPlan(
        earliest_instant_to_retain=None if ectr is None else _instant(ectr),
        last_completed_commit_timestamp=f.opt_text("lastCompletedCommitTimestamp") or "",
        policy=f.text("policy"),
        file_paths_to_delete=files,
        partitions_to_delete=partitions,
        extra_metadata=extra,
        version=version,
    )


def _instant_record(instant: ActionInstant) -> dict[str, object]:
    return {"timestamp": instant.timestamp, "action": instant.action, "state": instant.state}


def _instant(f: Fields) -> ActionInstant:
    return ActionInstant(f.text("timestamp"), f.text("action"), f.text("state"))


def _clean_file(f: Fields) -> CleanFileInfo:
    return CleanFileInfo(f.text("filePath"), f.flag("isBootstrapBaseFile"))


@dataclass(frozen=True, slots=True)
class CleanPartitionMetadata:
    """`HoodieCleanPartitionMetadata`: what a completed clean did in one partition, by file name."""

    partition_path: str
    policy: str
    delete_path_patterns: tuple[str, ...]
    success_delete_files: tuple[str, ...]
    failed_delete_files: tuple[str, ...]
    is_partition_deleted: bool = False

    def __post_init__(self) -> None:
        for name in ("delete_path_patterns", "success_delete_files", "failed_delete_files"):
            freeze(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True, slots=True)
class CleanMetadata:
    """`HoodieCleanMetadata`, the content of a completed clean.

    Args:
        start_clean_time: the clean's instant time.
        time_taken_ms: duration; Hudi writes -1 when unknown.
        total_files_deleted: Σ successfully deleted files.
        earliest_commit_to_retain: the plan's ECTR time, `""` when the plan had none (as on disk).
        last_completed_commit_timestamp: copied from the plan.
        partition_metadata: per relative partition path, by file name (version 1 full paths are
            reduced to names on decoding, as Hudi's `CleanMetadataV2MigrationHandler` does); a
            `LazyPartitions` when decoded by `decode_clean_summary`.
        extra_metadata: copied from the plan (`savepointed_timestamps`).
        version: 2, or 3 as the newest Hudi writes.
    """

    start_clean_time: str
    time_taken_ms: int
    total_files_deleted: int
    earliest_commit_to_retain: str
    last_completed_commit_timestamp: str
    partition_metadata: Mapping[str, CleanPartitionMetadata]
    extra_metadata: Mapping[str, str] = field(default_factory=FrozenMap)
    version: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.partition_metadata, LazyPartitions):
            freeze(self, "partition_metadata", FrozenMap(self.partition_metadata))
        freeze(self, "extra_metadata", FrozenMap(self.extra_metadata))


class LazyPartitions(Mapping[str, CleanPartitionMetadata]):
    """A completed clean's per-partition lists, decoded from the file's bytes on first access.

    They are the bulk of a clean's file (one name per deleted file, 401,000 of them after a first
    clean of a large table) and planning never reads them; `extra_metadata` and the retention
    boundary are all it needs. Equal to, and hashing like, the `FrozenMap` a full decode gives.
    """

    __slots__ = ("_decode", "_decoded", "_lock")

    def __init__(self, decode: Callable[[], Mapping[str, CleanPartitionMetadata]]) -> None:
        self._decode: Callable[[], Mapping[str, CleanPartitionMetadata]] | None = decode
        self._decoded: FrozenMap[str, CleanPartitionMetadata] | None = None
        self._lock = threading.Lock()

    def _partitions(self) -> FrozenMap[str, CleanPartitionMetadata]:
        with self._lock:  # plans of several tables run in threads; decode once
            if self._decoded is None:
                assert self._decode is not None
                self._decoded = FrozenMap(self._decode())
                self._decode = None  # drop the file's bytes
            return self._decoded

    @property
    def is_decoded(self) -> bool:
        return self._decoded is not None

    def __getitem__(self, key: str) -> CleanPartitionMetadata:
        return self._partitions()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._partitions())

    def __len__(self) -> int:
        return len(self._partitions())

    def __hash__(self) -> int:
        return hash(self._partitions())

    def __repr__(self) -> str:
        inside = repr(self._partitions()) if self.is_decoded else "<not decoded>"
        return f"LazyPartitions({inside})"


def encode_clean_metadata(meta: CleanMetadata) -> bytes:
    """Encode a completed clean as Hudi's `CleanerUtils.convertCleanMetadata` does."""
    return write_container_with(
        "HoodieCleanMetadata",
        {
            "startCleanTime": meta.start_clean_time,
            "timeTakenInMillis": meta.time_taken_ms,
            "totalFilesDeleted": meta.total_files_deleted,
            "earliestCommitToRetain": meta.earliest_commit_to_retain,
            "lastCompletedCommitTimestamp": meta.last_completed_commit_timestamp,
            "version": meta.version,
            "bootstrapPartitionMetadata": {},
            "extraMetadata": dict(meta.extra_metadata),
        },
        {"partitionMetadata": _encoded_partition_metadata(meta.partition_metadata)},
    )


def _encoded_partition_metadata(partitions: Mapping[str, CleanPartitionMetadata]) -> bytes:
    """`map<HoodieCleanPartitionMetadata>` in one block that states its byte size.

    Avro lets a block of a map or array give a negative count followed by its size in bytes, so
    that a reader may skip it without walking it; every Avro reader takes both forms (Java's
    `BinaryDecoder`, which Hudi reads instants with, fastavro, Rust's `apache-avro`). This map is
    nearly all of a clean's file (a name per deleted file), and it lies before the `extraMetadata`
    that every incremental plan reads from the last clean (`decode_clean_summary`). Skipping it
    whole instead of walking 800,000 names made that read about 0.3× (bench/README.md, "clean:
    planning"). The entries inside are encoded as fastavro encodes them."""
    parts: list[bytes] = []
    for partition, m in partitions.items():
        patterns = _encoded_strings(m.delete_path_patterns)
        # Usually every file listed was deleted: the same list, so the same bytes, encoded once.
        same = m.success_delete_files == m.delete_path_patterns
        parts += (
            encode_string(partition),
            encode_string(m.partition_path),
            encode_string(m.policy),
            patterns,
            patterns if same else _encoded_strings(m.success_delete_files),
            _encoded_strings(m.failed_delete_files),
            _FLAG[m.is_partition_deleted],
        )
    if not partitions:
        return _END
    body = b"".join(parts)
    return encode_long(-len(partitions)) + encode_long(len(body)) + body + _END


def decode_clean_metadata(data: bytes, *, path: str) -> CleanMetadata:
    """Decode a completed clean; version 1 path lists become file names and the version 2.

    Raises:
        CorruptMetadataError: not a clean metadata Avro file.
    """
    f = avro_fields(data, path=path, what="clean metadata")
    names_only = f.number("version", default=1) == 1
    partitions = {p: _clean_partition(m, names_only=names_only) for p, m in f.entries("partitionMetadata")}
    return _clean_metadata(f, partitions)


def _clean_metadata(f: Fields, partitions: Mapping[str, CleanPartitionMetadata]) -> CleanMetadata:
    return CleanMetadata(
        start_clean_time=f.text("startCleanTime"),
        time_taken_ms=f.number("timeTakenInMillis"),
        total_files_deleted=f.number("totalFilesDeleted"),
        earliest_commit_to_retain=f.opt_text("earliestCommitToRetain") or "",
        last_completed_commit_timestamp=f.opt_text("lastCompletedCommitTimestamp") or "",
        partition_metadata=partitions,
        extra_metadata=f.text_map("extraMetadata"),
        version=max(f.number("version", default=1), 2),
    )


_PARTITION_LISTS = frozenset({"partitionMetadata", "bootstrapPartitionMetadata"})


def decode_clean_summary(data: bytes, *, path: str) -> CleanMetadata:
    """`decode_clean_metadata`, with the per-partition file lists left undecoded until first read.

    The top-level fields (retention boundary, extra metadata, counts, version) are decoded and
    checked now, from the same bytes; `partition_metadata` is a `LazyPartitions` whose first access
    decodes the whole file and raises `CorruptMetadataError` then if those lists are garbled.

    Raises:
        CorruptMetadataError: not a clean metadata Avro file, or a top-level field of a wrong type.
    """
    f = avro_fields_without(data, path=path, what="clean metadata", skip=_PARTITION_LISTS)
    lists = LazyPartitions(lambda: decode_clean_metadata(data, path=path).partition_metadata)
    return _clean_metadata(f, lists)


def _clean_partition(f: Fields, *, names_only: bool) -> CleanPartitionMetadata:
    def files(key: str) -> tuple[str, ...]:
        return tuple(basename(p) for p in f.texts(key)) if names_only else f.texts(key)

    return CleanPartitionMetadata(
        partition_path=f.text("partitionPath"),
        policy=f.text("policy"),
        delete_path_patterns=files("deletePathPatterns"),
        success_delete_files=files("successDeleteFiles"),
        failed_delete_files=files("failedDeleteFiles"),
        is_partition_deleted=f.flag("isPartitionDeleted"),
    )
