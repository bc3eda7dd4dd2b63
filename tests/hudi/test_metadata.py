"""Timeline metadata codecs: real Hudi-written files decode, everything we write round-trips."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.errors import CorruptMetadataError
from runner.hudi import avro
from runner.hudi.metadata import (
    ActionInstant,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    CleanPlan,
    ClusteringGroup,
    ClusteringSlice,
    CommitMetadata,
    FrozenMap,
    RequestedReplace,
    SavepointMetadata,
    WriteStat,
    decode_clean_metadata,
    decode_clean_plan,
    decode_clean_summary,
    decode_commit_metadata,
    decode_compaction_plan,
    decode_requested_replace,
    decode_rollback_metadata,
    decode_rollback_plan,
    decode_savepoint_metadata,
    encode_clean_metadata,
    encode_clean_plan,
    encode_commit_metadata,
    encode_requested_replace,
    encode_savepoint_metadata,
)
from tests.conftest import FIXTURES, fixture_id, fixture_zips

V6_OVERWRITE = "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"
V8_TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
V9_TXNS = "sample_table/cow/v9_txns_simple_nometa"


def member(fixture: str, suffix: str) -> tuple[str, bytes]:
    """(path, bytes) of the one file of a fixture's data-table timeline whose name ends with `suffix`."""
    with zipfile.ZipFile(FIXTURES / f"{fixture}.zip") as archive:
        names = [
            n
            for n in archive.namelist()
            if n.endswith(suffix) and not n.startswith("__MACOSX/") and "/.hoodie/metadata/" not in n
        ]
        assert len(names) == 1, names
        return names[0], archive.read(names[0])


def timeline_files(zip_path: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(zip_path) as archive:
        return [
            (n, archive.read(n))
            for n in archive.namelist()
            if "/.hoodie/" in n and not n.endswith("/") and "__MACOSX" not in n and "/archived/" not in n
        ]


# ------------------------------------------------------------------------------ commit metadata


def test_v6_commit_json() -> None:
    path, data = member("sample_table/cow/v6_nonpartitioned", "20240418173551906.commit")
    meta = decode_commit_metadata(data, path=path)
    assert (meta.operation_type, meta.compacted, meta.is_replace) == ("UPSERT", False, False)
    assert meta.partitions == ("",)
    (stat,) = meta.write_stats
    assert stat.file_id == "a079bdb3-731c-4894-b855-abfcd6921007-0"
    assert stat.file_name == "a079bdb3-731c-4894-b855-abfcd6921007-0_0-203-274_20240418173551906.parquet"
    assert (stat.prev_commit, stat.num_writes, stat.num_inserts, stat.num_update_writes) == (
        "20240418173550988",
        4,
        1,
        1,
    )
    assert meta.total_bytes_written == stat.total_write_bytes == stat.file_size_in_bytes == 441520
    assert meta.total_records_written == 4
    assert json.loads(meta.extra_metadata["schema"])["type"] == "record"


def test_v6_first_write_has_no_previous_commit() -> None:
    path, data = member("sample_table/cow/v6_nonpartitioned", "20240418173550988.commit")
    assert all(s.prev_commit is None for s in decode_commit_metadata(data, path=path).write_stats)


def test_v6_deltacommit_log_append() -> None:
    path, data = member("quickstart_trips_table/mor/avro/v6_trips_8i1u", "20250331030645735.deltacommit")
    (stat,) = decode_commit_metadata(data, path=path).write_stats
    assert stat.partition_path == "city=san_francisco"
    assert stat.log_files == (".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85",)
    assert stat.base_file == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet"
    assert (stat.log_version, stat.log_offset, stat.prev_commit) == (1, 0, "20250331030642808")


def test_v6_replacecommit_json_insert_overwrite_table() -> None:
    path, data = member(V6_OVERWRITE, "20240707001303088.replacecommit")
    meta = decode_commit_metadata(data, path=path)
    assert (meta.operation_type, meta.is_replace) == ("INSERT_OVERWRITE_TABLE", True)
    assert meta.partition_to_replace_file_ids == {
        "30": ("d398fae1-c0e6-4098-8124-f55f7098bdba-0",),
        "20": ("88163884-fef0-4aab-865d-c72327a8a1d5-0",),
        "10": ("4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0",),
    }
    assert meta.partitions == ("10", "20", "30")


def test_v6_inflight_workload_profile() -> None:
    path, data = member(V6_OVERWRITE, "20240707001303088.replacecommit.inflight")
    meta = decode_commit_metadata(data, path=path)
    (stat,) = meta.write_stats
    assert (stat.file_id, stat.path, stat.partition_path, stat.num_inserts) == ("", None, "30", 1)
    assert not meta.is_replace


def test_v8_compaction_commit_avro() -> None:
    path, data = member(V8_TRIPS, "20251220210129235_20251220210129883.commit")
    meta = decode_commit_metadata(data, path=path)
    assert (meta.operation_type, meta.compacted) == ("COMPACT", True)
    assert meta.partitions == ("city=chennai", "city=san_francisco", "city=sao_paulo")
    stat = meta.partition_to_write_stats["city=chennai"][0]
    assert (
        stat.prev_base_file == "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_2-986-2794_20251220210108078.parquet"
    )
    assert (stat.total_log_files_compacted, stat.total_log_size_compacted, stat.total_log_records) == (
        2,
        2117,
        2,
    )


def test_v8_deltacommit_log_file_without_base() -> None:
    path, data = member(V8_TRIPS, "20251220210130911_20251220210131755.deltacommit")
    (stat,) = decode_commit_metadata(data, path=path).write_stats
    assert stat.base_file is None  # Hudi 1.x writes "" for "no base file"
    assert stat.log_files == (".8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210130911.log.1_0-1139-3316",)


def test_v9_replacecommits_insert_overwrite_and_clustering() -> None:
    path, data = member(V9_TXNS, "20260307135707243_20260307135707527.replacecommit")
    overwrite = decode_commit_metadata(data, path=path)
    assert (overwrite.operation_type, overwrite.is_replace) == ("INSERT_OVERWRITE", True)
    assert set(overwrite.partition_to_replace_file_ids["region=eu"]) == {
        "85da9a6c-19df-476b-b2ec-6f55e9eaaf67-0",
        "a80c27f5-2f65-435f-8308-7a4b85f01626-0",
    }
    path, data = member(V9_TXNS, "20260307135709297_20260307135709818.replacecommit")
    clustering = decode_commit_metadata(data, path=path)
    assert clustering.operation_type == "CLUSTER"
    assert sum(len(ids) for ids in clustering.partition_to_replace_file_ids.values()) == 5


# Completed write instants, and the inflight files that hold a workload profile (`T.inflight` is a commit's).
COMMIT_FILE = re.compile(
    r"^[\d_]+\.(commit|deltacommit|replacecommit)$|^\d+\.(deltacommit\.|replacecommit\.)?inflight$"
)


@pytest.mark.parametrize("zip_path", fixture_zips(), ids=fixture_id)
def test_every_fixture_commit_decodes_and_round_trips_in_both_layouts(zip_path: Path) -> None:
    """Includes the metadata tables' deltacommits."""
    decoded = 0
    for path, data in timeline_files(zip_path):
        if not COMMIT_FILE.match(path.rsplit("/", 1)[-1]) or not data:
            continue
        meta = decode_commit_metadata(data, path=path)
        for layout in (1, 2):
            assert decode_commit_metadata(encode_commit_metadata(meta, layout=layout), path=path) == meta
        decoded += 1
    assert decoded or zip_path.stem.endswith("_empty")


STAT = WriteStat(
    partition_path="p=1",
    file_id="f1-0",
    path="p=1/f1-0_0-1-2_20240101000000000.parquet",
    prev_commit=None,
    num_writes=10,
    total_write_bytes=1000,
    file_size_in_bytes=1000,
)


def test_encode_layout_1_is_hudi_0_14_json() -> None:
    meta = CommitMetadata("CLUSTER", {"p=1": (STAT,)}, {"p=1": ("old-0",)}, {"schema": "{}"}, is_replace=True)
    document = json.loads(encode_commit_metadata(meta, layout=1))
    assert list(document) == [
        "partitionToWriteStats",
        "compacted",
        "extraMetadata",
        "operationType",
        "partitionToReplaceFileIds",
    ]
    stat = document["partitionToWriteStats"]["p=1"][0]
    assert stat["prevCommit"] == "null"
    assert list(stat)[:4] == ["fileId", "path", "cdcStats", "prevCommit"]
    assert {"numWrites", "totalWriteBytes", "fileSizeInBytes", "runtimeStats", "totalLogRecords"} <= set(stat)
    assert "logFiles" not in stat  # only log appends carry HoodieDeltaWriteStat's fields


def test_encode_layout_2_picks_the_record_by_action() -> None:
    commit = encode_commit_metadata(CommitMetadata("UPSERT", {"p=1": (STAT,)}), layout=2)
    replace = encode_commit_metadata(CommitMetadata("INSERT_OVERWRITE", {}, is_replace=True), layout=2)
    assert fastavro.reader(io.BytesIO(commit)).writer_schema["name"].endswith(".HoodieCommitMetadata")
    assert fastavro.reader(io.BytesIO(replace)).writer_schema["name"].endswith(".HoodieReplaceCommitMetadata")
    assert decode_commit_metadata(replace, path="x").is_replace


def test_encode_rejects_unknown_layouts_and_replaces_outside_a_replacecommit() -> None:
    with pytest.raises(ValueError, match="layout"):
        encode_commit_metadata(CommitMetadata(None, {}), layout=3)
    with pytest.raises(ValueError, match="is_replace"):
        CommitMetadata("INSERT_OVERWRITE", {}, {"p": ("f",)})


_text = st.text(st.characters(codec="utf-8"), max_size=12)
_count = st.integers(0, 2**40)
_stats = st.builds(
    WriteStat,
    partition_path=_text,
    file_id=_text,
    path=st.none() | _text,
    prev_commit=st.none() | st.from_regex(r"\d{17}", fullmatch=True),
    num_writes=_count,
    num_inserts=_count,
    total_write_bytes=_count,
    file_size_in_bytes=_count,
    total_log_records=_count,
    log_version=st.none() | st.integers(0, 2**31 - 1),
    log_offset=st.none() | _count,
    base_file=st.none() | _text.filter(bool),
    log_files=st.lists(_text.filter(bool), max_size=2).map(tuple),
    prev_base_file=st.none() | _text.filter(bool),
)


@st.composite
def _commits(draw: st.DrawFn) -> CommitMetadata:
    stats = draw(st.dictionaries(_text, st.lists(_stats, max_size=3).map(tuple), max_size=3))
    stats = {
        p: tuple(WriteStat(**{**_fields(s), "partition_path": p}) for s in ss) for p, ss in stats.items()
    }
    is_replace = draw(st.booleans())
    replaced = draw(st.dictionaries(_text, st.lists(_text).map(tuple), max_size=2)) if is_replace else {}
    return CommitMetadata(
        operation_type=draw(st.none() | st.sampled_from(["UPSERT", "INSERT", "CLUSTER", "COMPACT"])),
        partition_to_write_stats=stats,
        partition_to_replace_file_ids=replaced,
        extra_metadata=draw(st.dictionaries(_text, _text, max_size=3)),
        compacted=draw(st.booleans()),
        is_replace=is_replace,
    )


def _fields(stat: WriteStat) -> dict[str, object]:
    return {name: getattr(stat, name) for name in WriteStat.__dataclass_fields__}


@given(_commits(), st.sampled_from([1, 2]))
def test_commit_metadata_round_trips(meta: CommitMetadata, layout: int) -> None:
    assert decode_commit_metadata(encode_commit_metadata(meta, layout=layout), path="x") == meta


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (b"", "found an empty file"),
        (b"   \n", "found an empty file"),
        (b'{"partitionToWriteStats": ', "found invalid JSON"),
        (b"\xff\xfe", "found invalid JSON"),
        (b"[1, 2]", "expected commit metadata to be a record, found list"),
        (
            b'{"partitionToWriteStats": {"p": [{"numWrites": "4"}]}}',
            "numWrites to be a whole number, found str '4'",
        ),
        (b'{"partitionToWriteStats": {"p": {}}}', "partitionToWriteStats['p'] to be a list"),
        (b'{"compacted": "yes"}', "compacted to be true or false"),
        (b'{"extraMetadata": {"a": 1}}', "extraMetadata to be a map of strings"),
        (b"Obj\x01\x00\x01", "truncated or corrupt container"),
    ],
)
def test_corrupt_commit_metadata_names_the_file(data: bytes, found: str) -> None:
    path = "t/.hoodie/20240101000000000.commit"
    with pytest.raises(CorruptMetadataError) as error:
        decode_commit_metadata(data, path=path)
    assert str(error.value).startswith(f"Cannot decode {path}: ")
    assert found in str(error.value)


def test_truncated_avro_commit_names_the_file() -> None:
    path, data = member(V8_TRIPS, "20251220210129235_20251220210129883.commit")
    with pytest.raises(
        CorruptMetadataError, match=f"Cannot decode {path}: expected an Avro object container"
    ):
        decode_commit_metadata(data[: len(data) // 2], path=path)


def test_hudi_rs_reads_tables_whose_commit_files_we_rewrote(hudi_fixture) -> None:
    """The `hudi` package (hudi-rs) as an oracle: same latest slices, rows and schema after we
    re-encode every completed write instant: JSON on v6, Avro on v8/v9; COW with replacecommits, MOR."""
    hudi = pytest.importorskip("hudi")
    tables = [
        (V6_OVERWRITE, 1),
        ("quickstart_trips_table/mor/avro/v6_trips_8i1u", 1),
        ("sample_table/cow/v8_nonpartitioned", 2),
        (V9_TXNS, 2),
        ("sample_table/mor/avro/v9_txns_simple_nometa", 2),
    ]
    for name, layout in tables:
        base = hudi_fixture(name)
        before = _hudi_view(hudi, base)
        timeline = base / ".hoodie" / ("timeline" if layout == 2 else "")
        rewritten = 0
        for file in timeline.iterdir():
            if file.suffix in (".commit", ".deltacommit", ".replacecommit"):
                meta = decode_commit_metadata(file.read_bytes(), path=str(file))
                file.write_bytes(encode_commit_metadata(meta, layout=layout))
                rewritten += 1
        assert rewritten >= 2
        assert _hudi_view(hudi, base) == before


def _hudi_view(hudi: object, base: Path) -> tuple[object, ...]:
    table = hudi.HudiTable(str(base))  # type: ignore[attr-defined]
    slices = sorted((s.partition_path, s.file_id, s.base_file_name) for s in table.get_file_slices())
    rows = sorted(map(str, (row for batch in table.read() for row in batch.to_pylist())))
    replaced = [
        json.loads(table.get_timeline().get_instant_metadata_in_json(i))["partitionToReplaceFileIds"]
        for i in table.get_timeline().get_completed_replacecommits()
    ]
    return slices, rows, str(table.get_schema()), replaced


# ---------------------------------------------------------------------------------------- clean

PLAN = CleanPlan(
    earliest_instant_to_retain=ActionInstant("20240102000000000", "commit", "COMPLETED"),
    last_completed_commit_timestamp="20240103000000000",
    policy="KEEP_LATEST_COMMITS",
    file_paths_to_delete={
        "p=1": (CleanFileInfo("file:/t/p=1/a_0-1-2_20240101000000000.parquet"),),
        "": (CleanFileInfo("file:/t/b_0-1-2_20240101000000000.parquet", is_bootstrap_base_file=True),),
    },
    partitions_to_delete=("p=2",),
    extra_metadata={"savepointed_timestamps": "20240101000000000"},
)


def test_clean_plan_round_trips_as_hudi_writes_it() -> None:
    data = encode_clean_plan(PLAN)
    assert decode_clean_plan(data, path="x", base_path="file:/t") == PLAN
    record = avro.read_container(data, path="x")
    assert (record["version"], record["filesToBeDeletedPerPartition"]) == (2, {})


def test_clean_plan_without_boundary_and_version_3() -> None:
    plan = CleanPlan(None, "", "KEEP_LATEST_FILE_VERSIONS", {}, version=3)
    assert decode_clean_plan(encode_clean_plan(plan), path="x", base_path="/t") == plan


def test_clean_plan_version_1_file_names_become_full_paths() -> None:
    record = {
        "policy": "KEEP_LATEST_COMMITS",
        "version": 1,
        "filesToBeDeletedPerPartition": {"2024/01/01": ["a.parquet", ".a_1.log.1_0-1-2"], "": ["b.parquet"]},
    }
    plan = decode_clean_plan(
        avro.write_container("HoodieCleanerPlan", record), path="x", base_path="file:/t/"
    )
    assert plan.version == 2
    assert plan.file_paths_to_delete == {
        "2024/01/01": (
            CleanFileInfo("file:/t/2024/01/01/a.parquet"),
            CleanFileInfo("file:/t/2024/01/01/.a_1.log.1_0-1-2"),
        ),
        "": (CleanFileInfo("file:/t/b.parquet"),),
    }
    assert (plan.partitions_to_delete, plan.extra_metadata, plan.earliest_instant_to_retain) == ((), {}, None)


def test_clean_plan_from_the_oldest_schema_takes_defaults() -> None:
    """0.5.x plans had only earliestInstantToRetain, policy, filesToBeDeletedPerPartition, version."""
    oldest = json.loads(json.dumps(avro.schema_json("HoodieCleanerPlan")))
    keep = ("earliestInstantToRetain", "policy", "filesToBeDeletedPerPartition", "version")
    oldest["fields"] = [f for f in oldest["fields"] if f["name"] in keep]
    out = io.BytesIO()
    fastavro.writer(out, oldest, [{"policy": "KEEP_LATEST_FILE_VERSIONS", "version": None}])
    plan = decode_clean_plan(out.getvalue(), path="x", base_path="/t")
    assert (plan.version, plan.last_completed_commit_timestamp, plan.file_paths_to_delete) == (2, "", {})


def test_clean_plan_below_version_2_is_not_written() -> None:
    with pytest.raises(ValueError, match="version 2"):
        encode_clean_plan(CleanPlan(None, "", "KEEP_LATEST_COMMITS", {}, version=1))


CLEAN = CleanMetadata(
    start_clean_time="20240104000000000",
    time_taken_ms=-1,
    total_files_deleted=1,
    earliest_commit_to_retain="20240102000000000",
    last_completed_commit_timestamp="20240103000000000",
    partition_metadata={
        "p=1": CleanPartitionMetadata(
            "p=1", "KEEP_LATEST_COMMITS", ("a.parquet", "c.parquet"), ("a.parquet",), ("c.parquet",)
        ),
        "p=2": CleanPartitionMetadata("p=2", "KEEP_LATEST_COMMITS", (), (), (), is_partition_deleted=True),
    },
    extra_metadata={"savepointed_timestamps": ""},
)


def test_clean_metadata_round_trips() -> None:
    assert decode_clean_metadata(encode_clean_metadata(CLEAN), path="x") == CLEAN
    none = CleanMetadata("1", 0, 0, "", "", {})
    assert decode_clean_metadata(encode_clean_metadata(none), path="x") == none


def test_clean_metadata_version_1_paths_become_names() -> None:
    record = avro.read_container(encode_clean_metadata(CLEAN), path="x") | {"version": 1}
    record["partitionMetadata"]["p=1"]["successDeleteFiles"] = ["hdfs://nn/t/p=1/a.parquet"]
    decoded = decode_clean_metadata(avro.write_container("HoodieCleanMetadata", record), path="x")
    assert decoded.version == 2
    assert decoded.partition_metadata["p=1"].success_delete_files == ("a.parquet",)


@given(
    st.dictionaries(
        st.text(max_size=8),
        st.lists(st.builds(CleanFileInfo, st.text(min_size=1, max_size=20), st.booleans()), max_size=3).map(
            tuple
        ),
        max_size=3,
    ),
    st.lists(st.text(max_size=8), max_size=2).map(tuple),
)
def test_clean_plan_round_trips_for_any_files(
    files: dict[str, tuple[CleanFileInfo, ...]], partitions: tuple[str, ...]
) -> None:
    plan = CleanPlan(None, "20240101000000000", "KEEP_LATEST_BY_HOURS", files, partitions)
    assert decode_clean_plan(encode_clean_plan(plan), path="x", base_path="/t") == plan


# ------------------------------------------------------------------------------------ savepoint


def test_savepoint_round_trips() -> None:
    savepoint = SavepointMetadata(
        "alice", 1_700_000_000_000, "before backfill", {"p=1": ("a.parquet", ".a.log.1_0-1-2"), "": ()}
    )
    assert decode_savepoint_metadata(encode_savepoint_metadata(savepoint), path="x") == savepoint
    tagged = SavepointMetadata("bob", 1, "", {}, {"k": "v"})
    assert decode_savepoint_metadata(encode_savepoint_metadata(tagged), path="x") == tagged


@given(
    st.dictionaries(st.text(max_size=8), st.lists(st.text(max_size=12), max_size=3).map(tuple), max_size=3)
)
def test_savepoint_round_trips_for_any_files(files: dict[str, tuple[str, ...]]) -> None:
    savepoint = SavepointMetadata("u", 5, "c", files)
    assert decode_savepoint_metadata(encode_savepoint_metadata(savepoint), path="x") == savepoint


# --------------------------------------------------------------------------- compaction, clustering


def test_v8_compaction_plan() -> None:
    path, data = member(V8_TRIPS, "20251220210129235.compaction.requested")
    operations = decode_compaction_plan(data, path=path)
    assert [(o.partition_path, o.base_instant_time) for o in operations] == [
        ("city=chennai", "20251220210108078"),
        ("city=san_francisco", "20251220210108078"),
        ("city=sao_paulo", "20251220210108078"),
    ]
    assert operations[0].file_id == "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0"
    assert (
        operations[0].data_file_name
        == "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_2-986-2794_20251220210108078.parquet"
    )
    assert len(operations[0].delta_file_names) == 2


def test_compaction_plan_paths_become_names() -> None:
    _, data = member(V8_TRIPS, "20251220210129235.compaction.requested")
    record = avro.read_container(data, path="x")
    op = record["operations"][0]
    op |= {
        "dataFilePath": "hdfs://nn/t/city=chennai/" + op["dataFilePath"],
        "deltaFilePaths": ["/t/city=chennai/.x.log.1_0-1-2"],
    }
    del record["operations"][1:]
    out = io.BytesIO()
    fastavro.writer(out, fastavro.reader(io.BytesIO(data)).writer_schema, [record])
    (operation,) = decode_compaction_plan(out.getvalue(), path="x")
    assert (
        operation.data_file_name.endswith("_20251220210108078.parquet")
        and "/" not in operation.data_file_name
    )
    assert operation.delta_file_names == (".x.log.1_0-1-2",)


def test_v9_clustering_plan() -> None:
    path, data = member(V9_TXNS, "20260307135709297.clustering.requested")
    request = decode_requested_replace(data, path=path)
    assert request.is_clustering and request.operation_type == "CLUSTER"
    assert (
        request.strategy_class
        == "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
    )
    assert [len(g.slices) for g in request.clustering_groups] == [2, 1, 2]
    first = request.clustering_groups[0].slices[0]
    assert first == ClusteringSlice(
        "region=apac",
        "501c09bc-09b2-4abe-81ee-31bd9cea901b-0",
        "501c09bc-09b2-4abe-81ee-31bd9cea901b-0_0-55-112_20260307135708654.parquet",
    )
    assert ("region=eu", "2ecf970b-9f50-488a-b55b-6ee0f6e29d3c-0") in request.file_groups
    assert request.clustering_groups[0].metrics["TOTAL_IO_MB"] == 0.0


@pytest.mark.parametrize(
    ("fixture", "suffix"),
    [(V6_OVERWRITE, ".replacecommit.requested"), (V9_TXNS, "7243.replacecommit.requested")],
)
def test_insert_overwrite_requests_are_not_clustering(fixture: str, suffix: str) -> None:
    path, data = member(fixture, suffix)
    request = decode_requested_replace(data, path=path)
    assert not request.is_clustering and request.file_groups == frozenset()


def test_empty_requested_replace_is_not_clustering() -> None:
    assert decode_requested_replace(b"", path="x") == RequestedReplace(None, None)


def test_cluster_request_without_a_plan_is_corrupt() -> None:
    data = avro.write_container("HoodieRequestedReplaceMetadata", {"operationType": "CLUSTER"})
    with pytest.raises(CorruptMetadataError, match=r"t/1\.clustering\.requested: operation type CLUSTER"):
        decode_requested_replace(data, path="t/1.clustering.requested")


REQUEST = RequestedReplace(
    operation_type="CLUSTER",
    clustering_groups=(
        ClusteringGroup(
            (
                ClusteringSlice("p=1", "f1-0", "f1-0_0-1-2_1.parquet"),
                ClusteringSlice("p=1", "f2-0", None, (".f2-0_1.log.1_0-1-2",)),
            ),
            1,
            {"TOTAL_IO_MB": 1.5},
        ),
        ClusteringGroup((ClusteringSlice("", "f3-0", "f3-0_0-1-2_1.parquet"),), 2),
    ),
    strategy_class="org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
    strategy_params={"hoodie.clustering.plan.strategy.sort.columns": "a"},
)


def test_clustering_request_round_trips_with_full_base_paths_on_disk() -> None:
    data = encode_requested_replace(REQUEST, base_path="file:/w/t")
    assert decode_requested_replace(data, path="x") == REQUEST
    plan = avro.read_container(data, path="x")["clusteringPlan"]
    slices = [s for g in plan["inputGroups"] for s in g["slices"]]
    assert [s["dataFilePath"] for s in slices] == [
        "file:/w/t/p=1/f1-0_0-1-2_1.parquet",
        None,
        "file:/w/t/f3-0_0-1-2_1.parquet",
    ]
    assert slices[1]["deltaFilePaths"] == [".f2-0_1.log.1_0-1-2"]
    assert plan["preserveHoodieMetadata"] is True


def test_non_clustering_request_round_trips() -> None:
    request = RequestedReplace("INSERT_OVERWRITE", None)
    assert decode_requested_replace(encode_requested_replace(request, base_path="/t"), path="x") == request


# --------------------------------------------------------------------------------------- rollback


@pytest.mark.parametrize(
    ("fixture", "rolled_back", "deleted"),
    [
        (
            "sample_table/mor/parquet/v6_nonpartitioned_rollback",
            "20250126040826878",
            "cd329d8f-0ce4-4654-84ab-2f769aae5034-0_1-33-44_20250126040826878.parquet",
        ),
        (
            "sample_table/mor/avro/v9_nonpartitioned_rollback",
            "20260403184242950",
            "cefd0149-a1ea-4981-abda-34e0b9d9ef12-0_0-33-86_20260403184242950.parquet",
        ),
    ],
)
def test_rollback_metadata_and_plan(fixture: str, rolled_back: str, deleted: str) -> None:
    path, data = member(fixture, ".rollback")
    rollback = decode_rollback_metadata(data, path=path)
    assert rollback.commits_rolled_back == (rolled_back,)
    (files,) = rollback.deleted_files.values()
    assert [f.rsplit("/", 1)[-1] for f in files] == [deleted]
    path, data = member(fixture, ".rollback.requested")
    plan = decode_rollback_plan(data, path=path)
    assert (plan.instant_time, plan.action) == (rolled_back, "deltacommit")


# ------------------------------------------------------------------------------ shared behaviour

AVRO_DECODERS = {
    "clean_plan": lambda data, path: decode_clean_plan(data, path=path, base_path="/t"),
    "clean_metadata": lambda data, path: decode_clean_metadata(data, path=path),
    "clean_summary": lambda data, path: decode_clean_summary(data, path=path),
    "savepoint": lambda data, path: decode_savepoint_metadata(data, path=path),
    "compaction_plan": lambda data, path: decode_compaction_plan(data, path=path),
    "requested_replace": lambda data, path: decode_requested_replace(data, path=path),
    "rollback_metadata": lambda data, path: decode_rollback_metadata(data, path=path),
    "rollback_plan": lambda data, path: decode_rollback_plan(data, path=path),
}
BAD_BYTES = {"empty": b"", "garbage": b"garbage", "truncated": encode_clean_plan(PLAN)[:60]}


@pytest.mark.parametrize(
    ("decoder", "bad"),
    # An empty requested replace is allowed: it means "not clustering".
    [(d, b) for d in AVRO_DECODERS for b in BAD_BYTES if (d, b) != ("requested_replace", "empty")],
)
def test_avro_decoders_reject_bad_bytes_naming_the_file(decoder: str, bad: str) -> None:
    path = "t/.hoodie/timeline/1.x.requested"
    with pytest.raises(CorruptMetadataError) as error:
        AVRO_DECODERS[decoder](BAD_BYTES[bad], path)
    assert f"Cannot decode {path}: expected an Avro object container file" in str(error.value)


def test_values_are_immutable_and_hashable() -> None:
    for value in (PLAN, CLEAN, REQUEST, CommitMetadata("UPSERT", {"p=1": [STAT]}, extra_metadata={"a": "b"})):
        assert hash(value) == hash(value)
    assert FrozenMap({"a": 1}) == {"a": 1} and hash(FrozenMap({"a": 1})) == hash(FrozenMap([("a", 1)]))
    with pytest.raises(TypeError):
        PLAN.extra_metadata["x"] = "y"  # type: ignore[index]
    assert isinstance(CommitMetadata("UPSERT", {"p=1": [STAT]}).partition_to_write_stats["p=1"], tuple)
