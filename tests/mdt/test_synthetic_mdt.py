"""Synthetic tables with a metadata table are laid out as Hudi lays them out, and readers agree.

hudi-rs lists table-version-8 tables through the MDT `files` partition, so on v8 it is an
independent check of what the builder (through the runner's MDT writer) recorded; on v6 it lists
storage, and our MDT reader's agreement with storage is the check.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.mdt.hfile import CHECKSUM_CRC32C, read_hfile
from runner.hudi.mdt.logfile import BlockType, HeaderKey, read_log_blocks
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table
from runner.hudi.state import read_table_metadata, read_table_state
from runner.storage import storage_for
from runner.testing import COPY_ON_WRITE, TableBuilder
from tests.mdt.synthetic import VARIANT_IDS, VARIANTS, build_with_mdt, expected_rows, latest_rows
from tests.testing.test_table_builder import builder_slices, hudi_slices


@pytest.mark.parametrize(("version", "table_type", "partitioned"), VARIANTS, ids=VARIANT_IDS)
def test_readers_agree_with_the_synthetic_metadata_table(
    tmp_path: Path, version: int, table_type: str, partitioned: bool
) -> None:
    b = build_with_mdt(tmp_path / "t", version, table_type, partitioned)
    storage = storage_for(b.path)

    health = check_metadata_table(storage, read_table_state(storage))
    assert health.ok, health.to_json()
    assert hudi_slices(b.path) == builder_slices(b)
    assert latest_rows(b.path) == expected_rows(b)
    meta = read_table_metadata(storage)
    mdt = read_metadata_table(storage)
    writes = {i.time for i in meta.timeline.completed_writes}
    assert writes <= {i.time for i in mdt.timeline.instants if i.is_completed}
    listing = read_files_listing(storage, meta, mdt)
    assert listing.partitions == ({"region=eu", "region=us"} if partitioned else {""})


@pytest.mark.parametrize("partitioned", [True, False])
def test_hudi_rs_lists_a_v8_table_through_the_synthetic_mdt(tmp_path: Path, partitioned: bool) -> None:
    # A file deleted behind the MDT's back is still listed by a reader that uses the MDT, and
    # reading it fails; a storage listing would simply not see it.
    b = build_with_mdt(tmp_path / "t", 8, COPY_ON_WRITE, partitioned)
    (s,) = [s for s in b.latest_slices() if s.base_file][:1]
    Path(b.path, s.partition, s.base_file).unlink()
    assert s.base_file in {name for *_, base, _ in hudi_slices(b.path) for name in [base]}
    with pytest.raises(Exception, match=r"NotFound|No such file"):
        latest_rows(b.path)


def test_v6_layout_log_versions_over_the_initialization_slice(tmp_path: Path) -> None:
    b = TableBuilder(tmp_path / "t", name="t", partitions=("p=1",), version=6, metadata_table=True)
    t1, t2 = b.commit(writes=1), b.commit(updates=1)
    files = tmp_path / "t/.hoodie/metadata/files"
    init = "00000000000000010"
    assert sorted(p.name for p in files.iterdir()) == [
        f".files-0000-0_{init}.log.1_0-0-0",
        f".files-0000-0_{init}.log.2_0-1-0",
        f".files-0000-0_{init}.log.3_0-1-0",
        ".hoodie_partition_metadata",
        f"files-0000-0_0-0-0_{init}.hfile",
    ]
    timeline = tmp_path / "t/.hoodie/metadata/.hoodie"
    assert {p.name for p in timeline.iterdir() if "deltacommit" in p.name} == {
        f"{t}.deltacommit{s}" for t in (init, t1, t2) for s in ("", ".inflight", ".requested")
    }
    (init_block,) = read_log_blocks((files / f".files-0000-0_{init}.log.1_0-0-0").read_bytes(), where="init")
    assert init_block.block_type is BlockType.DELETE and init_block.instant_time == init
    (block,) = read_log_blocks((files / f".files-0000-0_{init}.log.3_0-1-0").read_bytes(), where="log")
    assert block.instant_time == t2
    hfile = read_hfile(block.content, where="log")
    assert hfile.checksum_type == CHECKSUM_CRC32C
    assert hfile.file_info[b"hfile.LASTKEY"].endswith(b"\x7f" + b"\xff" * 7 + b"\x04")  # HBase's whole key
    commit = json.loads((timeline / f"{t2}.deltacommit").read_text())  # layout 1: Jackson JSON
    (stat,) = commit["partitionToWriteStats"]["files"]
    assert stat["prevCommit"] == init and stat["logVersion"] == 3
    assert stat["baseFile"] == f"files-0000-0_0-0-0_{init}.hfile"
    assert stat["logFiles"][-1] == f".files-0000-0_{init}.log.3_0-1-0"
    props = (tmp_path / "t/.hoodie/hoodie.properties").read_text()
    assert "hoodie.table.metadata.partitions=files" in props
    assert read_metadata_table(storage_for(b.path)).config.timeline_layout_version == 1
    assert block.header[HeaderKey.SCHEMA] == hfile.file_info[b"schema"].decode()


@pytest.mark.parametrize("version", [6, 8])
def test_synthetic_index_partitions_hold_every_live_base_file_from_its_footer(tmp_path: Path, version: int) -> None:
    # column_stats: the footer's statistics of every base file a write added (checked with a
    # reading of the footer independent of the builder's: pyarrow's row-group statistics), in
    # shards by Java's String.hashCode; bloom_filters: the DYNAMIC_V0 filter of the file's keys.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from runner.hudi import bloom
    from runner.hudi.mdt import keys
    from tests.mdt.synthetic import index_records

    b = build_with_mdt(tmp_path / "t", version, "MERGE_ON_READ", False, ("bloom_filters", "column_stats"))
    assert b.metadata_table is not None
    storage = storage_for(b.path)
    assert check_metadata_table(storage, read_table_state(storage)).ok
    assert latest_rows(b.path) == expected_rows(b)  # hudi-rs decodes the wider record schema (v8)
    props = (tmp_path / "t/.hoodie/hoodie.properties").read_text()
    assert "hoodie.table.metadata.partitions=bloom_filters,column_stats,files" in props
    assert Path(b.path, ".hoodie/.index_defs/index.json").exists() == (version == 8)
    records = index_records(b.path)
    stats_partition = "" if version == 6 else "."  # Hudi 0.x's commits hash the path as it is
    bases = sorted(p for p in Path(b.path).glob("*.parquet"))
    assert bases
    for f in bases:
        table = pq.read_table(f)
        for column in b.metadata_table.stats_columns:
            stats = records["column_stats"][keys.column_stats_key(column, stats_partition, f.name)]
            got = stats["ColumnStatsMetadata"]
            values = table.column(column)
            assert (got["valueCount"], got["nullCount"]) == (len(values), values.null_count), (f.name, column)
            assert got["minValue"][1]["value"] == pa.compute.min(values).as_py(), (f.name, column)
            assert got["maxValue"][1]["value"] == pa.compute.max(values).as_py(), (f.name, column)
        bloom_record = records["bloom_filters"][keys.bloom_filter_key(stats_partition, f.name)]["BloomFilterMetadata"]
        record_keys = table.column("_hoodie_record_key").combine_chunks()
        assert bloom_record["bloomFilter"] == bloom.serialize(record_keys).encode()
        assert bloom_record["type"] == "DYNAMIC_V0" and not bloom_record["isDeleted"]
        assert bloom_record["timestamp"] == f.name.rsplit("_", 1)[1].split(".")[0]
    for index, prefix in (("column_stats", "col-stats"), ("bloom_filters", "bloom-filters")):
        logs = [p.name for p in Path(b.path, ".hoodie/metadata", index).iterdir() if ".log." in p.name]
        assert {n.split("_")[0] for n in logs} == {f".{prefix}-0000-0", f".{prefix}-0001-0"}
