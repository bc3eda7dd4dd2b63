"""A resize records its clustering in the metadata table as Hudi does.

The records are checked against Hudi's own: the fixture `v9_txns_simple_meta` holds a clustering
(`20260307162454799`) written by Hudi 1.1 with its MDT deltacommit; taking the table back to the
moment before that clustering completed and computing the records from its new files must give
Hudi's records for every MDT partition, value for value.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table, plan_one
from runner.hudi.avro import read_container
from runner.hudi.instant import Action, InstantTime
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.mdt.clustering import record_index_millis, resize_commit, resize_refusals
from runner.hudi.mdt.hfile import read_hfile
from runner.hudi.mdt.keys import column_stats_key
from runner.hudi.mdt.logfile import HeaderKey, read_log_blocks
from runner.hudi.mdt.maintain import ResizedFile, _describe, undo_mdt_commit
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table, read_partition
from runner.hudi.metadata import decode_requested_replace
from runner.hudi.state import read_table_metadata, read_table_state
from runner.plan.model import TableStatus
from runner.storage import storage_for
from tests.conftest import FIXTURES, extract_fixture
from tests.mdt.conftest import MDT_IDS

F9 = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"
CLUSTERING = "20260307162454799"
PARTITIONS = ("files", "column_stats", "partition_stats", "record_index")
MIB = 1024 * 1024


def hudi_records(base: Path, instant: str, partition: str) -> tuple[dict[str, rec.MetadataRecord], str]:
    """The records of one MDT deltacommit in one MDT partition, as Hudi wrote them."""
    out: dict[str, rec.MetadataRecord] = {}
    schema = ""
    for log in sorted((base / ".hoodie/metadata" / partition).glob(f".*_{instant}.log.*")):
        for block in read_log_blocks(log.read_bytes(), where=str(log)):
            schema = block.header[HeaderKey.SCHEMA]
            for key, value in read_hfile(block.content, where=str(log)).cells:
                out[key.decode()] = rec.decode_record(schema, value, where=str(log), with_names=True)
    return out, schema


@pytest.fixture
def chicago() -> Iterator[None]:
    """F9 was written on a machine at UTC-6 with `hoodie.table.timeline.timezone` LOCAL."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "America/Chicago"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def test_the_records_of_hudis_own_clustering_are_reproduced(tmp_path: Path, chicago: None) -> None:
    base = extract_fixture(F9, tmp_path)
    timeline = base / ".hoodie/timeline"
    expected = {p: hudi_records(base, CLUSTERING, p)[0] for p in PARTITIONS}
    assert [len(expected[p]) for p in PARTITIONS] == [4, 48, 48, 10]
    schema = hudi_records(base, CLUSTERING, "files")[1]
    (done,) = timeline.glob(f"{CLUSTERING}_*.replacecommit")
    replace = read_container(done.read_bytes(), path=str(done))
    plan = decode_requested_replace((timeline / f"{CLUSTERING}.clustering.requested").read_bytes(), path="r")
    # Back to the moment before the replacecommit completed: it and every later instant are gone.
    for path in timeline.iterdir():
        if path.is_file() and (path.name[:17] > CLUSTERING or path == done):
            path.unlink()
    storage = storage_for(str(base))
    data = read_table_metadata(storage)
    assert CLUSTERING in {str(i.time) for i in data.timeline.pending()}

    written = []
    for partition, stats in replace["partitionToWriteStats"].items():
        inputs = tuple(f"{s.partition_path}/{s.data_file_name}" for g in plan.clustering_groups or ()
                       for s in g.slices if s.partition_path == partition)
        written += [ResizedFile(partition, s["path"], s["fileSizeInBytes"], inputs) for s in stats]
    columns = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key", "txn_id", "account_id",
               "txn_ts", "txn_datetime", "txn_date", "amount", "currency", "txn_type", "merchant_name",
               "is_international", "fee_amount", "txn_metadata", "region")
    files = [_describe(storage, f, columns, True) for f in written]
    stats = read_partition(storage, data, read_metadata_table(storage), "column_stats", with_names=True)[0]
    state = read_table_state(storage, metadata=data)
    latest: dict[str, set[str]] = {}
    for group in state.active_groups:
        if group.latest is not None:
            latest.setdefault(group.partition, set()).update(group.latest.file_names)

    commit = resize_commit(CLUSTERING, files, mdt_partitions=data.config.metadata_partitions,
                           stats_columns=columns, column_stats=stats, latest_files=latest, schema=schema,
                           table_timezone=data.config.timezone)

    assert sorted(commit.records) == sorted(PARTITIONS)
    for partition in PARTITIONS:
        ours = {k: rec.decode_record(schema, v, where=k, with_names=True) for k, v in commit.records[partition].items()}
        assert sorted(ours) == sorted(expected[partition]), partition
        for key, record in expected[partition].items():
            assert ours[key] == record, (partition, key)


def test_record_index_time_is_the_instant_in_the_table_timezone() -> None:
    assert record_index_millis("20260307222454799", "UTC") == 1772922294799


def test_resize_refusals_name_the_partition_and_the_reason(tmp_path: Path) -> None:
    base = extract_fixture(F9, tmp_path)
    config = read_table_metadata(storage_for(str(base))).config
    assert resize_refusals(config) == []
    from dataclasses import replace

    with_bloom = replace(config, metadata_partitions=(*config.metadata_partitions, "bloom_filters"))
    assert resize_refusals(with_bloom) == []  # kept in step from the new files' footers
    with_expression = replace(config, metadata_partitions=(*config.metadata_partitions, "expr_index_x", "other"))
    (reason,) = resize_refusals(with_expression)
    assert "expr_index_x, other" in reason
    no_keys = replace(config, populate_meta_fields=False)
    assert "the record_index needs each row's record key" in resize_refusals(no_keys)[0]
    no_keys_bloom = replace(with_bloom, populate_meta_fields=False)
    assert "the record_index and bloom_filters need each row's record key" in resize_refusals(no_keys_bloom)[0]


# -- acceptance: `apply` resizes every fixture with a metadata table and keeps the MDT in step -----

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SIZING = FileSizing(max_file_size=128 * MIB, small_file_limit=100 * MIB)
KEEP_ALL = CleanPolicy(CleanPolicyName.KEEP_LATEST_COMMITS, commits_retained=1000)
VERSIONS_1 = CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)


def _decl(base: Path, policy: CleanPolicy) -> TableDeclaration:
    return TableDeclaration(name="t", path=str(base), source_file="tables/t.yml", clean=policy, file_sizing=SIZING,
                            file_sizing_declared=True)


def rows(base: Path) -> list[dict[str, Any]]:
    """The latest rows as the independent `hudi` reader sees them, without `_hoodie_file_name`."""
    from hudi import HudiTable

    batches = HudiTable(str(base)).read()
    table = pa.Table.from_batches(batches) if batches else pa.table({})
    if "_hoodie_file_name" in table.column_names:
        table = table.drop_columns(["_hoodie_file_name"])
    return sorted(table.to_pylist(), key=repr)


def every_instant_reads(base: Path) -> None:
    from hudi import HudiReadOptions, HudiTable

    table = HudiTable(str(base))
    for instant in read_table_metadata(storage_for(str(base))).timeline.completed_writes:
        table.read(HudiReadOptions().with_as_of_timestamp(str(instant.time)))  # raises on NotFound


def in_step(base: Path) -> None:
    storage = storage_for(str(base))
    health = check_metadata_table(storage, read_table_state(storage))
    assert health.ok, health.to_json()


def assert_resize_recorded(base: Path, instant: str) -> None:
    """The MDT deltacommit has the replacecommit's time and completed first; every key of every new
    file points at it in the record index, and every new file has its column stats."""
    storage = storage_for(str(base))
    meta = read_table_metadata(storage)
    (done,) = [i for i in meta.timeline.completed(Action.REPLACE_COMMIT) if str(i.time) == instant]
    mdt = read_metadata_table(storage)
    (mirror,) = [i for i in mdt.timeline.completed(Action.DELTA_COMMIT) if str(i.time) == instant]
    assert mirror.completion_time < done.completion_time
    new_files = sorted(p for p in base.rglob(f"*_{instant}.parquet"))
    assert new_files
    # The records of this deltacommit (the merged partition may hold delete blocks the reader refuses).
    partitions = meta.config.metadata_partitions
    index = hudi_records(base, instant, "record_index")[0] if "record_index" in partitions else {}
    stats = read_partition(storage, meta, mdt, "column_stats")[0] if "column_stats" in partitions else {}
    for path in new_files:
        partition = str(path.parent.relative_to(base)) if path.parent != base else ""
        file_id = path.name.split("_")[0]
        if index:
            for key in pq.read_table(path, columns=["_hoodie_record_key"]).column(0).to_pylist():
                location = index[key]["recordIndexMetadata"]
                assert location["partitionName"] == partition
                bits = (location["fileIdHighBits"] % 2**64) << 64 | location["fileIdLowBits"] % 2**64
                assert f"{uuid.UUID(int=bits)}-{location['fileIndex']}" == file_id
        if stats:
            key = column_stats_key("_hoodie_record_key", partition or rec.NON_PARTITIONED_NAME, path.name)
            record = stats[key]["ColumnStatsMetadata"]
            assert record["valueCount"] == pq.ParquetFile(path).metadata.num_rows and not record["isDeleted"]


@pytest.mark.spark
@pytest.mark.parametrize("fixture", MDT_IDS)
def test_resize_then_clean_keep_the_metadata_table_in_step(fixture: str, tmp_path: Path, spark_deleter) -> None:
    base = extract_fixture(FIXTURES / f"{fixture}.zip", tmp_path)
    storage = storage_for(str(base))
    before = rows(base)
    planned = plan_one(_decl(base, KEEP_ALL), storage, now=NOW)
    if planned.sizing is None or planned.sizing.is_empty:
        pytest.skip("no small parquet base files to resize in this fixture")

    resized = apply_table(_decl(base, KEEP_ALL), None, now=NOW, spark_settings=SparkSettings(),
                          deleter_factory=spark_deleter)

    assert resized.status == "success" and resized.files_rewritten > 0, resized
    (instant,) = [n.split(".")[0].split("_")[0] for n in resized.instants_written if n.endswith(".replacecommit")]
    assert rows(base) == before
    every_instant_reads(base)
    in_step(base)
    assert_resize_recorded(base, instant)
    assert plan_one(_decl(base, KEEP_ALL), storage, now=NOW).status is TableStatus.IN_SYNC

    cleaned = apply_table(_decl(base, VERSIONS_1), None, now=NOW, spark_settings=SparkSettings(),
                          deleter_factory=spark_deleter)

    assert cleaned.status == "success" and cleaned.files_deleted > 0, cleaned
    assert rows(base) == before
    every_instant_reads(base)
    in_step(base)
    assert plan_one(_decl(base, VERSIONS_1), storage, now=NOW).status is TableStatus.IN_SYNC


def test_a_rolled_back_resize_takes_its_metadata_deltacommit_with_it(tmp_path: Path) -> None:
    """Hudi's clustering in F9, made pending again: its completed MDT deltacommit is ignored, and
    once taken back nothing of it is left to count when the data instant is removed."""
    base = extract_fixture(F9, tmp_path)
    timeline = base / ".hoodie/timeline"
    for path in timeline.iterdir():
        if path.is_file() and path.name[:17] >= CLUSTERING and "clustering" not in path.name:
            path.unlink()  # the replacecommit and everything after it
    storage = storage_for(str(base))
    data = read_table_metadata(storage)
    listed = read_files_listing(storage, data).files
    assert not any(CLUSTERING in name for names in listed.values() for name in names)  # ignored while pending

    removed = undo_mdt_commit(storage, InstantTime(CLUSTERING), keep_pending=False)

    mdt_folder = base / ".hoodie/metadata"
    assert not [p for p in (mdt_folder / ".hoodie/timeline").iterdir() if p.name.startswith(CLUSTERING)]
    assert not list(mdt_folder.rglob(f".*_{CLUSTERING}.log.*"))
    assert removed[0].endswith(".deltacommit")  # the completed file first
    for path in timeline.glob(f"{CLUSTERING}.*"):
        path.unlink()  # the data instant goes too: the listing is still what it was
    assert read_files_listing(storage, read_table_metadata(storage)).files == listed


def test_a_retry_keeps_the_pending_metadata_deltacommit_and_drops_the_rest(tmp_path: Path) -> None:
    base = extract_fixture(F9, tmp_path)
    next((base / ".hoodie/timeline").glob(f"{CLUSTERING}_*.replacecommit")).unlink()
    storage = storage_for(str(base))

    undo_mdt_commit(storage, InstantTime(CLUSTERING), keep_pending=True)

    mdt_timeline = base / ".hoodie/metadata/.hoodie/timeline"
    names = sorted(p.name for p in mdt_timeline.iterdir() if p.name.startswith(CLUSTERING))
    assert names == [f"{CLUSTERING}.deltacommit.inflight", f"{CLUSTERING}.deltacommit.requested"]
    assert not list((base / ".hoodie/metadata").rglob(f".*_{CLUSTERING}.log.*"))


@pytest.mark.parametrize("partition", ["region=us", ""])
def test_a_resize_writes_one_bloom_filter_record_per_new_file_from_its_footer(partition: str) -> None:
    # BloomFiltersIndexer.convertMetadataToBloomFilterRecords: per new base file, the footer's
    # filter re-serialized (= the footer string) as UTF-8 bytes, the type, the instant, not deleted;
    # nothing for the replaced files (they keep their records until a clean tombstones them).
    from runner.hudi.mdt.clustering import NewBaseFile
    from runner.hudi.mdt.keys import bloom_filter_key
    from runner.testing.metadata_table import metadata_record_schema

    schema = metadata_record_schema(with_indexes=True)
    new = NewBaseFile(partition, "f1-0_0-1-0_20260101000000000.parquet", 10, ("a.parquet", "b.parquet"), {},
                      bloom_filter=("DYNAMIC_V0", "AAAA/w=="))
    commit = resize_commit("20260101000000000", [new], mdt_partitions=("files", "bloom_filters"), stats_columns=(),
                           column_stats={}, latest_files={}, schema=schema, table_timezone="UTC")
    (key,) = commit.records["bloom_filters"]
    assert key == bloom_filter_key(partition or ".", new.name)  # `.` names a non-partitioned table's root
    record = rec.decode_record(schema, commit.records["bloom_filters"][key], where="t")
    assert record["type"] == rec.BLOOM_FILTER
    assert record["BloomFilterMetadata"] == {"type": "DYNAMIC_V0", "timestamp": "20260101000000000",
                                             "bloomFilter": b"AAAA/w==", "isDeleted": False}
