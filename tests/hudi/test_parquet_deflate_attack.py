"""Attacks on `DeflatingWriter`: schemas, data and writer options the first tests leave out, each
compared with Arrow's own GZIP writer (footer but moved fields, every page inflated, rows read), and
its failure paths."""

from __future__ import annotations

import datetime
import decimal
import io
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.hudi import parquet_ids as ids
from runner.hudi.parquet_deflate import DeflatingWriter
from runner.hudi.thrift_compact import Struct, decode_struct

# The base module's check: footers equal to Arrow's but the moved fields, the uncompressed sizes
# checked against each file's own page headers (a header's compressed-size varint may take a byte
# more or less than in Arrow's file), pages inflating to Arrow's, rows read back equal.
from tests.hudi.test_parquet_deflate import _assert_like_arrow, _deflated, _footer, _pages


def _ts(n: int, unit: str = "us", tz: str | None = None) -> pa.Array:
    base = datetime.datetime(1900, 1, 1)
    return pa.array([None if i % 9 == 0 else base + datetime.timedelta(days=i * 37, microseconds=i)
                     for i in range(n)], pa.timestamp(unit, tz=tz))


def test_int96_timestamps_as_resize_asks_for_them() -> None:
    n = 2_000
    table = pa.table({"ts_us": _ts(n), "ts_ns_utc": _ts(n, "ns", "UTC"), "ts_ms": _ts(n, "ms"),
                      "k": pa.array([str(i) for i in range(n)])})
    ours = _assert_like_arrow(table, row_group_size=700, use_deprecated_int96_timestamps=True,
                              use_compliant_nested_type=False, store_schema=False)
    schema = pq.ParquetFile(io.BytesIO(ours)).metadata.schema
    assert [schema.column(i).physical_type for i in range(3)] == ["INT96"] * 3


def test_large_fixed_size_and_dictionary_typed_columns() -> None:
    n = 3_000
    strings = [None if i % 11 == 0 else ("" if i % 5 == 0 else f"v{i % 37}") for i in range(n)]
    table = pa.table({
        "ls": pa.array(strings, pa.large_string()),
        "lb": pa.array([None if s is None else s.encode() for s in strings], pa.large_binary()),
        "ll": pa.array([None if i % 13 == 0 else list(range(i % 4)) for i in range(n)], pa.large_list(pa.int32())),
        "fsb": pa.array([None if i % 7 == 0 else i.to_bytes(16, "big") for i in range(n)], pa.binary(16)),
        "dict_s": pa.array(strings, pa.string()).dictionary_encode(),
        "dict_i": pa.array([i % 5 for i in range(n)], pa.int64()).dictionary_encode(),
        "dec256": pa.array([decimal.Decimal(i) / 1000 for i in range(n)], pa.decimal256(40, 3)),
        "fsl": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int16(), 2)),
    })
    _assert_like_arrow(table, row_group_size=1_100, store_schema=True)
    _assert_like_arrow(table, row_group_size=n, use_dictionary=["dict_s", "ls"], store_schema=False)


def _nested(n: int) -> pa.Table:
    inner = pa.struct([("m", pa.map_(pa.string(), pa.list_(pa.int64()))), ("s", pa.string())])
    outer = pa.struct([("items", pa.list_(inner)), ("leaf", pa.int32())])
    values = []
    for i in range(n):
        if i % 10 == 0:
            values.append(None)  # a null struct
        elif i % 10 == 1:
            values.append({"items": [], "leaf": None})  # a zero-length list
        elif i % 10 == 2:
            values.append({"items": None, "leaf": i})
        else:
            values.append({"items": [{"m": [(f"k{j}", [i, j] if j else []) for j in range(i % 3)], "s": ""},
                                     None, {"m": None, "s": f"s{i}"}], "leaf": i})
    return pa.table({"id": pa.array(range(n), pa.int64()), "deep": pa.array(values, outer)})


@pytest.mark.parametrize("compliant", [True, False])
def test_deep_structs_of_lists_of_maps_with_null_structs_and_empty_lists(compliant: bool) -> None:
    table = _nested(1_500)
    dictionary = (["deep.items.list.element.s", "deep.items.list.element.m.key_value.key"] if compliant
                  else ["deep.items.array.s"])
    _assert_like_arrow(table, row_group_size=400, use_dictionary=dictionary, use_compliant_nested_type=compliant,
                       store_schema=False)


def test_all_null_row_groups_and_many_tiny_row_groups() -> None:
    n = 300
    table = pa.table({"a": pa.array([None] * 150 + list(range(150)), pa.int64()),
                      "s": pa.array([None] * 150 + ["x"] * 150, pa.string()),
                      "l": pa.array([None] * 150 + [[]] * 150, pa.list_(pa.string()))})
    ours = _assert_like_arrow(table, row_group_size=1, store_schema=False)
    metadata = pq.ParquetFile(io.BytesIO(ours)).metadata
    assert metadata.num_row_groups == n
    assert [metadata.row_group(i).column(0).file_offset for i in range(3)] == [0, 0, 0]  # Arrow's
    _assert_like_arrow(table, row_group_size=150, store_schema=False)  # the first row group all nulls


@pytest.mark.parametrize("row_group_size", [1, 7, 999, 1_000, 1_001, 10**9])
def test_row_group_sizes_around_and_beyond_the_table(row_group_size: int) -> None:
    table = pa.table({"i": pa.array(range(1_000), pa.int32()), "s": pa.array([f"{i % 3}" for i in range(1_000)])})
    _assert_like_arrow(table, row_group_size=row_group_size, store_schema=False)


def test_dotted_and_unicode_column_names_named_in_use_dictionary() -> None:
    n = 500
    table = pa.table({"a.b": pa.array([f"x{i % 4}" for i in range(n)]),
                      "ключ 🔑": pa.array([f"y{i % 3}" for i in range(n)]),
                      "s": pa.array([{"c.d": f"z{i % 2}", "é": i} for i in range(n)],
                                    pa.struct([("c.d", pa.string()), ("é", pa.int64())]))})
    _assert_like_arrow(table, row_group_size=200, use_dictionary=["ключ 🔑", "s.c.d"], store_schema=True)


def test_statistics_off_sorting_columns_refused_and_encodings() -> None:
    n = 4_000
    table = pa.table({"i": pa.array(range(n), pa.int64()), "f": pa.array([i / 3 for i in range(n)], pa.float32()),
                      "s": pa.array([f"name-{i}" for i in range(n)])})
    _assert_like_arrow(table, row_group_size=1_500, write_statistics=False, store_schema=False)
    # Sorting columns are numbered in the whole schema, which a run of columns would renumber.
    with pytest.raises(TypeError, match="sorting_columns"):
        DeflatingWriter(io.BytesIO(), table.schema, sorting_columns=[pq.SortingColumn(0)])
    _assert_like_arrow(table, row_group_size=1_500, use_dictionary=False, store_schema=False,
                       column_encoding={"i": "DELTA_BINARY_PACKED", "f": "BYTE_STREAM_SPLIT",
                                        "s": "DELTA_LENGTH_BYTE_ARRAY"})
    _assert_like_arrow(table, row_group_size=n, version="1.0", write_batch_size=7, store_schema=False)


def test_thousands_of_pages_per_chunk_and_a_tiny_dictionary_page_limit() -> None:
    n = 20_000
    table = pa.table({"s": pa.array([f"v{i % 500}" for i in range(n)]), "i": pa.array(range(n), pa.int64())})
    ours = _assert_like_arrow(table, row_group_size=n, data_page_size=64, write_batch_size=16, store_schema=False)
    assert len(_pages(ours)) > 2_000
    # Dictionary limit of a few values: fallback to plain pages mid-chunk.
    ours = _assert_like_arrow(table, row_group_size=8_000, dictionary_pagesize_limit=100, data_page_size=2_000,
                              store_schema=False)
    encodings = pq.ParquetFile(io.BytesIO(ours)).metadata.row_group(0).column(0).encodings
    assert "PLAIN" in encodings and "RLE_DICTIONARY" in encodings


def test_a_cell_of_tens_of_megabytes_a_page_above_16_mib() -> None:
    big = bytes(range(256)) * (24 * 1024 * 1024 // 256)  # 24 MiB in one value
    table = pa.table({"k": pa.array(["a", "b", "c"]), "blob": pa.array([b"", big, None], pa.binary())})
    ours = _assert_like_arrow(table, row_group_size=3, store_schema=False)
    assert max(len(body) for _, body in _pages(ours)) > 16 * 1024 * 1024


def test_each_write_table_call_is_its_own_row_group_as_in_arrow() -> None:
    table = pa.table({"i": pa.array(range(100), pa.int64())})
    parts = [table.slice(0, 10), table.slice(10, 50), table.slice(60, 40)]
    arrow, ours = io.BytesIO(), io.BytesIO()
    with pq.ParquetWriter(arrow, table.schema, compression="gzip", compression_level=6, store_schema=False) as a:
        for part in parts:
            a.write_table(part, row_group_size=30)
    writer = DeflatingWriter(ours, table.schema, store_schema=False)
    for part in parts:
        writer.write_table(part, row_group_size=30)
    writer.close()

    def row_groups(data: bytes) -> list[tuple[int | None, int | None]]:
        return [(rg.get_int(ids.R_NUM_ROWS), rg.get_int(ids.R_ORDINAL))
                for rg in _footer(data).get_list(ids.F_ROW_GROUPS) if isinstance(rg, Struct)]

    assert row_groups(ours.getvalue()) == row_groups(arrow.getvalue())
    assert [rows for rows, _ in row_groups(ours.getvalue())] == [10, 30, 20, 30, 10]
    assert _pages(ours.getvalue()) == _pages(arrow.getvalue())
    assert pq.read_table(io.BytesIO(ours.getvalue())).equals(table)


def test_offsets_sizes_and_ordinals_point_at_the_pages() -> None:
    """Every offset in the footer is where that page starts; row group offsets and sizes add up."""
    table = pa.table({"d": pa.array([f"x{i % 3}" for i in range(3_000)]),
                      "p": pa.array(range(3_000), pa.int64())})
    data = _deflated(table, row_group_size=1_000, use_dictionary=["d"], store_schema=False)
    pos = 4
    for ordinal, rg in enumerate(_footer(data).get_list(ids.F_ROW_GROUPS)):
        assert isinstance(rg, Struct)
        assert rg.get_int(ids.R_FILE_OFFSET) == pos and rg.get_int(ids.R_ORDINAL) in (None, ordinal)
        total = 0
        for chunk in rg.get_list(ids.R_COLUMNS):
            assert isinstance(chunk, Struct)
            meta = chunk.get_struct(ids.C_META)
            assert meta is not None
            first = decode_struct(data, what="t", offset=pos)[0].get_int(ids.P_TYPE)
            if meta.has(ids.M_DICTIONARY_PAGE):
                assert first == ids.DICTIONARY_PAGE and meta.get_int(ids.M_DICTIONARY_PAGE) == pos
                header, body = decode_struct(data, what="t", offset=pos)
                assert meta.get_int(ids.M_DATA_PAGE) == body + (header.get_int(ids.P_COMPRESSED_SIZE) or 0)
            else:
                assert first == ids.DATA_PAGE and meta.get_int(ids.M_DATA_PAGE) == pos
            pos += meta.get_int(ids.M_COMPRESSED) or 0
            total += meta.get_int(ids.M_COMPRESSED) or 0
        assert rg.get_int(ids.R_TOTAL_COMPRESSED) == total
    assert pos == len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    # p has no dictionary page: no dictionary offset in the footer, as Arrow leaves it out
    chunk = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(1)
    assert not chunk.has_dictionary_page and chunk.dictionary_page_offset is None


def test_zero_rows_written_reads_as_arrows_file_does() -> None:
    """Arrow writes an empty row group for an empty `write_table`; the deflating writer writes none.
    Either file reads as the same empty table."""
    table = pa.table({"a": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    arrow, ours = io.BytesIO(), io.BytesIO()
    with pq.ParquetWriter(arrow, table.schema, compression="gzip", store_schema=False) as a:
        a.write_table(table)
    writer = DeflatingWriter(ours, table.schema, store_schema=False)
    writer.write_table(table)
    writer.close()
    assert pq.read_table(io.BytesIO(ours.getvalue())).equals(pq.read_table(io.BytesIO(arrow.getvalue())))
    assert pq.ParquetFile(io.BytesIO(ours.getvalue())).metadata.num_rows == 0


def test_a_table_of_another_schema_raises_and_writes_nothing() -> None:
    schema = pa.schema([("a", pa.int64())])
    sink = io.BytesIO()
    writer = DeflatingWriter(sink, schema, store_schema=False)
    writer.write_table(pa.table({"a": [1, 2]}))
    before = sink.getvalue()
    with pytest.raises(ValueError, match="schema"):
        writer.write_table(pa.table({"a": ["x"]}))
    with pytest.raises(ValueError, match="schema"):
        writer.write_table(pa.table({"b": [1]}))
    assert sink.getvalue() == before and writer.pos == len(before)
    writer.write_table(pa.table({"a": [3]}))
    writer.close()
    assert pq.read_table(io.BytesIO(sink.getvalue()))["a"].to_pylist() == [1, 2, 3]


def test_close_twice_writes_one_footer_and_write_after_close_is_refused() -> None:
    schema = pa.schema([("a", pa.int64())])
    sink = io.BytesIO()
    writer = DeflatingWriter(sink, schema, store_schema=False)
    writer.write_table(pa.table({"a": [1, 2]}))
    writer.close()
    closed = sink.getvalue()
    writer.close()
    assert sink.getvalue() == closed
    # pyarrow's ParquetWriter raises on both and writes nothing; bytes after the footer would leave a
    # file no reader can open (its last bytes no longer the footer's length and magic).
    with pytest.raises(Exception):  # noqa: B017
        writer.write_table(pa.table({"a": [3]}))
    with pytest.raises(Exception):  # noqa: B017
        writer.add_key_value_metadata({"late": "lost"})
    assert sink.getvalue() == closed
    assert pq.read_table(io.BytesIO(closed))["a"].to_pylist() == [1, 2]


def test_a_crc_field_is_recomputed_as_a_signed_i32() -> None:
    """Arrow is never asked for checksums here, but the CRC path must be right if a header has one:
    recompute it over a file Arrow wrote with checksums, uncompressed, by the module's own page steps."""
    from runner.hudi import parquet_deflate

    table = pa.table({"s": pa.array([f"row {i}" * (i % 50) for i in range(5_000)])})
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, compression="none", write_page_checksum=True,
                          write_page_index=False, store_schema=False) as w:
        w.write_table(table)
    data = memoryview(sink.getvalue()).cast("B")
    chunk = parquet_deflate._footer(data).get_list(ids.F_ROW_GROUPS)[0].get_list(ids.R_COLUMNS)[0]  # type: ignore[union-attr]
    pages = parquet_deflate._chunk_pages(data, chunk)  # type: ignore[arg-type]
    bodies = [data[at:at + size] for _, at, size in pages.pages]
    pieces, _ = pages.deflated(parquet_deflate._deflate_all(bodies, 6), 4)
    for head, body in zip(pieces[::2], pieces[1::2], strict=True):
        header = decode_struct(bytes(head), what="t")[0]
        crc = header.get_int(ids.P_CRC)
        assert crc is not None and -(1 << 31) <= crc < (1 << 31)
        assert crc & 0xFFFFFFFF == zlib.crc32(body)
    assert len(pieces) >= 4
    assert pq.read_table(pa.BufferReader(sink.getvalue())).equals(table)


def test_a_row_group_above_arrows_default_million_rows_when_asked_for() -> None:
    """An explicit `row_group_size` above Arrow's default cap (1,048,576 rows) gives one row group in
    both writers (resize asks for up to 120 MB of rows in one)."""
    n = 1_100_000
    table = pa.table({"a": pa.array([i % 7 for i in range(n)], pa.int8())})
    ours = _assert_like_arrow(table, row_group_size=n, store_schema=False)
    assert pq.ParquetFile(io.BytesIO(ours)).metadata.num_row_groups == 1


def test_parquet_mr_reads_int96_nested_fixed_and_all_null_row_groups(spark: object, tmp_path: object) -> None:
    n = 600
    nested = _nested(n)
    table = nested.append_column("ts", _ts(n)).append_column(
        "fsb", pa.array([None if i % 7 == 0 else i.to_bytes(4, "big") for i in range(n)], pa.binary(4))
    ).append_column("empty", pa.nulls(n, pa.string())).append_column(
        "ls", pa.array(["" if i % 2 else None for i in range(n)], pa.large_string()))
    path = tmp_path / "nasty.parquet"  # type: ignore[operator]
    path.write_bytes(_deflated(table, row_group_size=7, use_deprecated_int96_timestamps=True, store_schema=False))
    got = {r["id"]: r for r in spark.read.parquet(str(path)).collect()}  # type: ignore[attr-defined]
    assert len(got) == n
    for want in table.to_pylist():
        row = got[want["id"]]
        assert row["ts"] == want["ts"] and row["fsb"] == want["fsb"]
        assert row["empty"] is None and row["ls"] == want["ls"]
        deep = row["deep"]
        if want["deep"] is None:
            assert deep is None
            continue
        assert deep["leaf"] == want["deep"]["leaf"]
        items = want["deep"]["items"]
        assert (deep["items"] is None) == (items is None)
        if items is not None:
            assert len(deep["items"]) == len(items)
            for g, w in zip(deep["items"], items, strict=True):
                assert (g is None) == (w is None)
                if w is not None:
                    assert g["s"] == w["s"]
                    assert (None if g["m"] is None else dict(g["m"])) == (None if w["m"] is None else dict(w["m"]))


def _key_values(data: bytes) -> list[tuple[bytes, bytes]]:
    return [(e.get(1), e.get(2)) for e in _footer(data).get_list(ids.F_KEY_VALUE)  # type: ignore[misc]
            if isinstance(e, Struct)]


@pytest.mark.parametrize("store_schema", [False, True])
def test_key_values_added_twice_and_over_the_schemas_are_arrows_entries(store_schema: bool) -> None:
    """Entries added in several calls, one replacing a schema metadata key: the same entries as
    Arrow's, each key once (Arrow orders the second call's keys first; readers take a map)."""
    schema = pa.schema([("a", pa.int64())], metadata={"x": "1", "k": "schema"})
    table = pa.table({"a": [1, 2]}, schema=schema)
    arrow, ours = io.BytesIO(), io.BytesIO()
    with pq.ParquetWriter(arrow, schema, compression="gzip", store_schema=store_schema) as a:
        a.write_table(table)
        a.add_key_value_metadata({"k": "added", "z": "2"})
        a.add_key_value_metadata({"z": "3"})
    writer = DeflatingWriter(ours, schema, store_schema=store_schema)
    writer.write_table(table)
    writer.add_key_value_metadata({"k": "added", "z": "2"})
    writer.add_key_value_metadata({"z": "3"})
    writer.close()
    entries = _key_values(ours.getvalue())
    assert len({k for k, _ in entries}) == len(entries)
    assert dict(entries) == dict(_key_values(arrow.getvalue()))
    assert dict(entries)[b"k"] == b"added" and dict(entries)[b"z"] == b"3"
    assert pq.read_table(io.BytesIO(ours.getvalue())).equals(pq.read_table(io.BytesIO(arrow.getvalue())))


_COLUMNS = {
    "i8": lambda i: pa.array([None if i[j] % 5 == 0 else i[j] % 100 for j in range(len(i))], pa.int8()),
    "i64": lambda i: pa.array(i, pa.int64()),
    "f32": lambda i: pa.array([x / 7 for x in i], pa.float32()),
    "s": lambda i: pa.array([None if x % 4 == 0 else "" if x % 4 == 1 else f"s{x % 50}" for x in i]),
    "ls": lambda i: pa.array([f"long-{x}" * (x % 9) for x in i], pa.large_string()),
    "fsb": lambda i: pa.array([(x % 1000).to_bytes(3, "big") for x in i], pa.binary(3)),
    "b": lambda i: pa.array([x % 3 == 0 for x in i]),
    "ts": lambda i: pa.array([x * 1_000_003 for x in i], pa.timestamp("ns")),
    "dec": lambda i: pa.array([decimal.Decimal(x) / 10 for x in i], pa.decimal128(20, 1)),
    "lst": lambda i: pa.array([None if x % 6 == 0 else [x % 3] * (x % 4) for x in i], pa.list_(pa.int32())),
    "st": lambda i: pa.array([None if x % 8 == 0 else {"a": f"{x % 5}", "b": [x] if x % 2 else []} for x in i],
                             pa.struct([("a", pa.string()), ("b", pa.list_(pa.int64()))])),
    "mp": lambda i: pa.array([[(f"k{x % 3}", x)] if x % 3 else None for x in i], pa.map_(pa.string(), pa.int64())),
    "dic": lambda i: pa.array([f"d{x % 11}" for x in i]).dictionary_encode(),
}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns=st.lists(st.sampled_from(sorted(_COLUMNS)), min_size=1, max_size=6, unique=True),
       values=st.lists(st.integers(0, 10**6), max_size=600), row_group_size=st.integers(1, 600),
       dictionary=st.booleans(), page=st.sampled_from([None, 50, 1_000]), dict_limit=st.sampled_from([None, 64]),
       statistics=st.booleans(), compliant=st.booleans(), int96=st.booleans())
def test_any_schema_and_options_are_written_as_arrow_writes_them(
    columns: list[str], values: list[int], row_group_size: int, dictionary: bool, page: int | None,
    dict_limit: int | None, statistics: bool, compliant: bool, int96: bool,
) -> None:
    table = pa.table({name: _COLUMNS[name](values) for name in columns})
    options: dict[str, object] = {"use_dictionary": dictionary, "write_statistics": statistics,
                                  "use_compliant_nested_type": compliant, "store_schema": False,
                                  "use_deprecated_int96_timestamps": int96}
    if page is not None:
        options["data_page_size"] = page
    if dict_limit is not None:
        options["dictionary_pagesize_limit"] = dict_limit
    _assert_like_arrow(table, row_group_size=row_group_size, **options)


def test_a_row_group_size_above_pyarrows_cap_gives_arrows_row_groups() -> None:
    """pyarrow caps a row group at 64 Mi rows whatever `row_group_size` asks (`_MAX_ROW_GROUP_SIZE`),
    so the one-row-group file encoded for deflating holds two row groups: both must be written, as
    Arrow's own writer writes them, rather than an AssertionError."""
    n = 64 * 1024 * 1024 + 5
    table = pa.table({"b": pa.repeat(pa.scalar(True), n)})  # 8 MiB of bits
    ours = _assert_like_arrow(table, row_group_size=n, store_schema=False)
    metadata = pq.ParquetFile(io.BytesIO(ours)).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [64 * 1024 * 1024, 5]
