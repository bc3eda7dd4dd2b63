"""Clean plans (`T.clean.requested`) and completed cleans, as Hudi's cleaner writes them.

A clean is two-phase: the plan lists full paths of the files to delete (`HoodieCleanerPlan`, plan
version 2), then the completed instant records per partition which file names were deleted
(`HoodieCleanMetadata`, version 2). Hudi upgrades older versions on read through
`CleanPlanMigrator` / `CleanMetadataMigrator`; the decoders here do the same, so callers only ever
see version 2 content. The newest Hudi writes version 3, with the same content.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from runner.hudi.avro import write_container
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
    files = {
        partition: [{"filePath": f.file_path, "isBootstrapBaseFile": f.is_bootstrap_base_file} for f in infos]
        for partition, infos in plan.file_paths_to_delete.items()
    }
    return write_container(
        "HoodieCleanerPlan",
        {
            "earliestInstantToRetain": None if ectr is None else _instant_record(ectr),
            "lastCompletedCommitTimestamp": plan.last_completed_commit_timestamp,
            "policy": plan.policy,
            "filesToBeDeletedPerPartition": {},
            "version": plan.version,
            "filePathsToBeDeletedPerPartition": files,
            "partitionsToBeDeleted": list(plan.partitions_to_delete),
            "extraMetadata": dict(plan.extra_metadata),
        },
    )


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
    partitions = {
        partition: {
            "partitionPath": m.partition_path,
            "policy": m.policy,
            "deletePathPatterns": list(m.delete_path_patterns),
            "successDeleteFiles": list(m.success_delete_files),
            "failedDeleteFiles": list(m.failed_delete_files),
            "isPartitionDeleted": m.is_partition_deleted,
        }
        for partition, m in meta.partition_metadata.items()
    }
    return write_container(
        "HoodieCleanMetadata",
        {
            "startCleanTime": meta.start_clean_time,
            "timeTakenInMillis": meta.time_taken_ms,
            "totalFilesDeleted": meta.total_files_deleted,
            "earliestCommitToRetain": meta.earliest_commit_to_retain,
            "lastCompletedCommitTimestamp": meta.last_completed_commit_timestamp,
            "partitionMetadata": partitions,
            "version": meta.version,
            "bootstrapPartitionMetadata": {},
            "extraMetadata": dict(meta.extra_metadata),
        },
    )


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
