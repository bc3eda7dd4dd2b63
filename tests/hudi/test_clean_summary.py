"""The last completed clean decoded for planning: its top-level fields at once, its per-partition
lists of deleted files only when read, and in every case the same values as a full decode."""

from __future__ import annotations

import copy
import io
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import fastavro
import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.errors import CorruptMetadataError
from runner.execute.apply import apply_table
from runner.hudi import avro
from runner.hudi.metadata import (
    CleanMetadata,
    CleanPartitionMetadata,
    LazyPartitions,
    decode_clean_metadata,
    decode_clean_summary,
    encode_clean_metadata,
)
from runner.hudi.state import read_table_metadata
from runner.hudi.timeline_metadata import DECODED
from runner.planner import plan_one
from runner.storage import DeleteResult, LocalStorage
from runner.testing import TableBuilder

NOW = datetime(2026, 11, 22, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    DECODED.clear()
    yield
    DECODED.clear()


def _names(partition: int, count: int) -> tuple[str, ...]:
    return tuple(f"g{partition}-{i}_0-1-2_20240101000000000.parquet" for i in range(count))


def _clean(partitions: int, files: int, **extra: str) -> CleanMetadata:
    return CleanMetadata(
        start_clean_time="20240104000000000",
        time_taken_ms=-1,
        total_files_deleted=partitions * files,
        earliest_commit_to_retain="20240102000000000",
        last_completed_commit_timestamp="20240103000000000",
        partition_metadata={
            f"p={p}": CleanPartitionMetadata(
                f"p={p}", "KEEP_LATEST_COMMITS", _names(p, files), _names(p, files), ()
            )
            for p in range(partitions)
        },
        extra_metadata=extra,
    )


def _with_record(change: Callable[[dict[str, object]], None]) -> bytes:
    record = avro.read_container(encode_clean_metadata(_clean(3, 2, savepointed_timestamps="1")), path="x")
    change(record)
    return avro.write_container("HoodieCleanMetadata", record)


def _oldest_schema() -> bytes:
    """Hudi 0.5's clean metadata: no lastCompletedCommitTimestamp, bootstrap lists or extra metadata."""
    schema = copy.deepcopy(avro.schema_json("HoodieCleanMetadata"))
    keep = ("startCleanTime", "timeTakenInMillis", "totalFilesDeleted", "earliestCommitToRetain",
            "partitionMetadata", "version")
    schema["fields"] = [f for f in schema["fields"] if f["name"] in keep]  # type: ignore[index, union-attr]
    record = avro.read_container(encode_clean_metadata(_clean(2, 3)), path="x")
    out = io.BytesIO()
    fastavro.writer(out, schema, [{k: v for k, v in record.items() if k in keep} | {"version": None}])
    return out.getvalue()


def _version_1() -> bytes:
    def full_paths(record: dict[str, object]) -> None:
        record["version"] = 1
        for meta in record["partitionMetadata"].values():  # type: ignore[union-attr]
            folder = f"hdfs://nn/t/{meta['partitionPath']}"
            meta["successDeleteFiles"] = [f"{folder}/{n}" for n in meta["successDeleteFiles"]]
    return _with_record(full_paths)


def _bootstrap(record: dict[str, object]) -> None:
    record["bootstrapPartitionMetadata"] = dict(record["partitionMetadata"])  # type: ignore[call-overload]


SYNTHETIC = {
    "version 2 with savepoints": lambda: encode_clean_metadata(_clean(3, 4, savepointed_timestamps="1,2")),
    "no partitions, no boundary": lambda: encode_clean_metadata(CleanMetadata("1", 0, 0, "", "", {})),
    "version 3": lambda: _with_record(lambda r: r.update(version=3)),
    "version 1 full paths": _version_1,
    "bootstrap lists": lambda: _with_record(_bootstrap),
    "oldest schema": _oldest_schema,
    "many files": lambda: encode_clean_metadata(_clean(50, 200, savepointed_timestamps="")),
}


@pytest.mark.parametrize("make", SYNTHETIC.values(), ids=SYNTHETIC.keys())
def test_the_summary_equals_the_full_decode(make: Callable[[], bytes]) -> None:
    data = make()
    full = decode_clean_metadata(data, path="x")

    summary = decode_clean_summary(data, path="x")

    lists = summary.partition_metadata
    assert isinstance(lists, LazyPartitions) and not lists.is_decoded
    top = ("start_clean_time", "time_taken_ms", "total_files_deleted", "earliest_commit_to_retain",
           "last_completed_commit_timestamp", "extra_metadata", "version")
    assert {k: getattr(summary, k) for k in top} == {k: getattr(full, k) for k in top}
    assert not lists.is_decoded  # the top-level fields did not need the lists
    assert summary == full and hash(summary) == hash(full)
    assert lists.is_decoded and dict(lists) == dict(full.partition_metadata)


def test_the_summary_checks_top_level_fields_as_the_full_decode_does() -> None:
    schema = copy.deepcopy(avro.schema_json("HoodieCleanMetadata"))
    for f in schema["fields"]:  # type: ignore[union-attr]
        if f["name"] == "earliestCommitToRetain":
            f["type"] = "long"
    record = avro.read_container(encode_clean_metadata(_clean(1, 1)), path="x") | {"earliestCommitToRetain": 7}
    out = io.BytesIO()
    fastavro.writer(out, schema, [record])
    path = "t/.hoodie/timeline/1.clean"
    messages = []
    for decode in (decode_clean_metadata, decode_clean_summary):
        with pytest.raises(CorruptMetadataError) as error:
            decode(out.getvalue(), path=path)
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    assert "clean metadata.earliestCommitToRetain to be a string, found int 7" in messages[1]


def test_a_clean_truncated_inside_its_lists_is_refused_at_once() -> None:
    data = encode_clean_metadata(_clean(20, 50))
    path = "t/.hoodie/timeline/1.clean"
    with pytest.raises(CorruptMetadataError, match=f"Cannot decode {path}: expected an Avro object container"):
        decode_clean_summary(data[: len(data) // 2], path=path)


def _cleaned_table(path: Path) -> tuple[TableBuilder, TableDeclaration]:
    builder = TableBuilder(path, name="t", partitions=[f"p={i}" for i in range(6)], tiny=True)
    builder.commit(writes=3)
    for _ in range(3):
        builder.commit(updates=3)
    keep_one = CleanPolicy(CleanPolicyName.KEEP_LATEST_COMMITS, commits_retained=1)
    decl = TableDeclaration(name="t", path=str(path), source_file="tables/t.yml", clean=keep_one,
                            file_sizing=FileSizing(small_file_limit=0))
    done = apply_table(decl, None, now=NOW, spark_settings=SparkSettings(),
                       deleter_factory=lambda: lambda s, ps: [DeleteResult(p, s.delete(p)) for p in ps])
    assert done.status == "success" and done.files_deleted > 0, done
    return builder, decl


def test_the_table_metadata_leaves_the_last_cleans_lists_undecoded(tmp_path: Path) -> None:
    _cleaned_table(tmp_path / "t")
    storage = LocalStorage(str(tmp_path / "t"))

    meta = read_table_metadata(storage)

    assert meta.last_clean is not None
    instant, clean = meta.last_clean
    lists = clean.partition_metadata
    assert isinstance(lists, LazyPartitions) and not lists.is_decoded
    full = decode_clean_metadata(storage.read(f"{meta.timeline_folder}/{instant.file_name}"), path="x")
    assert clean.earliest_commit_to_retain == full.earliest_commit_to_retain != ""
    assert clean.extra_metadata == full.extra_metadata
    assert clean == full
    assert clean.total_files_deleted == sum(len(m.success_delete_files) for m in lists.values())


def test_an_incremental_plan_after_a_clean_equals_the_full_listing_plan(tmp_path: Path) -> None:
    builder, decl = _cleaned_table(tmp_path / "t")
    latest = read_table_metadata(LocalStorage(str(tmp_path / "t"))).timeline.latest_time
    assert latest is not None
    builder.commit(updates={"p=3": 3}, at=latest.to_datetime() + timedelta(seconds=1))
    builder.commit(updates={"p=5": 3}, at=latest.to_datetime() + timedelta(seconds=2))
    storage = LocalStorage(str(tmp_path / "t"))
    meta = read_table_metadata(storage)

    incremental = plan_one(decl, storage, now=NOW, metadata=meta)
    assert decl.clean is not None
    full = plan_one(replace(decl, clean=replace(decl.clean, incremental=False)), storage, now=NOW)

    assert incremental.clean is not None and incremental.clean.scope.startswith("incremental")
    assert full.clean is not None and full.clean.scope.startswith("full listing")
    assert incremental.clean.files_to_delete and incremental.clean.files_to_delete == full.clean.files_to_delete
    assert meta.last_clean is not None
    lists = meta.last_clean[1].partition_metadata
    assert isinstance(lists, LazyPartitions) and not lists.is_decoded  # planning never needed them
