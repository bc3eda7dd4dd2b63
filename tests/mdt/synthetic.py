"""Synthetic tables with a metadata table, for the MDT tests: every table version the runner
maintains metadata tables for that the builder writes (6, 8), both table types, partitioned or not."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from runner.testing import COPY_ON_WRITE, MERGE_ON_READ, TableBuilder

VARIANTS = [
    (version, table_type, partitioned)
    for version in (6, 8)
    for table_type in (COPY_ON_WRITE, MERGE_ON_READ)
    for partitioned in (True, False)
]
VARIANT_IDS = [f"v{v}-{'cow' if t == COPY_ON_WRITE else 'mor'}-{'part' if p else 'nonpart'}" for v, t, p in VARIANTS]


def build_with_mdt(path: Path, version: int, table_type: str, partitioned: bool) -> TableBuilder:
    """Inserts, updates (new base files on COW, logs on MOR), an insert overwrite and, on MOR, a
    compaction: older file versions for a clean, and MDT records of every kind of write."""
    partitions = ("region=eu", "region=us") if partitioned else ()
    b = TableBuilder(
        path, name="orders", partitions=partitions, version=version, table_type=table_type, metadata_table=True
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
