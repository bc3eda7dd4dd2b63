"""Pages a merge copies from the old file (`runner.hudi.page_prefix`) into the deflating writer.

The oracle: the same rows written whole by the same writer. A file whose leading pages were copied
must read back the same values and carry the same chunk statistics, value counts and encodings,
and its copied pages must be the old file's bytes; pages past the first changed row, dictionary
chunks and files of another schema or codec are never copied.
"""

from __future__ import annotations

import datetime
import decimal
import io
import math
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.hudi.page_prefix import OldPages
from runner.hudi.parquet_deflate import DeflatingWriter
from runner.hudi.parquet_ids import P_COMPRESSED_SIZE, P_DATA_V1, P_UNCOMPRESSED_SIZE
from runner.hudi.thrift_compact import decode_struct

# Small pages, so that a few hundred rows make many of them and prefixes end inside a row group.
PAGES = {"data_page_size": 512, "write_batch_size": 16}

COLUMNS: dict[str, tuple[pa.DataType, Any]] = {
    "i64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "i32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "f64": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True)),
    "text": (pa.string(), st.text(max_size=12)),
    "raw": (pa.binary(), st.binary(max_size=12)),
    "flag": (pa.bool_(), st.booleans()),
    "day": (pa.date32(), st.dates(min_value=datetime.date(1, 1, 1))),
    "at": (pa.timestamp("us", tz="UTC"), st.datetimes(min_value=datetime.datetime(1900, 1, 1),
                                                      timezones=st.just(datetime.UTC))),
    "dec": (pa.decimal128(10, 2), st.decimals(min_value=-10**7, max_value=10**7, places=2, allow_nan=False)),
}


def _write(table: pa.Table, prefixes: dict[int, Any] | None = None, **options: Any) -> bytes:
    sink = io.BytesIO()
    with DeflatingWriter(sink, table.schema, use_dictionary=False, **PAGES, **options) as writer:
        if prefixes is None:
            writer.write_table(table)
        else:
            writer.write_table(table, prefixes=prefixes)
    return sink.getvalue()


def _prefixes(old: bytes, table: pa.Table, unchanged: int) -> dict[int, Any]:
    pages = OldPages.of_bytes("old.parquet", old)
    found = {}
    for i in range(table.num_columns):
        prefix = pages.prefix(0, i, unchanged)
        if prefix is not None:
            found[i] = prefix
    return found


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b) and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


def _assert_alike(copied: bytes, whole: bytes) -> None:
    """Same values, and per chunk the same statistics, counts and encodings."""
    a, b = pq.ParquetFile(io.BytesIO(copied)), pq.ParquetFile(io.BytesIO(whole))
    ta, tb = a.read(), b.read()
    assert ta.schema == tb.schema and ta.num_rows == tb.num_rows
    for name in ta.column_names:
        pairs = zip(ta.column(name).to_pylist(), tb.column(name).to_pylist(), strict=True)
        assert all(_same(x, y) for x, y in pairs), name
    for g in range(a.metadata.num_row_groups):
        assert a.metadata.row_group(g).num_rows == b.metadata.row_group(g).num_rows
        for c in range(a.metadata.num_columns):
            ca, cb = a.metadata.row_group(g).column(c), b.metadata.row_group(g).column(c)
            assert ca.num_values == cb.num_values
            assert set(ca.encodings) == set(cb.encodings)
            _assert_pages_add_up(copied, ca)
            sa, sb = ca.statistics, cb.statistics
            assert (sa is None) == (sb is None)
            if sa is not None:
                assert sa.null_count == sb.null_count and sa.has_min_max == sb.has_min_max, ca.path_in_schema
                if sa.has_min_max:
                    assert _same(sa.min, sb.min) and _same(sa.max, sb.max), ca.path_in_schema


def _assert_pages_add_up(data: bytes, chunk: Any) -> None:
    """The chunk's page headers fill exactly its recorded sizes and hold its values (a copied prefix
    can end a page where the whole encode would not, so sizes are checked against the pages)."""
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    pos, stored, raw, values = start, 0, 0, 0
    while pos < start + chunk.total_compressed_size:
        header, body = decode_struct(data, what="test", offset=pos)
        size = header.get_int(P_COMPRESSED_SIZE)
        assert size is not None
        stored += body - pos + size
        raw += body - pos + (header.get_int(P_UNCOMPRESSED_SIZE) or 0)
        v1 = header.get_struct(P_DATA_V1)
        values += v1.get_int(1) or 0 if v1 is not None else 0
        pos = body + size
    assert (stored, raw, values) == (chunk.total_compressed_size, chunk.total_uncompressed_size, chunk.num_values)


@st.composite
def _merges(draw: st.DrawFn) -> tuple[pa.Table, pa.Table, int]:
    """An old table, the new one (old rows from `changed` on replaced, more rows appended), and `changed`."""
    names = draw(st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, max_size=4, unique=True))
    old_rows = draw(st.integers(1, 300))
    changed = draw(st.integers(0, old_rows))
    added = draw(st.integers(0 if changed < old_rows else 1, 60))

    def values(count: int) -> dict[str, pa.Array]:
        return {n: pa.array(draw(st.lists(st.none() | COLUMNS[n][1], min_size=count, max_size=count)), COLUMNS[n][0])
                for n in names}

    old = pa.table(values(old_rows))
    fresh = pa.table(values(old_rows - changed + added))
    new = pa.concat_tables([old.slice(0, changed), fresh])
    return old, new, changed


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_merges())
def test_a_file_with_copied_pages_reads_and_describes_itself_as_the_whole_encode(
        case: tuple[pa.Table, pa.Table, int]) -> None:
    old_table, new_table, changed = case
    old = _write(old_table)
    prefixes = _prefixes(old, new_table, changed)
    copied = _write(new_table, prefixes)
    _assert_alike(copied, _write(new_table))
    for prefix in prefixes.values():
        assert prefix.rows <= changed
        assert bytes(prefix.data) in copied  # the old pages themselves


def test_pages_are_copied_up_to_the_first_changed_row_and_no_further() -> None:
    old_table = pa.table({"id": pa.array(range(2000), pa.int64()), "name": [f"n{i}" for i in range(2000)]})
    old = _write(old_table)
    pages = OldPages.of_bytes("old.parquet", old)
    for column in (0, 1):
        early, late = pages.prefix(0, column, 10), pages.prefix(0, column, 1500)
        assert early is None or early.rows <= 10
        assert late is not None and 0 < late.rows <= 1500 and not late.whole_chunk
        whole = pages.prefix(0, column, 2000)
        assert whole is not None and whole.rows == 2000 and whole.whole_chunk
    assert pages.prefix(0, 0, 0) is None
    assert pages.prefix(7, 0, 1500) is None  # no row group starts there


def test_a_row_group_copied_whole_keeps_its_chunks_and_the_new_rows_follow() -> None:
    old_table = pa.table({"id": pa.array(range(1000), pa.int64()), "name": [f"n{i}" for i in range(1000)]})
    old = _write(old_table)
    sink = io.BytesIO()
    pages = OldPages.of_bytes("old.parquet", old)
    tail = pa.table({"id": pa.array(range(1000, 1100), pa.int64()), "name": [f"m{i}" for i in range(100)]})
    with DeflatingWriter(sink, old_table.schema, use_dictionary=False, **PAGES) as writer:
        writer.write_table(old_table, prefixes={i: pages.prefix(0, i, 1000) for i in (0, 1)})
        writer.write_table(tail)
    whole = io.BytesIO()
    with DeflatingWriter(whole, old_table.schema, use_dictionary=False, **PAGES) as writer:
        writer.write_table(old_table)
        writer.write_table(tail)
    _assert_alike(sink.getvalue(), whole.getvalue())
    assert sink.getvalue() == whole.getvalue()  # the same writer made the old pages: nothing differs


def test_dictionary_chunks_other_codecs_and_other_schemas_give_no_pages() -> None:
    table = pa.table({"id": pa.array(range(500), pa.int64()), "tag": ["a", "b"] * 250})
    dictionary = io.BytesIO()
    with DeflatingWriter(dictionary, table.schema, use_dictionary=["tag"], **PAGES) as writer:
        writer.write_table(table)
    pages = OldPages.of_bytes("old.parquet", dictionary.getvalue())
    assert pages.prefix(0, 1, 400) is None and pages.prefix(0, 0, 400) is not None

    snappy = io.BytesIO()
    pq.write_table(table, snappy, compression="snappy", use_dictionary=False, **PAGES)
    assert OldPages.of_bytes("old.parquet", snappy.getvalue()).prefix(0, 0, 400) is None

    other = table.rename_columns(["id", "label"])
    sink = io.BytesIO()
    with DeflatingWriter(sink, other.schema, use_dictionary=False, **PAGES) as writer:
        assert not writer.can_copy_from(OldPages.of_bytes("old.parquet", _write(table)))
    nested = pa.table({"id": pa.array(range(10), pa.int64()), "tags": [[1]] * 10})
    with DeflatingWriter(io.BytesIO(), nested.schema, use_dictionary=False, **PAGES) as writer:
        assert not writer.can_copy_from(OldPages.of_bytes("old.parquet", _write(nested)))
    assert OldPages.of_bytes("junk.parquet", b"not parquet at all").prefix(0, 0, 10) is None


def test_pages_are_refused_for_a_dictionary_column_and_a_table_of_several_row_groups() -> None:
    table = pa.table({"id": pa.array(range(500), pa.int64())})
    prefix = OldPages.of_bytes("old.parquet", _write(table)).prefix(0, 0, 400)
    with DeflatingWriter(io.BytesIO(), table.schema, use_dictionary=True, **PAGES) as writer:
        with pytest.raises(ValueError, match="without a dictionary"):
            writer.write_table(table, prefixes={0: prefix})
    with DeflatingWriter(io.BytesIO(), table.schema, use_dictionary=False, **PAGES) as writer:
        with pytest.raises(ValueError, match="one row group"):
            writer.write_table(table, row_group_size=100, prefixes={0: prefix})


def test_statistics_follow_the_whole_column_for_nan_signed_zeros_and_decimals() -> None:
    old_table = pa.table({
        "f": pa.array([float("nan")] * 300 + [0.0] * 100, pa.float64()),
        "d": pa.array([decimal.Decimal("-5.25")] * 200 + [decimal.Decimal("7.50")] * 200, pa.decimal128(10, 2)),
    })
    new_table = pa.concat_tables([old_table.slice(0, 300), pa.table({
        "f": pa.array([-0.0, 2.5, None], pa.float64()),
        "d": pa.array([decimal.Decimal("-9.99"), None, decimal.Decimal("1.00")], pa.decimal128(10, 2)),
    })])
    prefixes = _prefixes(_write(old_table), new_table, 300)
    assert set(prefixes) == {0, 1}
    _assert_alike(_write(new_table, prefixes), _write(new_table))


def test_pages_are_laid_out_as_the_footer_the_merge_decoded_or_not_used() -> None:
    table = pa.table({"id": pa.array(range(500), pa.int64()), "name": [f"n{i}" for i in range(500)]})
    old = _write(table)
    other = _write(table.slice(0, 499))  # the same path replaced by another file in between
    pages = OldPages.of_bytes("old.parquet", old)
    assert pages.laid_out_as(pq.ParquetFile(io.BytesIO(old)).metadata)
    assert not pages.laid_out_as(pq.ParquetFile(io.BytesIO(other)).metadata)
    assert not OldPages.of_bytes("junk", b"junk").laid_out_as(pq.ParquetFile(io.BytesIO(old)).metadata)
