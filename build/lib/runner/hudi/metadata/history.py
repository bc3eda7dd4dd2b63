"""Savepoints and rollbacks: instants that pin or undo what other instants wrote.

A completed `savepoint` of instant T (`HoodieSavepointMetadata`) lists, per partition, the file names
of the latest slices as of T; the cleaner must keep them. A completed `rollback`
(`HoodieRollbackMetadata`) records which writes were undone and which files it deleted; its
`T.rollback.requested` (`HoodieRollbackPlan`) names the instant being rolled back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runner.errors import CorruptMetadataError
from runner.hudi.avro import write_container
from runner.hudi.metadata._fields import FrozenMap, avro_fields, freeze, frozen_lists


@dataclass(frozen=True, slots=True)
class SavepointMetadata:
    """`HoodieSavepointMetadata`, the content of a completed savepoint.

    Args:
        savepointed_by: user name.
        savepointed_at_ms: epoch milliseconds when the savepoint was taken.
        comments: free text.
        partition_files: per partition, the file names of the latest slices as of the savepointed
            instant (base files, and in newer releases log files too).
        extra_metadata: free-form strings (newest Hudi only; older releases ignore the field).
    """

    savepointed_by: str
    savepointed_at_ms: int
    comments: str
    partition_files: Mapping[str, tuple[str, ...]]
    extra_metadata: Mapping[str, str] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        freeze(self, "partition_files", frozen_lists(self.partition_files))
        freeze(self, "extra_metadata", FrozenMap(self.extra_metadata))


def encode_savepoint_metadata(meta: SavepointMetadata) -> bytes:
    """Encode a completed savepoint as Hudi's `TimelineMetadataUtils.convertSavepointMetadata` does."""
    partitions = {
        p: {"partitionPath": p, "savepointDataFile": list(files)} for p, files in meta.partition_files.items()
    }
    return write_container(
        "HoodieSavepointMetadata",
        {
            "savepointedBy": meta.savepointed_by,
            "savepointedAt": meta.savepointed_at_ms,
            "comments": meta.comments,
            "partitionMetadata": partitions,
            "version": 1,
            "extraMetadata": dict(meta.extra_metadata) or None,
        },
    )


def decode_savepoint_metadata(data: bytes, *, path: str) -> SavepointMetadata:
    """Decode a completed savepoint.

    Raises:
        CorruptMetadataError: not a savepoint Avro file (an empty one included: Hudi always writes
            the file list, and without it nobody can tell what the savepoint protects).
    """
    record = avro_fields(data, path=path, what="savepoint metadata")
    return SavepointMetadata(
        savepointed_by=record.opt_text("savepointedBy") or "",
        savepointed_at_ms=record.number("savepointedAt"),
        comments=record.opt_text("comments") or "",
        partition_files={p: m.texts("savepointDataFile") for p, m in record.entries("partitionMetadata")},
        extra_metadata=record.text_map("extraMetadata"),
    )


@dataclass(frozen=True, slots=True)
class RollbackMetadata:
    """`HoodieRollbackMetadata`, the content of a completed rollback.

    Args:
        commits_rolled_back: instant times of the writes undone.
        deleted_files: per partition, the files the rollback deleted, as Hudi recorded them
            (usually full paths).
    """

    commits_rolled_back: tuple[str, ...]
    deleted_files: Mapping[str, tuple[str, ...]]

    def __post_init__(self) -> None:
        freeze(self, "commits_rolled_back", tuple(self.commits_rolled_back))
        freeze(self, "deleted_files", frozen_lists(self.deleted_files))


def decode_rollback_metadata(data: bytes, *, path: str) -> RollbackMetadata:
    """Decode a completed rollback. Raises CorruptMetadataError for anything else."""
    record = avro_fields(data, path=path, what="rollback metadata")
    return RollbackMetadata(
        commits_rolled_back=record.texts("commitsRollback"),
        deleted_files={p: m.texts("successDeleteFiles") for p, m in record.entries("partitionMetadata")},
    )


@dataclass(frozen=True, slots=True)
class RollbackPlan:
    """`HoodieRollbackPlan` (`T.rollback.requested`): the instant a pending rollback undoes."""

    instant_time: str
    action: str


def decode_rollback_plan(data: bytes, *, path: str) -> RollbackPlan:
    """Decode `T.rollback.requested`.

    Raises:
        CorruptMetadataError: not a rollback plan Avro file, or no instant to roll back.
    """
    record = avro_fields(data, path=path, what="rollback plan")
    instant = record.record("instantToRollback")
    if instant is None:
        raise CorruptMetadataError(
            f"Cannot decode {path}: the rollback plan names no instantToRollback", path=path
        )
    return RollbackPlan(instant.text("commitTime"), instant.text("action"))
