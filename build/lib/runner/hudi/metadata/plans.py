"""Pending table services: compaction and clustering plans, whose file groups must not be touched.

`T.compaction.requested` and `T.logcompaction.requested` hold a `HoodieCompactionPlan`;
`T.replacecommit.requested` and (tables v8+) `T.clustering.requested` hold a
`HoodieRequestedReplaceMetadata`, which carries a clustering plan exactly when its operation type is
`CLUSTER` (Hudi's `ClusteringUtils.getClusteringPlan`). Plans name files by path or by name depending
on the release; the decoded values keep file names only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runner.errors import CorruptMetadataError
from runner.hudi.avro import write_container
from runner.hudi.metadata._fields import Fields, FrozenMap, avro_fields, basename, file_name, freeze, join

CLUSTER = "CLUSTER"  # WriteOperationType.CLUSTER


@dataclass(frozen=True, slots=True)
class CompactionOperation:
    """One file slice a (log) compaction plan merges (`HoodieCompactionOperation`).

    Args:
        partition_path: relative partition path.
        file_id: the file group.
        base_instant_time: base instant of the slice being compacted.
        data_file_name: its base file name; None for a log-only slice.
        delta_file_names: its log file names (plan version 1 stored paths; only names are kept).
    """

    partition_path: str
    file_id: str
    base_instant_time: str
    data_file_name: str | None
    delta_file_names: tuple[str, ...]

    def __post_init__(self) -> None:
        freeze(self, "delta_file_names", tuple(self.delta_file_names))


def decode_compaction_plan(data: bytes, *, path: str) -> tuple[CompactionOperation, ...]:
    """Decode `T.compaction.requested` or `T.logcompaction.requested` into its operations.

    Raises:
        CorruptMetadataError: not a compaction plan Avro file (an empty file included: Hudi always
            writes the plan, and without it nobody can tell which slices it protects).
    """
    plan = avro_fields(data, path=path, what="compaction plan")
    return tuple(
        CompactionOperation(
            partition_path=op.opt_text("partitionPath") or "",
            file_id=op.text("fileId"),
            base_instant_time=op.text("baseInstantTime"),
            data_file_name=file_name(op.opt_text("dataFilePath")),
            delta_file_names=tuple(basename(p) for p in op.texts("deltaFilePaths")),
        )
        for op in plan.records("operations")
    )


@dataclass(frozen=True, slots=True)
class ClusteringSlice:
    """One input file slice of a clustering group (`HoodieSliceInfo`), by file names."""

    partition_path: str
    file_id: str
    data_file_name: str | None
    delta_file_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        freeze(self, "delta_file_names", tuple(self.delta_file_names))


@dataclass(frozen=True, slots=True)
class ClusteringGroup:
    """Slices rewritten together into `num_output_file_groups` new file groups (`HoodieClusteringGroup`).

    Args:
        slices: the input slices, usually of one partition.
        num_output_file_groups: how many file groups the group is rewritten into.
        metrics: Hudi's planning metrics (`TOTAL_IO_MB`, `TOTAL_LOG_FILES`, ...).
    """

    slices: tuple[ClusteringSlice, ...]
    num_output_file_groups: int = 1
    metrics: Mapping[str, float] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        freeze(self, "slices", tuple(self.slices))
        freeze(self, "metrics", FrozenMap(self.metrics))


@dataclass(frozen=True, slots=True)
class RequestedReplace:
    """`HoodieRequestedReplaceMetadata`: a pending replacecommit or (v8+) clustering instant.

    insert_overwrite and delete_partition write an all-null record, or in some releases an empty
    file; only operation type `CLUSTER` carries a plan.

    Args:
        operation_type: `CLUSTER`, another write operation, or None.
        clustering_groups: the plan's input groups; None when there is no plan.
        strategy_class: the execution strategy class (`hoodie.clustering.execution.strategy.class`).
        strategy_params: its parameters.
    """

    operation_type: str | None
    clustering_groups: tuple[ClusteringGroup, ...] | None
    strategy_class: str | None = None
    strategy_params: Mapping[str, str] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        if self.clustering_groups is not None:
            freeze(self, "clustering_groups", tuple(self.clustering_groups))
        freeze(self, "strategy_params", FrozenMap(self.strategy_params))

    @property
    def is_clustering(self) -> bool:
        """A clustering plan is present: its input file groups must not change until it completes."""
        return self.clustering_groups is not None

    @property
    def file_groups(self) -> frozenset[tuple[str, str]]:
        """(partition path, file id) of every input slice."""
        groups = self.clustering_groups or ()
        return frozenset((s.partition_path, s.file_id) for g in groups for s in g.slices)


def decode_requested_replace(data: bytes, *, path: str) -> RequestedReplace:
    """Decode `T.replacecommit.requested` / `T.clustering.requested`.

    Empty content is accepted here, and only here: Hudi reads an empty requested replace file as
    "not clustering" (some releases write one for insert_overwrite), and so does this decoder.

    Raises:
        CorruptMetadataError: neither empty nor a requested-replace Avro file, or operation type
            CLUSTER without a plan.
    """
    if not data:
        return RequestedReplace(None, None)
    record = avro_fields(data, path=path, what="requested replace metadata")
    operation, plan = record.opt_text("operationType"), record.record("clusteringPlan")
    if operation != CLUSTER:
        return RequestedReplace(operation, None)
    if plan is None:
        raise CorruptMetadataError(
            f"Cannot decode {path}: operation type CLUSTER but no clusteringPlan", path=path
        )
    strategy = plan.record("strategy")
    return RequestedReplace(
        operation_type=operation,
        clustering_groups=tuple(_clustering_group(g) for g in plan.records("inputGroups")),
        strategy_class=strategy.opt_text("strategyClassName") if strategy else None,
        strategy_params=strategy.text_map("strategyParams") if strategy else FrozenMap(),
    )


def _clustering_group(g: Fields) -> ClusteringGroup:
    metrics = g.mapping("metrics")
    slices = (
        ClusteringSlice(
            partition_path=s.opt_text("partitionPath") or "",
            file_id=s.text("fileId"),
            data_file_name=file_name(s.opt_text("dataFilePath")),
            delta_file_names=tuple(basename(p) for p in s.texts("deltaFilePaths")),
        )
        for s in g.records("slices")
    )
    return ClusteringGroup(
        slices=tuple(slices),
        num_output_file_groups=g.number("numOutputFileGroups", default=1),
        metrics=metrics.reals() if metrics else FrozenMap(),
    )


def encode_requested_replace(request: RequestedReplace, *, base_path: str) -> bytes:
    """Encode a requested replace as Hudi's clustering scheduler does.

    A clustering request writes operation type CLUSTER and a `HoodieClusteringPlan` whose slices
    name the base file by full path under `base_path` (Hudi's executor opens it by that path) and
    log files by name, with `preserveHoodieMetadata` true. A request without groups writes the
    all-null form insert_overwrite uses, with just the operation type.

    Args:
        request: what to write.
        base_path: the table's base path as Hudi qualifies it (for example `file:/data/t`).
    """
    if request.clustering_groups is None:
        return write_container("HoodieRequestedReplaceMetadata", {"operationType": request.operation_type})
    strategy = {"strategyClassName": request.strategy_class, "strategyParams": dict(request.strategy_params)}
    plan = {
        "inputGroups": [_group_record(g, base_path) for g in request.clustering_groups],
        "strategy": strategy | {"version": 1},
        "extraMetadata": {},
        "version": 1,
        "preserveHoodieMetadata": True,
        "missingSchedulePartitions": [],
    }
    record = {"operationType": CLUSTER, "clusteringPlan": plan, "extraMetadata": {}, "version": 1}
    return write_container("HoodieRequestedReplaceMetadata", record)


def _group_record(group: ClusteringGroup, base_path: str) -> dict[str, object]:
    slices = [
        {
            "dataFilePath": join(base_path, s.partition_path, s.data_file_name) if s.data_file_name else None,
            "deltaFilePaths": list(s.delta_file_names),
            "fileId": s.file_id,
            "partitionPath": s.partition_path,
            "bootstrapFilePath": "",
            "version": 1,
        }
        for s in group.slices
    ]
    return {
        "slices": slices,
        "metrics": dict(group.metrics),
        "numOutputFileGroups": group.num_output_file_groups,
        "extraMetadata": None,
        "version": 1,
    }
