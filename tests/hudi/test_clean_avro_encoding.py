"""The clean's own Avro encoders (per-file lists encoded as bytes) against fastavro's generic encoding.

`encode_clean_plan` and `encode_clean_metadata` hand the per-partition file lists to
`avro.write_container_with` already encoded. A clean plan stays byte for byte what fastavro writes
from the same record with Hudi's schema (`avro.write_container`); a completed clean differs only in
writing its lists as one map block that states its byte size (Avro's skippable form), and decodes to
the same record. The other clean tests read both back and compare them with Hudi's own files.
"""

from __future__ import annotations

import io

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.hudi import avro
from runner.hudi.metadata import (
    ActionInstant,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    CleanPlan,
    encode_clean_metadata,
    encode_clean_plan,
)

# Lengths around the one-, two- and three-byte length prefixes (64 and 8,192 bytes), and text
# whose UTF-8 is longer than its characters.
_text = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="aé€𝄞/_-.", min_size=60, max_size=70),
    st.integers(min_value=8185, max_value=8200).map(lambda n: "p" * n),
)


def _generic_plan(plan: CleanPlan) -> bytes:
    """The plan as fastavro encodes the whole record (what `encode_clean_plan` wrote before)."""
    ectr = plan.earliest_instant_to_retain
    files = {
        partition: [{"filePath": f.file_path, "isBootstrapBaseFile": f.is_bootstrap_base_file} for f in infos]
        for partition, infos in plan.file_paths_to_delete.items()
    }
    return avro.write_container("HoodieCleanerPlan", {
        "earliestInstantToRetain": None if ectr is None else {
            "timestamp": ectr.timestamp, "action": ectr.action, "state": ectr.state},
        "lastCompletedCommitTimestamp": plan.last_completed_commit_timestamp,
        "policy": plan.policy,
        "filesToBeDeletedPerPartition": {},
        "version": plan.version,
        "filePathsToBeDeletedPerPartition": files,
        "partitionsToBeDeleted": list(plan.partitions_to_delete),
        "extraMetadata": dict(plan.extra_metadata),
    })


def _generic_metadata(meta: CleanMetadata) -> bytes:
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
    return avro.write_container("HoodieCleanMetadata", {
        "startCleanTime": meta.start_clean_time,
        "timeTakenInMillis": meta.time_taken_ms,
        "totalFilesDeleted": meta.total_files_deleted,
        "earliestCommitToRetain": meta.earliest_commit_to_retain,
        "lastCompletedCommitTimestamp": meta.last_completed_commit_timestamp,
        "partitionMetadata": partitions,
        "version": meta.version,
        "bootstrapPartitionMetadata": {},
        "extraMetadata": dict(meta.extra_metadata),
    })


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(_text, st.lists(st.builds(CleanFileInfo, _text, st.booleans()), max_size=4).map(tuple),
                    max_size=4),
    st.lists(_text, max_size=3).map(tuple),
    st.none() | st.builds(ActionInstant, _text, _text, _text),
    st.dictionaries(_text, _text, max_size=2),
    st.sampled_from([2, 3]),
)
def test_clean_plan_bytes_equal_fastavros_encoding(
    files: dict[str, tuple[CleanFileInfo, ...]], partitions: tuple[str, ...], ectr: ActionInstant | None,
    extra: dict[str, str], version: int,
) -> None:
    plan = CleanPlan(ectr, "20240101000000000", "KEEP_LATEST_COMMITS", files, partitions, extra, version)
    assert encode_clean_plan(plan) == _generic_plan(plan)


_partition_metadata = st.builds(
    CleanPartitionMetadata, _text, _text,
    st.lists(_text, max_size=3).map(tuple), st.lists(_text, max_size=3).map(tuple),
    st.lists(_text, max_size=3).map(tuple), st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(_text, _partition_metadata, max_size=4),
    st.integers(min_value=-1, max_value=2**40),
    st.integers(min_value=0, max_value=2**31 - 1),
    st.dictionaries(_text, _text, max_size=2),
)
def test_clean_metadata_reads_as_fastavros_encoding_and_its_lists_are_skipped_whole(
    partitions: dict[str, CleanPartitionMetadata], taken: int, total: int, extra: dict[str, str],
) -> None:
    """A completed clean's per-partition lists are one map block that states its size (see
    `_encoded_partition_metadata`): the file decodes to the record fastavro's own encoding holds,
    and the top-level fields read past the lists without walking them, where fastavro's encoding
    (no sizes) has to be walked."""
    meta = CleanMetadata("20240104000000000", taken, total, "", "20240103000000000", partitions, extra)
    ours, generic = encode_clean_metadata(meta), _generic_metadata(meta)
    assert avro.read_container(ours, path="x") == avro.read_container(generic, path="x")
    lists = frozenset({"partitionMetadata", "bootstrapPartitionMetadata"})
    top = {k: v for k, v in avro.read_container(generic, path="x").items() if k not in lists}
    assert avro.read_container_skipping(ours, lists) == top
    if partitions:
        assert avro.read_container_skipping(generic, lists) is None
    else:
        assert ours == generic  # an empty map has no block to size


def test_a_clean_cut_short_or_lengthened_is_not_read_past_its_lists() -> None:
    """Skipping trusts the block's stated size only when the file ends exactly where the block and
    its sync marker do; otherwise the full decode (which walks the lists) decides."""
    files = tuple(f"f{i}.parquet" for i in range(50))
    meta = CleanMetadata("20240104000000000", 1, 50, "20240102000000000", "20240103000000000",
                         {"p": CleanPartitionMetadata("p", "KEEP_LATEST_COMMITS", files, files, (), False)}, {})
    data = encode_clean_metadata(meta)
    lists = frozenset({"partitionMetadata", "bootstrapPartitionMetadata"})
    assert avro.read_container_skipping(data, lists) is not None
    for changed in (data[:-1], data[: len(data) // 2], data + b"\0", data[:-16] + b"\1" * 16):
        assert avro.read_container_skipping(changed, lists) is None


def test_a_large_clean_plan_is_byte_identical_and_reads_back_with_hudis_schema() -> None:
    """Thousands of files in hundreds of partitions: one block per list, as fastavro writes it."""
    files = {
        f"dt={p:04d}": tuple(
            CleanFileInfo(f"file:/data/t/dt={p:04d}/{g:08x}-0000-0000-0000-000000000000-0_0-1-2_20260101000000000.parquet")
            for g in range(40)
        )
        for p in range(200)
    }
    plan = CleanPlan(None, "20260101000005000", "KEEP_LATEST_FILE_VERSIONS", files)
    data = encode_clean_plan(plan)
    assert data == _generic_plan(plan)
    record = next(iter(fastavro.reader(io.BytesIO(data), reader_schema=avro.parsed_schema("HoodieCleanerPlan"))))
    assert isinstance(record, dict)
    listed = record["filePathsToBeDeletedPerPartition"]
    assert sum(len(v) for v in listed.values()) == 8_000
    assert listed["dt=0199"][39]["filePath"] == files["dt=0199"][39].file_path


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_encode_long_is_avros_zigzag_varint(value: int) -> None:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, {"type": "long"}, value)
    assert avro.encode_long(value) == out.getvalue()


def test_write_container_with_nothing_pre_encoded_is_write_container() -> None:
    record = {"savepointedBy": "me", "savepointedAt": 1, "comments": "c", "partitionMetadata": {}, "version": 1}
    assert avro.write_container_with("HoodieSavepointMetadata", record, {}) == avro.write_container(
        "HoodieSavepointMetadata", record)
