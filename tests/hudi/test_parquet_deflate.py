"""The deflating writer writes the file Arrow's own GZIP writer would, but for the compressed bytes.

Every test writes the same rows twice, with `pyarrow.parquet.ParquetWriter` at GZIP and with
`DeflatingWriter`, and compares them: the footers field by field (only sizes and offsets may
differ), every page header (only its compressed size), every page's inflated bytes, and the rows
each reader returns (pyarrow here, parquet-mr through Spark below).
"""

from __future__ import annotations

import datetime
import decimal
import gzip
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.hudi import parquet_ids as ids
from runner.hudi.parquet_deflate import DeflatingWriter, parquet_writer
from runner.hudi.thrift_compact import Struct, ThriftList, decode_struct

# Fields that move when pages shrink; everything else must be Arrow's.
# The uncompressed sizes count the page headers as written, whose compressed-size varint may be a
# byte shorter or longer than in Arrow's file: `_pages` checks them against the headers instead.
_MOVED = {
    ("RowGroup", ids.R_FILE_OFFSET), ("RowGroup", ids.R_TOTAL_COMPRESSED),
    ("ColumnMetaData", ids.M_COMPRESSED), ("ColumnMetaData", ids.M_DATA_PAGE),
    ("ColumnMetaData", ids.M_DICTIONARY_PAGE),
    ("RowGroup", ids.R_TOTAL_BYTE_SIZE), ("ColumnMetaData", ids.M_UNCOMPRESSED),
}


def _arrow_gzip(table: pa.Table, *, row_group_size: int, level: int = 6, **options: object) -> bytes:
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, table.schema, compression="gzip", compression_level=level, **options) as writer:
        if table.num_rows:
            writer.write_table(table, row_group_size=row_group_size)
        writer.add_key_value_metadata({"k": "v"})
    return sink.getvalue()


def _deflated(table: pa.Table, *, row_group_size: int, level: int = 6, **options: object) -> bytes:
    sink = io.BytesIO()
    writer = DeflatingWriter(sink, table.schema, level=level, **options)
    if table.num_rows:
        writer.write_table(table, row_group_size=row_group_size)
    writer.add_key_value_metadata({"k": "v"})
    writer.close()
    return sink.getvalue()


def _footer(data: bytes) -> Struct:
    length = int.from_bytes(data[-8:-4], "little")
    return decode_struct(data, what="test", offset=len(data) - 8 - length)[0]


def _same_but_moved(arrow: object, ours: object, where: str = "FileMetaData") -> None:
    if isinstance(arrow, Struct):
        assert isinstance(ours, Struct)
        ids_seen = sorted({f[0] for f in arrow.fields} | {f[0] for f in ours.fields})
        for fid in ids_seen:
            if (where, fid) in _MOVED:
                assert arrow.has(fid) == ours.has(fid), (where, fid)
                continue
            child = {(  "FileMetaData", 4): "RowGroup", ("RowGroup", 1): "ColumnChunk",
                     ("ColumnChunk", 3): "ColumnMetaData"}.get((where, fid), f"{where}.{fid}")
            _same_but_moved(arrow.get(fid), ours.get(fid), child)
    elif isinstance(arrow, ThriftList):
        assert isinstance(ours, ThriftList) and len(arrow.values) == len(ours.values), where
        for a, o in zip(arrow.values, ours.values, strict=True):
            _same_but_moved(a, o, where)
    else:
        assert arrow == ours, where


def _pages(data: bytes) -> list[tuple[Struct, bytes]]:
    """Every page of the file: its header without the compressed size, and its bytes inflated."""
    pages = []
    for rg in _footer(data).get_list(ids.F_ROW_GROUPS):
        assert isinstance(rg, Struct)
        group_uncompressed = 0
        for chunk in rg.get_list(ids.R_COLUMNS):
            assert isinstance(chunk, Struct)
            meta = chunk.get_struct(ids.C_META)
            assert meta is not None and meta.get_int(ids.M_CODEC) == ids.GZIP
            pos = meta.get_int(ids.M_DICTIONARY_PAGE) or meta.get_int(ids.M_DATA_PAGE)
            assert pos is not None
            end = pos + (meta.get_int(ids.M_COMPRESSED) or 0)
            uncompressed = 0
            while pos < end:
                header, body = decode_struct(data, what="test", offset=pos)
                size = header.get_int(ids.P_COMPRESSED_SIZE) or 0
                inflated = gzip.decompress(data[body:body + size])
                assert len(inflated) == header.get_int(ids.P_UNCOMPRESSED_SIZE)
                uncompressed += body - pos + len(inflated)  # the header as written, the page inflated
                header.drop(ids.P_COMPRESSED_SIZE)
                pages.append((header, inflated))
                pos = body + size
            assert pos == end
            assert meta.get_int(ids.M_UNCOMPRESSED) == uncompressed
            group_uncompressed += uncompressed
        assert rg.get_int(ids.R_TOTAL_BYTE_SIZE) == group_uncompressed
    return pages


def _assert_like_arrow(table: pa.Table, *, row_group_size: int, level: int = 6, **options: object) -> bytes:
    arrow = _arrow_gzip(table, row_group_size=row_group_size, level=level, **options)
    ours = _deflated(table, row_group_size=row_group_size, level=level, **options)
    _same_but_moved(_footer(arrow), _footer(ours))
    assert _pages(ours) == _pages(arrow)
    assert pq.read_table(io.BytesIO(ours)).equals(pq.read_table(io.BytesIO(arrow)))
    return ours


def _all_types(n: int) -> pa.Table:
    ints = list(range(n))
    return pa.table({
        "key": pa.array([f"key-{i:06d}" for i in ints]),
        "few": pa.array([f"r{i % 3}" for i in ints]),
        "nullable": pa.array([None if i % 4 == 0 else i * 7 for i in ints], pa.int64()),
        "all_null": pa.nulls(n, pa.string()),
        "flag": pa.array([i % 2 == 0 for i in ints]),
        "small": pa.array([i % 100 for i in ints], pa.int8()),
        "amount": pa.array([i * 1.5 for i in ints]),
        "price": pa.array([decimal.Decimal(i) / 100 for i in ints], pa.decimal128(12, 2)),
        "ts": pa.array([datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=i) for i in ints],
                       pa.timestamp("us", tz="UTC")),
        "day": pa.array([datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 400) for i in ints]),
        "blob": pa.array([bytes([i % 256]) * (i % 17) for i in ints], pa.binary()),
        "tags": pa.array([[f"t{i % 5}"] * (i % 3) if i % 7 else None for i in ints], pa.list_(pa.string())),
        "point": pa.array([{"x": i, "y": None if i % 5 == 0 else float(i)} for i in ints],
                          pa.struct([("x", pa.int32()), ("y", pa.float64())])),
        "attrs": pa.array([[("a", i), ("b", i + 1)] if i % 2 else [] for i in ints], pa.map_(pa.string(), pa.int64())),
    })


def test_every_type_is_written_as_arrow_writes_it_in_several_row_groups() -> None:
    table = _all_types(5_000)
    ours = _assert_like_arrow(table, row_group_size=1_200, use_dictionary=["few", "tags.list.element"],
                              store_schema=False)
    assert pq.ParquetFile(io.BytesIO(ours)).metadata.num_row_groups == 5
    assert pq.ParquetFile(io.BytesIO(ours)).metadata.metadata == {b"k": b"v"}


def test_pages_of_several_megabytes_and_a_dictionary_that_falls_back() -> None:
    # Distinct keys overflow the 1 MiB dictionary page: Arrow falls back to plain pages mid-chunk.
    n = 120_000
    table = pa.table({"key": pa.array([f"customer-{i:09d}-{'x' * (i % 13)}" for i in range(n)])})
    _assert_like_arrow(table, row_group_size=n, use_dictionary=True, store_schema=False)


def test_statistics_and_schema_options_pass_through() -> None:
    table = _all_types(300)
    _assert_like_arrow(table, row_group_size=100, use_dictionary=False, write_statistics=["key"],
                       use_compliant_nested_type=False, store_schema=True)


@pytest.mark.parametrize("level", [1, 6, 9, 12])
def test_each_level_is_valid_gzip_no_larger_than_zlib_at_level_6_from_6_up(level: int) -> None:
    table = _all_types(3_000)
    ours = _assert_like_arrow(table, row_group_size=3_000, level=min(level, 9), store_schema=False) \
        if level <= 9 else _deflated(table, row_group_size=3_000, level=level, store_schema=False)
    assert pq.read_table(io.BytesIO(ours)).equals(table)
    if level >= 6:
        assert len(ours) <= len(_arrow_gzip(table, row_group_size=3_000, level=6, store_schema=False))


def test_no_rows_gives_the_schema_and_no_row_group() -> None:
    table = _all_types(0)
    ours = _assert_like_arrow(table, row_group_size=1, store_schema=False)
    assert pq.read_table(io.BytesIO(ours)).schema.equals(table.schema)


@pytest.mark.parametrize("level", [0, 13, -1])
def test_a_level_out_of_range_is_refused(level: int) -> None:
    with pytest.raises(ValueError, match=f"gzip level {level}: expected 1 to 12"):
        DeflatingWriter(io.BytesIO(), pa.schema([("a", pa.int64())]), level=level)


@pytest.mark.parametrize("option", ["compression", "write_page_index", "data_page_version", "write_page_checksum"])
def test_options_the_writer_sets_itself_are_refused(option: str) -> None:
    with pytest.raises(TypeError, match=option):
        DeflatingWriter(io.BytesIO(), pa.schema([("a", pa.int64())]), **{option: True})


def test_the_factory_deflates_gzip_at_hudis_level_and_leaves_other_codecs_to_arrow() -> None:
    schema = pa.schema([("a", pa.int64())])
    gz = parquet_writer(io.BytesIO(), schema, compression="gzip")
    assert isinstance(gz, DeflatingWriter) and gz.level == 6
    assert isinstance(parquet_writer(io.BytesIO(), schema, compression="gzip", compression_level=1), DeflatingWriter)
    assert isinstance(parquet_writer(io.BytesIO(), schema, compression="snappy"), pq.ParquetWriter)


def test_the_sink_position_is_the_bytes_written_after_each_row_group() -> None:
    table = _all_types(2_000)
    sink = io.BytesIO()
    writer = DeflatingWriter(sink, table.schema, store_schema=False)
    writer.write_table(table.slice(0, 1_000))
    assert sink.tell() == writer.pos == len(sink.getvalue())
    writer.write_table(table.slice(1_000))
    writer.close()
    assert sink.tell() == writer.pos == len(sink.getvalue())
    assert pq.read_table(io.BytesIO(sink.getvalue())).equals(table)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=30)),
                               st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
                               st.lists(st.one_of(st.none(), st.floats(allow_nan=False)), max_size=4)),
                     max_size=300),
       row_group_size=st.integers(1, 120), dictionary=st.booleans())
def test_any_rows_read_back_the_same(rows: list[tuple[str | None, int | None, list[float | None]]],
                                     row_group_size: int, dictionary: bool) -> None:
    table = pa.table({"s": pa.array([r[0] for r in rows], pa.string()),
                      "i": pa.array([r[1] for r in rows], pa.int64()),
                      "l": pa.array([r[2] for r in rows], pa.list_(pa.float64()))})
    _assert_like_arrow(table, row_group_size=row_group_size, use_dictionary=dictionary, store_schema=False)


def test_parquet_mr_reads_what_the_writer_deflated(spark: object, tmp_path: Path) -> None:
    table = _all_types(2_000).drop_columns(["attrs"])
    path = tmp_path / "deflated.parquet"
    path.write_bytes(_deflated(table, row_group_size=700, store_schema=False))
    rows = spark.read.parquet(str(path)).orderBy("key").collect()  # type: ignore[attr-defined]
    assert len(rows) == table.num_rows
    expected = table.to_pylist()
    for got, want in zip(rows, expected, strict=True):
        assert got["key"] == want["key"] and got["nullable"] == want["nullable"]
        assert got["price"] == want["price"] and got["blob"] == want["blob"]
        assert got["tags"] == want["tags"] and got["few"] == want["few"]


def _wide(n: int) -> pa.Table:
    """Columns of very different sizes, so the pool finishes their pages out of order."""
    return pa.table({
        "tiny": pa.array([i % 2 for i in range(n)], pa.int8()),
        "key": pa.array([f"customer-{i:09d}-{'x' * (i % 29)}" for i in range(n)]),
        "few": pa.array([f"r{i % 3}" for i in range(n)]),
        "amount": pa.array([i * 1.5 for i in range(n)]),
        "note": pa.array([f"{i * 7919 % 100_003}" * (1 + i % 5) for i in range(n)]),
    })


def test_a_large_row_group_is_deflated_by_the_pool_and_written_in_page_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Enough bytes for the pool (the largest page first, so out of order): the file is byte for
    byte the one deflated page after page in the calling thread, its pages inflate to Arrow's; a
    small row group stays in the calling thread."""
    import threading

    import deflate

    from runner.hudi import parquet_deflate

    threads: list[str] = []
    compress = deflate.gzip_compress

    def recorded(data: object, level: int) -> bytearray:
        threads.append(threading.current_thread().name)
        return compress(data, level)

    monkeypatch.setattr(deflate, "gzip_compress", recorded)
    table = _wide(60_000)
    options: dict[str, object] = {"row_group_size": 30_000, "use_dictionary": ["few"], "store_schema": False}
    monkeypatch.setattr(parquet_deflate, "_WORKERS", 1)
    one_by_one = _deflated(table, **options)  # type: ignore[arg-type]
    assert threads and all(name == threading.current_thread().name for name in threads)
    threads.clear()
    monkeypatch.setattr(parquet_deflate, "_WORKERS", 2)
    shared = _deflated(table, **options)  # type: ignore[arg-type]
    assert threads and all(name.startswith("deflate") for name in threads)
    assert shared == one_by_one
    assert _pages(shared) == _pages(_arrow_gzip(table, **options))  # type: ignore[arg-type]
    assert pq.read_table(io.BytesIO(shared)).equals(table)
    threads.clear()
    _assert_like_arrow(table.slice(0, 50), row_group_size=50, use_dictionary=["few"], store_schema=False)
    assert threads and all(name == threading.current_thread().name for name in threads)


def test_writers_in_several_threads_share_the_pool() -> None:
    """Four writers at once, each sharing out its row groups' pages: each file is the one it
    writes alone."""
    from concurrent.futures import ThreadPoolExecutor

    tables = [_wide(20_000 + 5_000 * i) for i in range(4)]
    alone = [_deflated(t, row_group_size=15_000, use_dictionary=["few"], store_schema=False) for t in tables]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(
            lambda t: _deflated(t, row_group_size=15_000, use_dictionary=["few"], store_schema=False), tables))
    assert together == alone


def test_a_forked_child_deflates_with_its_own_pool() -> None:
    """The pool's threads do not survive a fork: a child writing a large row group makes its own
    (with the parent's, it would wait on threads that are not there)."""
    import multiprocessing

    table = _wide(60_000)
    expected = _deflated(table, row_group_size=60_000, store_schema=False)  # the parent's pool exists now
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        got = pool.apply_async(_deflated_in_child, (table,)).get(timeout=30)
    assert got == expected


def _deflated_in_child(table: pa.Table) -> bytes:
    return _deflated(table, row_group_size=60_000, store_schema=False)


def test_a_row_group_larger_than_a_batch_is_encoded_in_runs_of_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    table = _all_types(4_000)
    # About 30 KB of Arrow data a column: runs of one to a few columns, the nested ones alone.
    monkeypatch.setattr("runner.hudi.parquet_deflate.BATCH_BYTES", 40_000)
    runs: list[tuple[list[str], int]] = []
    real = DeflatingWriter._encoded

    def spy(self: DeflatingWriter, part: pa.Table) -> bytes:
        runs.append((part.column_names, part.num_rows))
        return real(self, part)

    monkeypatch.setattr(DeflatingWriter, "_encoded", spy)
    _assert_like_arrow(table, row_group_size=1_500, use_dictionary=["few"], store_schema=True)
    *row_groups, template = runs
    assert template == (table.column_names, 0)  # the footer's schema, from an empty file
    by_rows: dict[int, list[list[str]]] = {}
    for names, rows in row_groups:
        by_rows.setdefault(rows, []).append(names)
    assert sorted(by_rows) == [1_000, 1_500]  # rows 0-1499, 1500-2999, 3000-3999
    for rows, parts in by_rows.items():
        copies = 2 if rows == 1_500 else 1
        assert len(parts) >= 3 * copies
        assert [c for names in parts for c in names] == table.column_names * copies


def test_a_table_of_another_schema_is_refused_before_a_byte_is_written() -> None:
    sink = io.BytesIO()
    writer = DeflatingWriter(sink, pa.schema([("a", pa.int64())]))
    with pytest.raises(ValueError, match="Table schema does not match"):
        writer.write_table(pa.table({"a": pa.array(["x"])}))
    assert sink.getvalue() == b"PAR1"


def test_the_writers_schema_metadata_is_stored_whatever_the_tables() -> None:
    schema = pa.schema([pa.field("a", pa.int64(), metadata={"f": "writer"})], metadata={"k": "writer"})
    table = pa.table({"a": [1, 2]}).replace_schema_metadata({"k": "table"})
    arrow, ours = io.BytesIO(), io.BytesIO()
    with pq.ParquetWriter(arrow, schema, compression="gzip") as writer:
        writer.write_table(table)
    with DeflatingWriter(ours, schema) as deflating:
        deflating.write_table(table)
    for data in (arrow, ours):
        read = pq.read_table(io.BytesIO(data.getvalue()))
        assert read.schema.metadata == {b"k": b"writer"} and read.schema.field("a").metadata == {b"f": b"writer"}
