"""Timeline file contents, decoded into snake_case values and encoded back the way Hudi writes them.

Hudi's camelCase field names appear only in this package and in `runner.hudi.avro`. Every mapping in
these values is a `FrozenMap`, so they are immutable and hashable. Modules: `commit` (commit
metadata, JSON or Avro), `clean` (clean plans and results), `plans` (compaction and clustering
plans), `history` (savepoints and rollbacks).
"""

from runner.hudi.metadata._fields import FrozenMap
from runner.hudi.metadata.clean import (
    ActionInstant,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    CleanPlan,
    LazyPartitions,
    decode_clean_metadata,
    decode_clean_plan,
    decode_clean_summary,
    encode_clean_metadata,
    encode_clean_plan,
)
from runner.hudi.metadata.commit import (
    NULL_COMMIT,
    CommitMetadata,
    WriteStat,
    decode_commit_metadata,
    encode_commit_metadata,
)
from runner.hudi.metadata.history import (
    RollbackMetadata,
    RollbackPlan,
    SavepointMetadata,
    decode_rollback_metadata,
    decode_rollback_plan,
    decode_savepoint_metadata,
    encode_savepoint_metadata,
)
from runner.hudi.metadata.plans import (
    CLUSTER,
    ClusteringGroup,
    ClusteringSlice,
    CompactionOperation,
    RequestedReplace,
    decode_compaction_plan,
    decode_requested_replace,
    encode_requested_replace,
)

__all__ = [
    "CLUSTER",
    "NULL_COMMIT",
    "ActionInstant",
    "CleanFileInfo",
    "CleanMetadata",
    "CleanPartitionMetadata",
    "CleanPlan",
    "ClusteringGroup",
    "ClusteringSlice",
    "CommitMetadata",
    "CompactionOperation",
    "FrozenMap",
    "LazyPartitions",
    "RequestedReplace",
    "RollbackMetadata",
    "RollbackPlan",
    "SavepointMetadata",
    "WriteStat",
    "decode_clean_metadata",
    "decode_clean_plan",
    "decode_clean_summary",
    "decode_commit_metadata",
    "decode_compaction_plan",
    "decode_requested_replace",
    "decode_rollback_metadata",
    "decode_rollback_plan",
    "decode_savepoint_metadata",
    "encode_clean_metadata",
    "encode_clean_plan",
    "encode_commit_metadata",
    "encode_requested_replace",
    "encode_savepoint_metadata",
]
