"""Dictionary encoding as Hudi's parquet-mr writer chooses it: kept where it pays on the first page.

A real Hudi file (the hudi-rs fixtures, written by Hudi's Spark writer) shows parquet-mr's rule: a
column whose dictionary would not be smaller than its plain values is written plain. Our writer's
files follow the same rule (`runner.hudi.parquet_dictionary`), on both engines, and stay readable by the
`hudi` reader.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runner
from runner.hudi import parquet_dictionary as encoding
from runner.hudi.parquet_dictionary import PAGE_ROWS, dictionary_columns
from tests.writer.writer_helpers import oracle_rows, table_yaml

DISTINCT = ("_hoodie_commit_seqno", "_hoodie_record_key", "id", "name", "amount")
FEW = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name", "region", "ts")


def _dictionary_pages(path: Path) -> dict[str, bool]:
    meta = pq.ParquetFile(path).metadata
    group = meta.row_group(0)
    return {group.column(i).path_in_schema: group.column(i).has_dictionary_page for i in range(group.num_columns)}


def test_hudis_own_writer_drops_a_dictionary_that_does_not_pay(hudi_fixture: Callable[[str], Path]) -> None:
    # The reference: a one-record file from Hudi's Spark writer has no dictionary page at all, since a
    # one-value dictionary plus its index is larger than the value written plain.
    base = hudi_fixture("sample_table/cow/v6_simplekeygen_nonhivestyle")
    files = [p for p in base.rglob("*.parquet") if ".hoodie" not in p.parts]
    one_record = [p for p in files if pq.ParquetFile(p).metadata.num_rows == 1]
    assert one_record
    for path in one_record:
        assert not any(_dictionary_pages(path).values()), path
    one_row = pa.table({"k": ["a"], "n": pa.array([7], pa.int64())})
    assert dictionary_columns(one_row) == []


@pytest.mark.usefixtures("engine")
def test_written_files_keep_a_dictionary_only_for_columns_of_few_values(
        spark: object, project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"))
    rows = [(i, f"r{i % 2}", f"customer-{i}", i * 1.5, 1) for i in range(3000)]
    df = spark.createDataFrame(rows, "id long, region string, name string, amount double, ts long")  # type: ignore[attr-defined]
    runner.write(df, "orders", project_dir=root)
    updates = [(i, f"r{i % 2}", f"customer-{i}-v2", i * 2.5, 2) for i in range(0, 3000, 3)]
    result = runner.write(spark.createDataFrame(updates, df.schema), "orders", project_dir=root)  # type: ignore[attr-defined]

    assert result.num_updates == 1000 and result.files
    for relative in result.files:
        pages = _dictionary_pages(root / "warehouse" / "orders" / relative)
        assert {c for c in DISTINCT if pages[c]} == set(), relative
        assert {c for c in FEW if not pages[c]} == set(), relative
    expected = sorted(
        ({"id": i, "name": f"customer-{i}-v2" if i % 3 == 0 else f"customer-{i}"} for i in range(3000)), key=repr)
    assert oracle_rows(root / "warehouse" / "orders", columns=("id", "name")) == expected


def test_the_choice_follows_parquet_mrs_first_page_rule() -> None:
    n = PAGE_ROWS + 5000
    distinct = pa.array(np.arange(n, dtype=np.int64))
    table = pa.table({
        "constant": pa.repeat(pa.scalar("x"), n),
        "distinct_text": distinct.cast(pa.string()),
        "distinct_long": distinct,
        "few_longs": pa.array(np.arange(n, dtype=np.int64) % 16),
        # Few values on the first page, then distinct ones: only the first page decides.
        "distinct_later": pc.if_else(pc.less(distinct, PAGE_ROWS), pa.scalar(1, pa.int64()), distinct),
        "flag": pa.array(np.arange(n) % 2 == 0),
        "no_values": pa.nulls(n, pa.string()),
        "nested": pa.array([{"a": 1}] * n, pa.struct([("a", pa.int64())])),
    })
    assert dictionary_columns(table) == ["constant", "few_longs", "distinct_later", "nested.a"]


def test_a_column_whose_dictionary_would_be_as_large_as_its_values_is_plain() -> None:
    # 1,000 values of 2 distinct 1-byte strings: 10 dictionary bytes + 126 index bytes < 5,000 plain.
    assert dictionary_columns(pa.table({"s": ["a", "b"] * 500})) == ["s"]
    # 4 distinct 8-byte longs among 4 rows: 32 + 2 bytes is not below 32 plain.
    assert dictionary_columns(pa.table({"v": pa.array([1, 2, 3, 4], pa.int64())})) == []


@settings(max_examples=60, deadline=None)
@given(st.sets(st.text(max_size=12), min_size=1, max_size=300), st.sampled_from([pa.string(), pa.binary()]))
def test_columns_named_distinct_are_plain_as_the_rule_would_choose(values: set[str], kind: pa.DataType) -> None:
    # The writer names the commit sequence numbers and an upsert's record keys `distinct`, which skips
    # hashing their first page; for values that are distinct the rule itself never keeps a dictionary
    # (it would repeat every value and add the indices), so the choice is the same.
    column = pa.array(sorted(values), pa.string()).cast(kind)
    assert _rule_by_hashing(column) is False
    assert dictionary_columns(pa.table({"k": column})) == []
    assert dictionary_columns(pa.table({"k": column}), distinct={"k"}) == []


def test_a_column_wrongly_named_distinct_is_plain_and_the_others_keep_their_rule() -> None:
    table = pa.table({"few": ["a", "b"] * 500, "also_few": ["c", "d"] * 500})
    assert dictionary_columns(table) == ["few", "also_few"]
    assert dictionary_columns(table, distinct={"few"}) == ["also_few"]


def _rule_by_hashing(column: pa.Array | pa.ChunkedArray) -> bool:
    """parquet-mr's first-page rule computed the long way, every value hashed (the reference for
    the shortcuts in `runner.hudi.parquet_dictionary`); the page limits are read off the module, so a test
    may lower them. Byte arrays of any width, and 8-byte numbers (floats kept apart by their bits,
    as parquet-mr's dictionary keeps -0.0, 0.0 and NaNs apart)."""
    rows, page_bytes = encoding.PAGE_ROWS, encoding.PAGE_BYTES
    page = column.slice(0, rows).drop_null()
    if isinstance(page, pa.ChunkedArray):
        page = page.combine_chunks()
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) \
            or pa.types.is_large_binary(kind):
        raw = [v.encode() if isinstance(v, str) else v for v in page.to_pylist()]
        sizes = [len(v) + 4 for v in raw]
        if sum(sizes) > page_bytes:
            page = page.slice(0, max(1, int(len(page) * page_bytes / sum(sizes))))
            raw, sizes = raw[: len(page)], sizes[: len(page)]
        plain = sum(sizes)
        values = set(raw)
        dictionary = sum(len(v) + 4 for v in values)
    else:
        width = 8
        page = page.slice(0, page_bytes // width)
        plain = len(page) * width
        values = {np.float64(v).tobytes() if isinstance(v, float) else v for v in page.to_pylist()}
        dictionary = len(values) * width
    if not len(page):
        return False
    return dictionary + 1 + -(-len(page) * max(len(values) - 1, 0).bit_length() // 8) < plain


def test_the_shortcuts_decide_as_hashing_every_value_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """One value throughout and strictly increasing numbers are decided without hashing the page;
    every column, shortcut or not, gets the answer the rule computed the long way gives."""
    rng = np.random.default_rng(7)
    n = PAGE_ROWS + 100
    columns = {
        "constant_long": pa.array(np.full(n, 42, np.int64)),
        "increasing_long": pa.array(np.arange(n, dtype=np.int64) * 3),
        "increasing_with_nulls": pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int64()),
        "increasing_then_repeating": pa.array(np.r_[np.arange(10), np.zeros(n - 10, np.int64)].astype(np.int64)),
        "decreasing_long": pa.array(np.arange(n, 0, -1, dtype=np.int64)),
        "random_long": pa.array(rng.integers(0, 50, n)),
        "one_row": pa.array([5], pa.int64()),
        "two_equal_rows": pa.array([5, 5], pa.int64()),
        "constant_text": pa.repeat(pa.scalar("region=r1"), n),
        "two_equal_texts": pa.array(["ab", "ab"]),
        "few_texts": pa.array([f"r{i % 3}" for i in range(n)]),
        "distinct_texts": pa.array([f"key-{i}" for i in range(n)]),
        "zeros_of_both_signs": pa.array([0.0, -0.0] * 600),
        "nans_and_a_number": pa.array([float("nan"), 1.0] * 600),
        "increasing_doubles": pa.array(np.arange(n) * 1.5),
        "increasing_through_both_zeros": pa.array([-1.0, -0.0, 0.0, 1.0] * 300),
        "increasing_then_nan": pa.array([*np.arange(500) * 0.5, float("nan")]),
        "constant_texts_with_nulls": pa.array([None if i % 5 == 0 else "x" for i in range(n)]),
        # Sliced, chunked byte arrays: their bytes are read off offsets that do not start at 0.
        "sliced_chunks": pa.chunked_array([pa.array([f"k{i % 40}" for i in range(900)]).slice(300),
                                           pa.array([f"k{i}" for i in range(300)]).slice(7, 100)]),
        "sliced_after_long_values": pa.array(["x" * 100_000] * 20 + [f"k{i}" for i in range(1000)]).slice(20),
        "texts_past_a_page_of_bytes": pa.array([f"{i:0100d}" for i in range(n)]),
        "few_texts_past_a_page_of_bytes": pa.array([f"{i % 3:0100d}" for i in range(n)]),
    }
    expected = {name: _rule_by_hashing(column) for name, column in columns.items()}
    hashed: list[str] = []
    unique = pc.unique

    def counted(values: object, *args: object, **kwargs: object) -> object:
        hashed.append(str(getattr(values, "type", "")))
        return unique(values, *args, **kwargs)

    monkeypatch.setattr(pc, "unique", counted)
    monkeypatch.setattr(pc, "count_distinct", lambda *a, **k: pytest.fail("count_distinct hashes every value"))
    for name, column in columns.items():
        hashed.clear()
        assert (name in dictionary_columns(pa.table({name: column}))) == expected[name], name
        if name in ("constant_long", "increasing_long", "increasing_with_nulls", "one_row", "two_equal_rows",
                    "constant_text", "two_equal_texts", "constant_texts_with_nulls", "increasing_doubles"):
            assert hashed == [], name  # decided without hashing
    assert expected["constant_long"] and expected["few_texts"] and not expected["increasing_long"]
    assert not expected["one_row"] and expected["two_equal_rows"]


_BYTE_TYPES = (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())
# Few short values (so pages repeat and one-valued pages come up), the empty string among them.
_TEXTS = st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "bb", "key-1", "\u00e9t\u00e9"]),
                            st.text(max_size=6)), max_size=60)
_DOUBLES = st.lists(st.one_of(st.none(), st.sampled_from([0.0, -0.0, float("nan"), float("inf"), -float("inf")]),
                              st.floats(allow_nan=True, allow_infinity=True, width=64)), max_size=60)


def _chunked(values: list[object], kind: pa.DataType, cuts: list[int], offset: int) -> pa.ChunkedArray:
    """`values` as a chunked array of `kind`: sliced from a longer array at `offset`, cut at `cuts`."""
    whole = pa.array([values[0] if values else None] * offset + values, kind).slice(offset)
    bounds = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    return pa.chunked_array([whole.slice(a, b - a) for a, b in itertools.pairwise(bounds)] or [whole],
                            kind)


@settings(max_examples=300, deadline=None)
@given(values=_TEXTS, kind=st.sampled_from(_BYTE_TYPES), cuts=st.lists(st.integers(0, 60), max_size=4),
       offset=st.integers(0, 5), one_valued=st.booleans(), page_rows=st.integers(1, 40),
       page_bytes=st.integers(1, 200))
def test_the_byte_array_rule_matches_hashing_every_value(
    values: list[str | None], kind: pa.DataType, cuts: list[int], offset: int,
    one_valued: bool, page_rows: int, page_bytes: int,
) -> None:
    """Sliced and chunked string / binary / large arrays, nulls, empty strings, one-valued pages, and
    pages cut by rows or by bytes (limits lowered so that small arrays reach them): the decision
    read off the offsets, with its one-value shortcut, is the one hashing every value gives."""
    if one_valued:
        values = [v if v is None else (values[0] or "") for v in values]
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        values = [v if v is None else v.encode() for v in values]  # type: ignore[misc]
    column = _chunked(values, kind, cuts, offset)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encoding, "PAGE_ROWS", page_rows)
        patch.setattr(encoding, "PAGE_BYTES", page_bytes)
        assert encoding._dictionary_pays(column) == _rule_by_hashing(column)


@settings(max_examples=300, deadline=None)
@given(values=_DOUBLES, ordered=st.booleans(), cuts=st.lists(st.integers(0, 60), max_size=4),
       offset=st.integers(0, 5), page_bytes=st.integers(8, 400))
def test_the_float_rule_matches_hashing_every_value(
    values: list[float | None], ordered: bool, cuts: list[int], offset: int,
    page_bytes: int,
) -> None:
    """Doubles with NaN, -0.0 and 0.0, infinities and nulls, often sorted (so strictly increasing
    runs take the shortcut): the decision is the one hashing every value by its bits gives."""
    if ordered:
        values = sorted((v for v in values if v is not None and v == v), key=float) + \
            [v for v in values if v is None or v != v]
    column = _chunked(values, pa.float64(), cuts, offset)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encoding, "PAGE_BYTES", page_bytes)
        assert encoding._dictionary_pays(column) == _rule_by_hashing(column)


def test_an_upsert_into_files_holding_a_key_twice_writes_valid_files_with_the_right_rows(
        project: Callable[..., Path]) -> None:
    """Hudi's insert keeps a key given twice, so an old file may hold it twice; the upsert's new
    file of that group then holds the merged record twice (Hudi's merge replaces each old copy),
    and its key column, hinted distinct, is plain: the files stay valid and the rows right."""
    root = project(t=table_yaml("t"))
    n = 3000
    ids = [i // 2 for i in range(n)]  # every key twice
    runner.write(pa.table({"id": ids, "region": ["eu"] * n, "name": [f"n{i}" for i in range(n)], "ts": [1] * n}),
                 "t", project_dir=root, operation="insert")
    base = root / "warehouse" / "t"
    assert len(oracle_rows(base)) == n

    result = runner.write(pa.table({"id": [0, 1, 5000], "region": ["eu"] * 3, "name": ["u0", "u1", "new"],
                                    "ts": [2, 2, 2]}), "t", project_dir=root)

    rows = oracle_rows(base, columns=("id", "name"))
    assert len(rows) == n + 1
    assert [r for r in rows if r["id"] in (0, 1, 5000)] == sorted(
        [{"id": 0, "name": "u0"}] * 2 + [{"id": 1, "name": "u1"}] * 2 + [{"id": 5000, "name": "new"}], key=repr)
    assert {r["name"] for r in rows} - {"u0", "u1", "new"} == {f"n{i}" for i in range(4, n)}
    for name in result.files:
        written = pq.read_table(base / name)  # every page decodes
        assert written.num_rows == n + 1
        assert not _dictionary_pages(base / name)["_hoodie_record_key"]


def _orders(start: int, count: int, ts: int, *, code: Callable[[int], str]) -> pa.Table:
    ids = np.arange(start, start + count, dtype=np.int64)
    return pa.table({
        "id": ids, "region": pa.repeat(pa.scalar("r0"), count),
        "name": pa.array([f"customer-{i}" for i in ids.tolist()]),
        "code": pa.array([code(i) for i in ids.tolist()]),  # few values on the first page
        "ts": pa.array(np.full(count, ts, dtype=np.int64)),
    })


@pytest.mark.parametrize("first_page_updated", [False, True])
def test_a_merge_keeping_the_first_page_writes_the_old_files_plain_columns_plain(
        project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, first_page_updated: bool) -> None:
    """A merge whose updates leave the old file's first `PAGE_ROWS` rows as they were writes the
    columns the old file wrote plain plain again without hashing that page
    (`old_file_plain_columns`); the others, and all of them after an update on the first page, are
    decided afresh. Either way the new file's choices are the rule's on its own first page, and the
    `hudi` reader reads the upsert's rows."""
    root = project(orders=table_yaml("orders"))
    n = PAGE_ROWS + 4000
    runner.write(_orders(0, n, 1, code=lambda i: f"c{i % 5}"), "orders", project_dir=root, operation="bulk_insert")
    updated = [7, PAGE_ROWS + 10] if first_page_updated else [PAGE_ROWS + 10, PAGE_ROWS + 11]
    upsert = pa.concat_tables([
        _orders(i, 1, 2, code=lambda i: "changed") for i in updated
    ] + [_orders(n, 100, 2, code=lambda i: f"c{i % 5}")])

    decided: list[str] = []
    original = encoding._dictionary_pays

    def counted(column: pa.ChunkedArray) -> bool:
        decided.append(str(column.type))
        return original(column)

    monkeypatch.setattr(encoding, "_dictionary_pays", counted)
    result = runner.write(upsert, "orders", project_dir=root)
    monkeypatch.undo()

    assert result.num_updates == 2 and result.num_inserts == 100 and len(result.files) == 1
    path = root / "warehouse" / "orders" / result.files[0]
    new_rows = pq.read_table(path)
    distinct = {"_hoodie_commit_seqno", "_hoodie_record_key"}
    rule = set(dictionary_columns(new_rows, distinct=distinct))
    assert {c for c, has in _dictionary_pages(path).items() if has} == rule
    assert {"code", "region", "_hoodie_file_name"} <= rule and "name" not in rule
    # Hashed afresh: the columns with a dictionary, or every column but the two known distinct.
    assert len(decided) == len(new_rows.schema) - len(distinct) - (0 if first_page_updated else 2)  # id, name
    codes = {r["id"]: r["code"] for r in oracle_rows(root / "warehouse" / "orders", columns=("id", "code"))}
    assert len(codes) == n + 100 and all(codes[i] == "changed" for i in updated)
    assert codes[PAGE_ROWS + 12] == f"c{(PAGE_ROWS + 12) % 5}"


def test_only_a_plain_choice_of_an_old_file_is_passed_on() -> None:
    """A file with a dictionary on a distinct column (Arrow's default keeps one on every column)
    passes on nothing for that column: the rule decides it again."""
    n = PAGE_ROWS + 10
    table = pa.table({"distinct": pa.array(np.arange(n, dtype=np.int64)).cast(pa.string()),
                      "few": pa.array([f"v{i % 3}" for i in range(n)]),
                      "empty": pa.nulls(n, pa.string())})
    for use_dictionary, plain in ((True, set()), (["few"], {"distinct"})):
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, use_dictionary=use_dictionary, store_schema=False)
        metadata = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata
        assert encoding.old_file_plain_columns(metadata) == plain
    short = pa.BufferOutputStream()
    pq.write_table(table.slice(0, PAGE_ROWS - 1), short, use_dictionary=False)
    assert encoding.old_file_plain_columns(pq.ParquetFile(pa.BufferReader(short.getvalue())).metadata) == set()
