"""Synthetic tables with a metadata table, for the MDT tests: every table version the runner
maintains metadata tables for that the builder writes (6, 8), both table types, partitioned or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from runner.testing import COPY_ON_WRITE, MERGE_ON_READ, TableBuilder

VARIANTS = [
    (version, table_type, partitioned)
    for version in (6, 8)
    for table_type in (COPY_ON_WRITE, MERGE_ON_READ)
    for partitioned in (True, False)
]
VARIANT_IDS = [f"v{v}-{'cow' if t == COPY_ON_WRITE else 'mor'}-{'part' if p else 'nonpart'}" for v, t, p in VARIANTS]


def indexes_for(version: int, *, resize: bool = False) -> tuple[str, ...]:
    """The index partitions the runner maintains on synthetic tables of `version`: a resize's
    column stats need the table's index definitions, which Hudi 0.14/0.15 (version 6) do not keep."""
    return ("bloom_filters", "column_stats") if version >= 8 or not resize else ("bloom_filters",)


def build_with_mdt(path: Path, version: int, table_type: str, partitioned: bool,
                   indexes: tuple[str, ...] = ()) -> TableBuilder:
    """Inserts, updates (new base files on COW, logs on MOR), an insert overwrite and, on MOR, a
    compaction: older file versions for a clean, and MDT records of every kind of write.
    `indexes`: MDT index partitions besides `files` (column_stats, bloom_filters)."""
    partitions = ("region=eu", "region=us") if partitioned else ()
    b = TableBuilder(
        path, name="orders", partitions=partitions, version=version, table_type=table_type, metadata_table=True,
        metadata_indexes=indexes,
    )
    b.commit(writes=2)
    b.commit(updates=1)
    b.commit(writes=1, updates=1)
    if table_type == MERGE_ON_READ:
        b.compaction()
    b.commit(updates=1)
    b.insert_overwrite(partitions[-1] if partitions else "")
    b.commit(writes=1)
    return b


COLUMNS = ["_hoodie_commit_time", "_hoodie_record_key", "_hoodie_partition_path", "id", "ts", "amount"]


def latest_rows(path: str | Path, as_of: str | None = None) -> list[dict[str, object]]:
    """What hudi-rs reads (latest, or as of an instant), sorted by id."""
    from hudi import HudiReadOptions, HudiTable

    options = HudiReadOptions() if as_of is None else HudiReadOptions().with_as_of_timestamp(as_of)
    batches = HudiTable(str(path)).read(options)
    if not batches:  # e.g. every file of an old instant was cleaned
        return []
    table = pa.Table.from_batches(batches)
    return table.select(COLUMNS).sort_by("id").to_pylist() if table.num_rows else []


def expected_rows(b: TableBuilder) -> list[dict[str, object]]:
    return b.expected_rows().select(COLUMNS).to_pylist()


def index_records(path: str | Path) -> dict[str, dict[str, dict[str, object]]]:
    """MDT index partition (column_stats, bloom_filters) -> key -> merged record, as readers see them."""
    from runner.hudi.mdt.reader import read_metadata_table, read_partition
    from runner.hudi.state import read_table_metadata
    from runner.storage import storage_for

    storage = storage_for(str(path))
    meta = read_table_metadata(storage)
    mdt = read_metadata_table(storage)
    return {p: read_partition(storage, meta, mdt, p, with_names=True)[0]
            for p in meta.config.metadata_partitions if p in ("column_stats", "bloom_filters")}


def assert_indexed(b: TableBuilder, files: list[Path], instant: str) -> None:
    """Every file's column_stats records are its own footer's statistics, value for value, and its
    bloom_filters record holds its footer's bloom filter, written at `instant`."""
    import pyarrow.parquet as pq

    from runner.hudi.mdt import keys
    from runner.testing.metadata_indexes import footer_column_stats

    assert b.metadata_table is not None
    records = index_records(b.path)
    for f in files:
        partition = str(f.parent.relative_to(b.path)).replace(".", "") or "."
        parquet = pq.ParquetFile(f)
        if "column_stats" in records:
            expected = footer_column_stats(parquet, f.name, b.metadata_table.stats_columns)
            for column, stats in expected.items():
                got = records["column_stats"][keys.column_stats_key(column, partition, f.name)]
                assert got["ColumnStatsMetadata"] == stats, (f.name, column)
        if "bloom_filters" in records:
            footer = parquet.metadata.metadata
            got = records["bloom_filters"][keys.bloom_filter_key(partition, f.name)]["BloomFilterMetadata"]
            assert got == {"type": footer[b"hoodie_bloom_filter_type_code"].decode(), "timestamp": instant,
                           "bloomFilter": footer[b"org.apache.hudi.bloomfilter"], "isDeleted": False}, f.name


def assert_tombstoned(b: TableBuilder, deleted: set[str]) -> None:
    """Every deleted base file (`partition/name`) has only deleted column_stats and bloom_filters records."""
    from runner.hudi.files import BaseFile
    from runner.hudi.mdt import keys

    assert b.metadata_table is not None
    records = index_records(b.path)
    base_files = [p.rpartition("/") for p in deleted if BaseFile.parse(p.rpartition("/")[2]) is not None]
    assert base_files
    stats_by_file: dict[str, list[dict[str, Any]]] = {}
    for record in records.get("column_stats", {}).values():
        stats = record["ColumnStatsMetadata"]
        stats_by_file.setdefault(stats["fileName"], []).append(stats)
    for partition, _, name in base_files:
        pid = partition or "."
        if "column_stats" in records:  # by name: version 6 keys a non-partitioned root as ""
            held = stats_by_file.get(name, [])
            assert sorted(s["columnName"] for s in held) == sorted(b.metadata_table.stats_columns), name
            assert all(s["isDeleted"] for s in held), name
        if "bloom_filters" in records:  # version 6 commits key a non-partitioned root as ""
            held = [records["bloom_filters"].get(keys.bloom_filter_key(p, name)) for p in {pid, partition}]
            assert any(held) and all(r["BloomFilterMetadata"]["isDeleted"] for r in held if r), name
