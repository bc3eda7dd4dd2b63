"""The writer's gzip base files through `parquet_deflate`: read as the files pyarrow's own writer made
before (the `hudi` reader, pyarrow, parquet-mr), sized and rolled over as before, and never published
half-written when a row group fails mid-encode."""

from __future__ import annotations

import datetime as dt
import io
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import runner
from runner.hudi import parquet_deflate
from runner.storage import LocalStorage
from runner.writer import files
from runner.writer.schema import PARTITION_PATH, RECORD_KEY, arrow_schema, file_avro_schema_json
from tests.writer.writer_helpers import oracle_rows, table_yaml

INSTANT = "20261123080000000"
SPARK_SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
]}


def _arrow_writer(sink: Any, schema: pa.Schema, *, compression: str, compression_level: int | None = None,
                  deflate_pool: bool = True, **options: Any) -> pq.ParquetWriter:
    """The writer before the change: pyarrow's, zlib at the same level (inside Arrow: no pool to use)."""
    return pq.ParquetWriter(sink, schema, compression=compression, compression_level=compression_level, **options)


def _rows(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    regions = pa.array(np.array(["eu", "us", "ap", "sa"])[ids % 4])
    return pa.table({
        "id": ids,
        "region": regions,
        "name": pc.binary_join_element_wise("name-", pa.array(ids).cast(pa.string()), ""),
        "ts": pa.array(ids % 7, pa.int64()),
        "amount": pa.array([None if i % 5 == 0 else i / 3 for i in ids.tolist()], pa.float64()),
        "at": pa.array([dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i) for i in ids.tolist()],
                       pa.timestamp("us", tz="UTC")),
        "note": pa.array(["" if i % 3 == 0 else None if i % 3 == 1 else "x" * (i % 40) for i in ids.tolist()]),
    })


def _user_rows(base: Path) -> list[dict[str, Any]]:
    return oracle_rows(base, columns=("_hoodie_record_key", "_hoodie_partition_path", "id", "region", "name", "ts",
                                      "amount", "at", "note"))


def _by_keys(paths: list[Path]) -> dict[tuple[str, ...], pa.Table]:
    """Each file's records but the instant's meta columns, keyed by its sorted record keys."""
    out = {}
    for path in paths:
        table = pq.read_table(path).drop_columns(["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name"])
        out[tuple(sorted(table.column(RECORD_KEY).to_pylist()))] = table
    return out


def test_written_tables_read_as_those_pyarrows_writer_wrote(
    spark: Any, project: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same bulk insert and upsert into two copies, one through pyarrow's writer (as before the
    change): the bulk insert's files hold the same records in the same order; after the upsert the
    `hudi` reader reads the same rows (which small file takes how many inserts may differ: it
    follows the files' sizes), and parquet-mr reads every base file as pyarrow does. Every file is
    GZIP with the same footer keys. Four partitions: files written at once by the writer's threads."""
    sizing = "file_sizing:\n  max_file_size: 600000\n  small_file_limit: 550000\n  insert_split_size: 3000\n"
    ours_root = project(t=table_yaml("t", sizing=sizing))
    old_root = shutil.copytree(ours_root, tmp_path / "old", symlinks=True)
    ours, old = ours_root / "warehouse" / "t", old_root / "warehouse" / "t"
    update = pa.concat_tables([_rows(2_000, 5_000), _rows(3_000, 9_000)])

    runner.write(_rows(8_000), "t", operation="bulk_insert", project_dir=ours_root)
    with monkeypatch.context() as patch:
        patch.setattr(files, "parquet_writer", _arrow_writer)
        runner.write(_rows(8_000), "t", operation="bulk_insert", project_dir=old_root)
    first = _by_keys(sorted(ours.rglob("*.parquet")))
    assert len(first) == 4 and first.keys() == _by_keys(sorted(old.rglob("*.parquet"))).keys()
    for keys, table in _by_keys(sorted(old.rglob("*.parquet"))).items():
        assert first[keys].equals(table)

    runner.write(update, "t", project_dir=ours_root)
    with monkeypatch.context() as patch:
        patch.setattr(files, "parquet_writer", _arrow_writer)
        runner.write(update, "t", project_dir=old_root)

    rows = _user_rows(ours)
    assert rows == _user_rows(old)
    assert len(rows) == 8_000 + 3_000  # 2,000 updated, 3,000 new
    ours_files, old_files = sorted(ours.rglob("*.parquet")), sorted(old.rglob("*.parquet"))
    assert len(ours_files) == len(old_files) >= 8
    for path in ours_files:
        metadata = pq.ParquetFile(path).metadata
        assert {metadata.row_group(r).column(c).compression for r in range(metadata.num_row_groups)
                for c in range(metadata.num_columns)} == {"GZIP"}
        assert set(metadata.metadata) == set(pq.ParquetFile(old_files[0]).metadata.metadata)
    # parquet-mr reads every base file as pyarrow does.
    columns = ("_hoodie_partition_path", "_hoodie_record_key", "_hoodie_file_name", "id", "name", "note", "amount",
               "at")
    read = sorted(tuple(r[c] for c in columns) for r in spark.read.parquet(*[str(p) for p in ours_files]).collect())
    # (Spark's timestamps come back naive, in the session's zone, UTC here)
    expected = sorted(tuple(r[c].replace(tzinfo=None) if c == "at" else r[c] for c in columns)
                      for p in ours_files for r in pq.read_table(p).to_pylist())
    assert read == expected and len(read) > len(rows)


def _context(root: Path, max_file_size: int = 1 << 40) -> files.FileContext:
    return files.FileContext(
        storage=LocalStorage(str(root)), instant=INSTANT, write_token="0-0-0", partition_id=0,
        schema=arrow_schema(SPARK_SCHEMA), avro_schema=file_avro_schema_json(SPARK_SCHEMA, "t"),
        max_file_size=max_file_size, avg_record_size=100,
    )


def _handle_rows(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    keys = pa.array(ids).cast(pa.string())
    rng = np.random.default_rng(7)
    names = pa.array(rng.integers(0, 1 << 60, n)).cast(pa.string())  # random digits: little to compress
    return pa.table({"id": ids, "name": names, RECORD_KEY: keys, PARTITION_PATH: pa.repeat(pa.scalar("p"), n)})


def _sizes(root: Path, monkeypatch: pytest.MonkeyPatch, *, old: bool, max_file_size: int
           ) -> list[tuple[int, int, int]]:
    """(rows, bytes before the footer, file size) of each file a create handle rolls over to."""
    with monkeypatch.context() as patch:
        if old:
            patch.setattr(files, "parquet_writer", _arrow_writer)
        ctx = _context(root, max_file_size)
        handle = files.CreateHandle(ctx, "p", "group-0")
        rows = _handle_rows(250_000)
        for start in range(0, rows.num_rows, 25_000):
            handle.write(rows.slice(start, 25_000))
        written = handle.close()
    out = []
    for w in written:
        data = (root / "p" / w.name).read_bytes()
        assert w.size == len(data)
        footer = int.from_bytes(data[-8:-4], "little") + 8
        out.append((w.num_writes, len(data) - footer, len(data)))
    assert [w.file_id for w in written] == [f"group-{i}" for i in range(len(written))]
    assert sum(r for r, _, _ in out) == rows.num_rows
    table = pa.concat_tables([pq.read_table(root / "p" / w.name, columns=["id"]) for w in written])
    assert table.column("id").to_pylist() == rows.column("id").to_pylist()
    return out


def test_files_roll_over_at_max_file_size_as_with_pyarrows_writer(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`rows_that_fit` and the roll-over read `sink.tell()`: pages smaller than zlib's fit more rows in
    a file, and a full file still reaches `max_file_size` and passes it by a few percent at most, as
    with pyarrow's writer (the footer, ~0.9 MB of bloom filter here, comes on top, as it did)."""
    max_file_size = 1_000_000
    ours = _sizes(tmp_path / "ours", monkeypatch, old=False, max_file_size=max_file_size)
    old = _sizes(tmp_path / "old", monkeypatch, old=True, max_file_size=max_file_size)
    for sizes in (ours, old):
        assert len(sizes) >= 3
        for _rows, pages, _ in sizes[:-1]:  # every full file reached the limit, by less than a row group
            assert max_file_size <= pages < max_file_size * 1.1
        assert sizes[-1][1] < max_file_size
    # Pages no larger than zlib's: as many or fewer files, the same or more rows in each full one.
    assert len(ours) <= len(old)
    assert sum(p for _, p, _ in ours) <= sum(p for _, p, _ in old)


def test_a_failure_mid_row_group_publishes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """libdeflate failing after some pages are on disk: the handle aborts, the temporary file goes."""
    ctx = _context(tmp_path)
    handle = files.CreateHandle(ctx, "p", "group-0")
    handle.write(_handle_rows(files.ROW_GROUP_ROWS))  # a first row group, written
    calls = {"n": 0}
    real = parquet_deflate.deflate.gzip_compress

    def failing(data: Any, level: int) -> bytes:
        calls["n"] += 1
        if calls["n"] > 3:
            raise MemoryError("injected")
        return bytes(real(data, level))

    monkeypatch.setattr(parquet_deflate.deflate, "gzip_compress", failing)
    with pytest.raises(MemoryError, match="injected"):
        handle.write(_handle_rows(files.ROW_GROUP_ROWS))
    assert calls["n"] > 3
    assert not [p for p in (tmp_path / "p").iterdir() if p.name != ".hoodie_partition_metadata"]


def test_a_table_of_another_schema_aborts_the_open_file(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    open_file = files._OpenFile(ctx, "p", "group-0", prev_commit=None, io_type="CREATE")
    good = files.stamp(ctx, _handle_rows(100), open_file.name, 0)
    open_file.write(good)
    size = open_file.size
    with pytest.raises(ValueError, match="schema"):
        open_file.write(good.cast(good.schema.set(5, pa.field("id", pa.int32()))))
    assert open_file.size == size  # nothing of the refused table reached the file
    open_file.abort()
    assert not [p for p in (tmp_path / "p").iterdir() if p.name != ".hoodie_partition_metadata"]


def test_many_files_written_at_once_in_threads_are_each_whole(tmp_path: Path) -> None:
    """The writer's thread pool writes files at once: each `DeflatingWriter` is its own."""
    from concurrent.futures import ThreadPoolExecutor

    tables = [pa.table({"i": pa.array(np.arange(k, k + 60_000)),
                        "s": pa.array([f"{k}-{j % 97}" for j in range(60_000)])}) for k in range(6)]

    def write(table: pa.Table) -> bytes:
        sink = io.BytesIO()
        writer = parquet_deflate.DeflatingWriter(sink, table.schema, store_schema=False)
        writer.write_table(table, row_group_size=20_000)
        writer.close()
        return sink.getvalue()

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(write, tables))
    for table, data in zip(tables, results, strict=True):
        assert pq.read_table(io.BytesIO(data)).equals(table)
        assert data == write(table)  # the same bytes as written alone


def test_the_spark_engine_deflates_in_its_tasks(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files written inside Spark tasks (Python workers) go through `parquet_deflate` too and read back."""
    from runner.writer import local

    monkeypatch.setattr(local, "PINNED", "spark")
    root = project(t=table_yaml("t"))
    data = [(i, ("eu", "us", "ap", "sa")[i % 4], f"name-{i % 50}" if i % 3 else "", i % 7) for i in range(3_000)]
    df = spark.createDataFrame(data, "id long, region string, name string, ts long")
    result = runner.write(df, "t", operation="bulk_insert", project_dir=root)
    assert result.engine == "spark"
    base = root / "warehouse" / "t"
    rows = oracle_rows(base, columns=("id", "region", "name", "ts"))
    assert sorted((r["id"], r["region"], r["name"], r["ts"]) for r in rows) == data
    paths = sorted(base.rglob("*.parquet"))
    assert len(paths) >= 4
    for path in paths:
        metadata = pq.ParquetFile(path).metadata
        assert metadata.row_group(0).column(0).compression == "GZIP"
        assert metadata.created_by.startswith("parquet-cpp-arrow")
