"""The records a clean produces in each MDT partition (pure), decoded with the table's schema."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from runner.hudi.mdt import records as rec
from runner.hudi.mdt.actions import clean_commit, unsupported_partitions
from runner.hudi.mdt.keys import bloom_filter_key, column_stats_key, java_string_hash, shard, shards, xxh64
from runner.hudi.mdt.reader import read_files_listing
from runner.hudi.metadata import CleanMetadata, CleanPartitionMetadata
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for

F9 = "sample_table/cow/v9_txns_simple_meta"
BASE = "a4ab4ec1-e213-4941-a4eb-5679f437421f-0_0-209-507_20260307162452329.parquet"
LOG = ".a4ab4ec1-e213-4941-a4eb-5679f437421f-0_20260307162452329.log.1_0-1-0"


def _schema(mdt_tables: dict[str, Path]) -> str:
    storage = storage_for(str(mdt_tables[F9]))
    return read_files_listing(storage, read_table_metadata(storage)).schema


def _clean(partition: str, names: tuple[str, ...], deleted: bool = False) -> CleanMetadata:
    meta = CleanPartitionMetadata(partition, "KEEP_LATEST_FILE_VERSIONS", names, names, (), deleted)
    return CleanMetadata("20260101000000000", 1, len(names), "", "", {partition: meta}, {}, 2)


def test_clean_records_match_hudi(mdt_tables: dict[str, Path]) -> None:
    schema = _schema(mdt_tables)
    commit = clean_commit("20260101000000000", _clean("region=us", (BASE, LOG), deleted=True),
                          mdt_partitions=("files", "column_stats", "bloom_filters", "record_index"),
                          stats_columns=("txn_id", "amount"), schema=schema)
    assert sorted(commit.records) == ["bloom_filters", "column_stats", "files"]
    files = {k: rec.decode_record(schema, v, where="t") for k, v in commit.records["files"].items()}
    assert rec.file_entries(files["region=us"]) == {BASE: (0, True), LOG: (0, True)}
    assert files["region=us"]["type"] == rec.FILE_LIST
    assert rec.file_entries(files[rec.ALL_PARTITIONS_KEY]) == {"region=us": (0, True)}
    stats = commit.records["column_stats"]
    assert len(stats) == 4  # base and log file x 2 columns
    value = rec.decode_record(schema, stats[column_stats_key("amount", "region=us", LOG)], where="t")
    cs = value["ColumnStatsMetadata"]
    assert (value["type"], cs["fileName"], cs["columnName"], cs["isDeleted"]) == (3, LOG, "amount", True)
    assert (cs["minValue"], cs["maxValue"], cs["valueCount"], cs["nullCount"]) == (None, None, -1, -1)
    blooms = commit.records["bloom_filters"]
    assert list(blooms) == [bloom_filter_key("region=us", BASE)]  # base files only
    bloom = rec.decode_record(schema, blooms[bloom_filter_key("region=us", BASE)], where="t")["BloomFilterMetadata"]
    assert bloom == {"type": "", "timestamp": "20260101000000000", "bloomFilter": b"", "isDeleted": True}


def test_a_non_partitioned_table_is_named_dot(mdt_tables: dict[str, Path]) -> None:
    commit = clean_commit("20260101000000000", _clean("", (BASE,)), mdt_partitions=("files",),
                          stats_columns=(), schema=_schema(mdt_tables))
    assert list(commit.records) == ["files"] and list(commit.records["files"]) == ["."]


def test_partitions_a_clean_cannot_update_are_named() -> None:
    parts = (
        "files",
        "column_stats",
        "partition_stats",
        "record_index",
        "secondary_index_x",
        "expr_index_y",
        "vector_z",
    )
    assert unsupported_partitions(parts) == ["vector_z"]  # an expression index is checked by its definition


def test_hashes_match_reference_values() -> None:
    assert xxh64(b"", seed=0) == 0xEF46DB3751D8E999  # XXH64 reference vectors
    assert xxh64(b"abc", seed=0) == 0x44BC2CF5AD770999
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Java's Integer.MIN_VALUE case
    assert 0 <= shard("TXN-001", 10) < 10
    # Hudi: Math.abs(Math.abs(MIN_VALUE) % 3) = |-2| = 2, a valid index (not -2, which Python
    # would silently take from the end of the group list).
    assert shard("polygenelubricants", 3) == 2


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=60), max_size=20), st.integers(min_value=1, max_value=40))
def test_bulk_shards_equal_the_one_key_shard(texts: list[str], groups: int) -> None:
    # The bulk path splits keys at the column/partition head and caches each part; it must agree
    # with the reference fold for every key, including non-ASCII ones (UTF-16 surrogates) and the
    # hash Integer.MIN_VALUE, whose Math.abs stays negative in Java.
    texts += ["polygenelubricants", "x" * 24 + "polygenelubricants", column_stats_key("c", "p=1", "f.parquet")]
    assert shards(texts, groups) == [shard(t, groups) for t in texts]


def test_bulk_shards_over_arrays_equal_the_one_key_shard() -> None:
    # Past _VECTOR_MIN keys the hash runs over Arrow arrays; all keys need one length, and a key
    # hashing to Integer.MIN_VALUE is among them.
    keys_ = [column_stats_key(f"c{i % 16}", f"p={i % 7}", f"{i}.parquet") for i in range(5000)]
    keys_ += ["polygenelubricants" + "x" * 30]
    keys_ = [k[:48].ljust(48, "z") for k in keys_]
    keys_.append("polygenelubricants".rjust(48, "\x00"))  # leading NULs add 0: hash Integer.MIN_VALUE
    assert java_string_hash(keys_[-1]) == -(1 << 31)
    for groups in (1, 2, 3, 10):
        assert shards(keys_, groups) == [shard(k, groups) for k in keys_]


def test_a_clean_without_index_definitions_tombstones_the_column_stats_the_mdt_holds_for_each_file() -> None:
    # Table version 6: Hudi 0.x tombstones the writer's configured columns; the MDT's own records
    # of the file are what those cover. Its commits keyed a non-partitioned root as "", not ".".
    from runner.hudi.mdt.actions import held_by_file
    from runner.testing.metadata_table import metadata_record_schema

    schema = metadata_record_schema(with_indexes=True)
    gone, kept = "f1-0_0-1-0_20260101000000000.parquet", "f2-0_0-1-0_20260101000000000.parquet"

    def live(column: str, partition: str, name: str) -> tuple[str, dict[str, object]]:
        stats = {"fileName": name, "columnName": column, "isDeleted": False}
        return column_stats_key(column, partition, name), {"type": rec.COLUMN_STATS, "ColumnStatsMetadata": stats}

    held = {"column_stats": held_by_file(dict([live("id", "", gone), live("ts", "", gone), live("id", "", kept)]))}
    clean = _clean("", (gone,))
    commit = clean_commit("20260102000000000", clean, mdt_partitions=("files", "column_stats"), stats_columns=(),
                          schema=schema, held=held)
    stats = commit.records["column_stats"]
    assert sorted(stats) == sorted([column_stats_key("id", "", gone), column_stats_key("ts", "", gone)])
    for key, value in stats.items():
        record = rec.decode_record(schema, value, where="t")["ColumnStatsMetadata"]
        assert record["isDeleted"] and record["fileName"] == gone
        assert key == column_stats_key(record["columnName"], "", gone)


def test_bloom_filter_keys_are_the_partition_and_file_part_of_hudis_column_stats_keys(
    mdt_tables: dict[str, Path],
) -> None:
    # No fixture has a bloom_filters partition. Its key (`getBloomFilterIndexKey`: partition id +
    # file id) is the tail of every column-stats key (column id + partition id + file id), which
    # Hudi wrote in the fixtures: check the runner's bloom keys against those tails, partitioned
    # and not, and that a bloom-filter record encodes with Hudi's own record schema.
    from runner.hudi.mdt.reader import read_metadata_table, read_partition

    for fixture in (F9, "sample_table/cow/v9_txns_nonpart_meta"):
        storage = storage_for(str(mdt_tables[fixture]))
        meta = read_table_metadata(storage)
        stats, schema = read_partition(storage, meta, read_metadata_table(storage), "column_stats")
        listing = read_files_listing(storage, meta)
        partition_of = {name: p or "." for p, names in listing.files.items() for name in names}
        checked = 0
        for key, record in stats.items():
            name = record["ColumnStatsMetadata"]["fileName"]
            if name in partition_of:
                assert key[-36:] == bloom_filter_key(partition_of[name], name), (fixture, name)
                checked += 1
        assert checked
        value = rec.encode_record(schema, rec.bloom_filter_record("DYNAMIC_V0", "20260101000000000", b"/w=="))
        decoded = rec.decode_record(schema, value, where=fixture)
        assert decoded["type"] == rec.BLOOM_FILTER and decoded["BloomFilterMetadata"] == {
            "type": "DYNAMIC_V0", "timestamp": "20260101000000000", "bloomFilter": b"/w==", "isDeleted": False}
