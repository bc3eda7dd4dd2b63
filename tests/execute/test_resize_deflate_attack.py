"""The resize rewrite of gzip inputs through `parquet_deflate`: the file pyarrow's writer made before
(pages, physical types, footer), GZIP still, read alike by pyarrow, parquet-mr and the `hudi` reader."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runner.execute import resize_job
from runner.execute.resize import run_resize
from runner.execute.resize_job import GroupRewrite, rewrite_group
from runner.hudi import bloom
from runner.storage import LocalStorage
from tests.execute.test_resize import V6, add_small_files, clock, plan, snapshot
from tests.hudi.test_parquet_deflate import _pages

NAMES = ("p/a-0_0-1-1_20240101000000000.parquet", "p/b-0_0-1-1_20240102000000000.parquet")


def _input(seed: int, n: int) -> pa.Table:
    rng = random.Random(seed)
    keys = [f"k{seed}-{i:06d}" for i in range(n)]
    return pa.table({
        "_hoodie_commit_time": pa.array([f"2024010{seed + 1}000000000"] * n),
        "_hoodie_record_key": pa.array(keys),
        "_hoodie_file_name": pa.array([NAMES[seed].split("/")[1]] * n),
        "ts": pa.array([None if i % 17 == 0 else dt.datetime(1899, 12, 31) + dt.timedelta(hours=i * 7, microseconds=i)
                        for i in range(n)], pa.timestamp("us")),
        "region": pa.array([("eu", "us", "ap")[i % 3] for i in range(n)]),
        "payload": pa.array([f"{rng.getrandbits(96):024x}" if i % 5 else "" for i in range(n)]),
        "price": pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(10, 2)),
        "tags": pa.array([None if i % 7 == 0 else [f"t{i % 4}"] * (i % 3) for i in range(n)], pa.list_(pa.string())),
        "point": pa.array([None if i % 11 == 0 else {"x": i, "y": str(i % 9)} for i in range(n)],
                          pa.struct([("x", pa.int64()), ("y", pa.string())])),
    })


def _old_writer(out: Any, schema: pa.Schema, *, compression: str, compression_level: int | None = None,
                **options: Any) -> pq.ParquetWriter:
    """The rewrite's writer before the change: pyarrow's, at its default gzip level."""
    return pq.ParquetWriter(out, schema, compression=compression, compression_level=compression_level, **options)


def _rewrite(root: Path, *, old: bool, monkeypatch: pytest.MonkeyPatch) -> Path:
    (root / "p").mkdir(parents=True)
    for seed, name in enumerate(NAMES):
        pq.write_table(_input(seed, 6_000 + 1_000 * seed), root / name, compression="gzip", row_group_size=2_500,
                       use_deprecated_int96_timestamps=True, use_compliant_nested_type=False, store_schema=False)
    with monkeypatch.context() as patch:
        if old:
            patch.setattr(resize_job, "parquet_writer", _old_writer)
        done = rewrite_group(LocalStorage(str(root)), GroupRewrite("p", "new-0", NAMES), "20240103000000000", "0-0-0",
                             batch_rows=1_000, buffer_bytes=300_000)
    assert done.records == 13_000 and done.size == (root / done.path).stat().st_size
    return root / done.path


def test_a_gzip_group_is_rewritten_as_pyarrows_writer_rewrote_it(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = _rewrite(tmp_path / "ours", old=False, monkeypatch=monkeypatch)
    old = _rewrite(tmp_path / "old", old=True, monkeypatch=monkeypatch)
    a, b = pq.ParquetFile(ours), pq.ParquetFile(old)
    assert a.metadata.num_row_groups == b.metadata.num_row_groups >= 3
    schema = a.metadata.schema
    assert [schema.column(i).physical_type for i in range(len(schema))] == \
        [b.metadata.schema.column(i).physical_type for i in range(len(schema))]
    assert schema.column(3).physical_type == "INT96"  # ts, as the inputs have it
    assert {a.metadata.row_group(r).column(c).compression for r in range(a.metadata.num_row_groups)
            for c in range(a.metadata.num_columns)} == {"GZIP"}
    assert a.metadata.metadata == b.metadata.metadata  # bloom filter, key range, Avro schema
    table = a.read()
    assert table.equals(b.read())
    keys = pa.concat_arrays([_input(s, 6_000 + 1_000 * s).column("_hoodie_record_key").combine_chunks()
                             for s in (0, 1)])
    footer = a.metadata.metadata
    assert (footer[b"hoodie_min_record_key"], footer[b"hoodie_max_record_key"]) == (b"k0-000000", b"k1-006999")
    assert footer[b"org.apache.hudi.bloomfilter"].decode() == bloom.serialize(keys)
    # Every page inflates to the bytes pyarrow's writer encoded (deflated at 6 now, 9 before).
    assert _pages(ours.read_bytes()) == _pages(old.read_bytes())
    # parquet-mr reads the INT96 timestamps, nested columns and decimals as pyarrow does.
    got = sorted((r["_hoodie_record_key"], r["ts"], r["payload"], r["price"], r["tags"],
                  None if r["point"] is None else (r["point"]["x"], r["point"]["y"]))
                 for r in spark.read.parquet(str(ours)).collect())
    want = sorted((r["_hoodie_record_key"], r["ts"], r["payload"], r["price"], r["tags"],
                   None if r["point"] is None else (r["point"]["x"], r["point"]["y"])) for r in table.to_pylist())
    assert got == want


@pytest.fixture
def gzip_small(hudi_fixture: Any) -> Path:
    """v6 COW with gzip small file groups in partitions 10 and 20 (`add_small_files`)."""
    base: Path = hudi_fixture(V6)
    add_small_files(base, "10", 4, seed=1)
    add_small_files(base, "20", 3, seed=3)
    return base


def test_a_resized_gzip_table_reads_the_same_in_every_reader(gzip_small: Path, spark: Any) -> None:
    """End to end on a Hudi 0.14 table topped up with gzip small files: the `hudi` reader's snapshot is
    unchanged; each new base file is GZIP, its key range is its keys', parquet-mr reads its keys."""
    before = snapshot(gzip_small)
    storage, state, step = plan(gzip_small)
    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)
    assert snapshot(gzip_small) == before
    rewritten = [p for p in gzip_small.rglob("*.parquet") if outcome.instants[0] in p.name]
    assert len(rewritten) == len(step.groups) >= 2
    for path in rewritten:
        metadata = pq.ParquetFile(path).metadata
        assert {metadata.row_group(r).column(c).compression for r in range(metadata.num_row_groups)
                for c in range(metadata.num_columns)} == {"GZIP"}
        keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0).to_pylist()
        footer = metadata.metadata
        assert footer[b"hoodie_min_record_key"].decode() == min(keys)
        assert footer[b"hoodie_max_record_key"].decode() == max(keys)
        assert footer[b"org.apache.hudi.bloomfilter"].decode() == bloom.serialize(pa.array(keys))
        assert sorted(r["_hoodie_record_key"] for r in spark.read.parquet(str(path)).collect()) == sorted(keys)


def test_files_the_writer_deflated_qualify_for_binary_copy(tmp_path: Path) -> None:
    """Base files of the writer (now deflated by `parquet_deflate`) are binary-copied, not rewritten:
    their footers and pages pass the copy's checks; the copy reads as its inputs."""
    import numpy as np

    from runner.execute.resize_copy import copy_group
    from runner.execute.resize_job import RewrittenFile
    from runner.writer import files
    from runner.writer.schema import PARTITION_PATH, RECORD_KEY, arrow_schema, file_avro_schema_json

    spark_schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
    ]}
    storage = LocalStorage(str(tmp_path))
    ctx = files.FileContext(storage=storage, instant="20261123080000000", write_token="0-0-0", partition_id=0,
                            schema=arrow_schema(spark_schema), avro_schema=file_avro_schema_json(spark_schema, "t"),
                            max_file_size=1 << 40, avg_record_size=100)
    inputs = []
    for n in range(2):
        ids = np.arange(n * 5_000, (n + 1) * 5_000, dtype=np.int64)
        keys = pa.array(ids).cast(pa.string())
        rows = pa.table({"id": ids, "name": pa.array([f"name-{i % 97}" for i in ids.tolist()]), RECORD_KEY: keys,
                         PARTITION_PATH: pa.repeat(pa.scalar("p"), len(ids))})
        handle = files.CreateHandle(ctx, "p", f"group{n}-0")
        handle.write(rows)
        (written,) = handle.close()
        inputs.append(f"p/{written.name}")
    copied = copy_group(storage, GroupRewrite("p", "new-0", tuple(inputs), binary_copy=True), "20261123090000000",
                        "0-0-0")
    assert isinstance(copied, RewrittenFile), copied  # a str would be why it fell back to a rewrite
    out = pq.ParquetFile(tmp_path / copied.path)
    assert out.metadata.row_group(0).column(0).compression == "GZIP"
    table = out.read()
    before = pa.concat_tables([pq.read_table(tmp_path / p) for p in reversed(inputs)])
    assert sorted(table.column("id").to_pylist()) == sorted(before.column("id").to_pylist())
    assert set(table.column("_hoodie_file_name").to_pylist()) == {copied.path.split("/")[1]}
    assert table.drop_columns(["_hoodie_file_name"]).sort_by("id").equals(
        before.drop_columns(["_hoodie_file_name"]).sort_by("id"))
