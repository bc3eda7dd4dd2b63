"""The clustering plan a resize records on the timeline, and how the runner knows its own plans.

A resize is scheduled the way Hudi's size-based clustering planner
(`SparkSizeBasedClusteringPlanStrategy`) schedules one: a `HoodieRequestedReplaceMetadata` with
operation type `CLUSTER` and a `HoodieClusteringPlan` holding one `HoodieClusteringGroup` per
rewrite group, whose slices name each input base file by full path, file id and partition. Each
group asks for one output file group and carries Hudi's planning metrics (`FileSliceMetricUtils`).
The execution strategy is Hudi's default, `SparkSortAndSizeExecutionStrategy`, with no strategy
parameters (Hudi records only `sort.columns`, and there is none), so a Hudi writer could also run
the plan itself.

The plan's free-form `extraMetadata` carries `runner: hudi-runner`. That marker is how the next
apply recognises a pending clustering it may finish (it wrote it, it knows what it does); a pending
clustering without it belongs to someone else and is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.errors import CorruptMetadataError
from runner.execute.paths import in_partition, partition_path
from runner.hudi.avro import read_container, write_container
from runner.hudi.files import BaseFile
from runner.hudi.metadata import (
    ClusteringGroup,
    ClusteringSlice,
    RequestedReplace,
    decode_requested_replace,
    encode_requested_replace,
)
from runner.plan.model import RewriteGroup, SizingStep

STRATEGY_CLASS = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
MARKER_KEY = "runner"
MARKER_VALUE = "hudi-runner"
# The runner's strategy (`file_sizing.strategy`), kept so a crashed resize finishes the same way.
# The plan's execution strategy stays Hudi's default, which every Hudi version can run.
STRATEGY_KEY = "runner.strategy"
_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class PlannedGroup:
    """One group to execute: a partition's input base files (relative paths) and their file ids.

    `input_bytes` is their total size as planned (from a plan read back, its `TOTAL_IO_READ_MB`,
    whole MiB; 0 when unknown): the job starts the largest groups first.
    """

    partition: str
    inputs: tuple[str, ...]
    file_ids: tuple[str, ...]
    input_bytes: int = 0


def groups_of_step(step: SizingStep) -> tuple[PlannedGroup, ...]:
    return tuple(
        PlannedGroup(g.partition, tuple(f.path for f in g.files), tuple(f.file_id for f in g.files),
                     sum(max(0, f.size) for f in g.files))
        for g in step.groups
    )


def encode_plan(step: SizingStep, *, base_uri: str) -> bytes:
    """The requested-replace file content for a sizing step, with the runner's marker.

    Args:
        step: the groups to rewrite; each becomes one clustering group with one output file group.
        base_uri: the table's base path as Hudi qualifies it (`file:/data/t`, `s3://b/t`).
    """
    request = RequestedReplace(
        operation_type="CLUSTER",
        clustering_groups=tuple(_clustering_group(g, step.max_file_size) for g in step.groups),
        strategy_class=STRATEGY_CLASS,
    )
    record = read_container(encode_requested_replace(request, base_path=base_uri), path="<new plan>")
    plan = record["clusteringPlan"]
    assert isinstance(plan, dict)
    plan["extraMetadata"] = {
        MARKER_KEY: MARKER_VALUE,
        "runner.max_file_size": str(step.max_file_size),
        "runner.small_file_limit": str(step.small_file_limit),
        STRATEGY_KEY: str(step.strategy),
    }
    return write_container("HoodieRequestedReplaceMetadata", record)


def strategy_of_plan(data: bytes, *, path: str) -> str:
    """How a runner plan asked its groups to be written: `rewrite` (also for plans that predate the
    choice) or `binary_copy`."""
    plan = read_container(data, path=path).get("clusteringPlan")
    extra = plan.get("extraMetadata") if isinstance(plan, dict) else None
    value = extra.get(STRATEGY_KEY) if isinstance(extra, Mapping) else None
    return value if isinstance(value, str) else "rewrite"


def _clustering_group(group: RewriteGroup, max_file_size: int) -> ClusteringGroup:
    slices = tuple(
        ClusteringSlice(group.partition, f.file_id, f.path.rsplit("/", 1)[-1]) for f in group.files
    )
    read_mb = float(sum(f.size for f in group.files) // _MB)
    write_mb = float(sum(f.size if f.size > 0 else max_file_size for f in group.files) // _MB)
    metrics = {
        "TOTAL_IO_READ_MB": read_mb,
        "TOTAL_IO_WRITE_MB": write_mb,
        "TOTAL_IO_MB": read_mb + write_mb,
        "TOTAL_LOG_FILES_SIZE": 0.0,
        "TOTAL_LOG_FILES": 0.0,
    }
    return ClusteringGroup(slices=slices, num_output_file_groups=1, metrics=metrics)


def is_runner_plan(data: bytes, *, path: str) -> bool:
    """Whether a requested replace/clustering file is a clustering plan this runner wrote."""
    if not data:
        return False
    record = read_container(data, path=path)
    plan = record.get("clusteringPlan")
    extra = plan.get("extraMetadata") if isinstance(plan, dict) else None
    return isinstance(extra, Mapping) and extra.get(MARKER_KEY) == MARKER_VALUE


def decode_plan(data: bytes, *, path: str) -> tuple[PlannedGroup, ...]:
    """The groups of a runner-written plan, with input paths relative to the base path.

    Raises:
        CorruptMetadataError: not a clustering plan, or a slice the runner never plans (log files,
            no base file, a group spanning partitions).
    """
    request = decode_requested_replace(data, path=path)
    if request.clustering_groups is None:
        raise CorruptMetadataError(f"Cannot decode {path}: expected a clustering plan, found none", path=path)
    groups = tuple(_planned(g, path) for g in request.clustering_groups)
    keys = [(g.partition, fid) for g in groups for fid in g.file_ids]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:  # rewriting a group twice would duplicate its rows
        raise CorruptMetadataError(f"Cannot execute {path}: file group(s) {repeated} appear more than once "
                                   "in the plan", path=path)
    return groups


def _planned(group: ClusteringGroup, path: str) -> PlannedGroup:
    slices: Sequence[ClusteringSlice] = group.slices
    partitions = {s.partition_path for s in slices}
    if not slices or len(partitions) != 1 or any(s.delta_file_names or not s.data_file_name for s in slices):
        raise CorruptMetadataError(
            f"Cannot execute {path}: a runner plan group holds base files of one partition only, "
            f"found slices {[(s.partition_path, s.data_file_name, s.delta_file_names) for s in slices]}",
            path=path,
        )
    for s in slices:
        base = BaseFile.parse(s.data_file_name or "")
        if base is None or base.file_id != s.file_id:
            raise CorruptMetadataError(f"Cannot execute {path}: {s.data_file_name!r} is not a base file "
                                       f"of file group {s.file_id}", path=path)
    # Normalised before use: the partition and names decide which files are read and deleted.
    partition = partition_path(slices[0].partition_path, what=f"partition in {path}")
    return PlannedGroup(
        partition,
        tuple(in_partition(partition, s.data_file_name or "", what=f"clustering input in {path}") for s in slices),
        tuple(s.file_id for s in slices),
        _read_bytes(group.metrics),
    )


def _read_bytes(metrics: Mapping[str, float]) -> int:
    value = metrics.get("TOTAL_IO_READ_MB")
    return int(value * _MB) if isinstance(value, (int, float)) and value > 0 else 0
