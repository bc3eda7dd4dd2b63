"""Writing one MDT deltacommit: layout, idempotence, and recovery from an interrupted attempt."""

from __future__ import annotations

import shutil
from pathlib import Path

from runner.hudi.instant import Action, InstantTime
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.actions import MdtCommit, clean_commit
from runner.hudi.mdt.hfile import read_hfile
from runner.hudi.mdt.keys import shard
from runner.hudi.mdt.logfile import HeaderKey, read_log_blocks
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table, read_partition
from runner.hudi.mdt.writer import write_mdt_commit
from runner.hudi.metadata import CleanMetadata, CleanPartitionMetadata, decode_commit_metadata
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for

F9 = "sample_table/cow/v9_txns_simple_meta"
T = "20990101000000000"


def _table(mdt_tables: dict[str, Path], tmp_path: Path) -> Path:
    dest = tmp_path / "t"
    shutil.copytree(mdt_tables[F9], dest)
    return dest


def _commit(schema: str) -> MdtCommit:
    record = rec.file_list_record({"gone.parquet": (0, True)})
    return MdtCommit(T, {"files": {"region=us": rec.encode_record(schema, record)}})


def _write(base: Path) -> list[str]:
    storage = storage_for(str(base))
    schema = read_files_listing(storage, read_table_metadata(storage)).schema
    ticks = iter(["20990101000000005", "20990101000000006"])
    return write_mdt_commit(storage, read_metadata_table(storage), _commit(schema), schema=schema,
                            completion_time=lambda: InstantTime(next(ticks)), created_ms=1)


def test_one_log_per_touched_group_and_a_completed_deltacommit(mdt_tables: dict[str, Path], tmp_path: Path) -> None:
    base = _table(mdt_tables, tmp_path)
    written = _write(base)
    log = base / ".hoodie/metadata/files" / f".files-0000-0_{T}.log.1_0-1-0"
    assert f".hoodie/metadata/files/{log.name}" in written
    (block,) = read_log_blocks(log.read_bytes(), where=str(log))
    assert list(block.header) == [HeaderKey.SCHEMA, HeaderKey.INSTANT_TIME] and block.instant_time == T
    assert [row for row, _ in read_hfile(block.content, where="x").cells] == [b"region=us"]
    done = base / f".hoodie/metadata/.hoodie/timeline/{T}_20990101000000005.deltacommit"
    meta = decode_commit_metadata(done.read_bytes(), path=str(done))
    (stat,) = meta.partition_to_write_stats["files"]
    assert (stat.path, stat.num_writes, stat.file_size_in_bytes) == (f"files/{log.name}", 1, log.stat().st_size)
    assert meta.operation_type == "UPSERT_PREPPED" and "_hoodie_commit_time" not in meta.extra_metadata["schema"]
    assert (base / f".hoodie/metadata/.hoodie/timeline/{T}.deltacommit.requested").read_bytes() == b""
    assert _write(base) == []  # completed: a second call changes nothing


def test_an_interrupted_attempt_s_logs_are_replaced(mdt_tables: dict[str, Path], tmp_path: Path) -> None:
    base = _table(mdt_tables, tmp_path)
    (base / f".hoodie/metadata/.hoodie/timeline/{T}.deltacommit.requested").write_bytes(b"")
    garbage = base / ".hoodie/metadata/column_stats" / f".col-stats-0001-0_{T}.log.1_7-7-7"
    garbage.write_bytes(b"#HUDI#half-written")
    _write(base)
    assert not garbage.exists()
    storage = storage_for(str(base))
    meta = read_table_metadata(storage)
    mdt = read_metadata_table(storage)
    assert any(i.time == T and i.action is Action.DELTA_COMMIT and i.is_completed for i in mdt.timeline.instants)
    read_partition(storage, meta, mdt, "column_stats")  # would fail on the half-written log
    assert "gone.parquet" not in read_files_listing(storage, meta, mdt).files["region=us"]


def test_column_stats_keys_land_in_their_shard_sorted(mdt_tables: dict[str, Path], tmp_path: Path) -> None:
    # The writer sorts once and shards in bulk; each log must hold exactly the keys the one-key
    # `shard` assigns to its group, in byte order, as Hudi's reader binary-searches them.
    base = _table(mdt_tables, tmp_path)
    storage = storage_for(str(base))
    data = read_table_metadata(storage)
    schema = read_files_listing(storage, data).schema
    names = [f"{i:04d}-aaaa-0_0-1-2_20260101000000000.parquet" for i in range(300)]
    clean = CleanMetadata(T, 1, len(names), "", "", {
        "region=us": CleanPartitionMetadata("region=us", "KEEP_LATEST_FILE_VERSIONS", tuple(names), tuple(names), ())},
        {}, 2)
    commit = clean_commit(T, clean, mdt_partitions=("files", "column_stats"), stats_columns=("a", "é", "b"),
                          schema=schema)
    ticks = iter(["20990101000000005"])
    write_mdt_commit(storage, read_metadata_table(storage), commit, schema=schema,
                     completion_time=lambda: InstantTime(next(ticks)), created_ms=1)
    folder = base / ".hoodie/metadata/column_stats"
    groups = sorted(
        {p.name.split("_")[0].lstrip(".") for p in folder.iterdir() if "-0000-0" in p.name or "-0001-0" in p.name}
    )
    assert len(groups) == 2
    expected: dict[int, list[bytes]] = {0: [], 1: []}
    for key in commit.records["column_stats"]:
        expected[shard(key, 2)].append(key.encode())
    for index, group in enumerate(groups):
        (log,) = folder.glob(f".{group}_{T}.log.*")
        (block,) = read_log_blocks(log.read_bytes(), where=str(log))
        cells = read_hfile(block.content, where=str(log)).cells
        assert [row for row, _ in cells] == sorted(expected[index])
        assert all(value == commit.records["column_stats"][row.decode()] for row, value in cells)
