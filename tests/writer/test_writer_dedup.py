"""The Arrow de-duplication of the driver engine picks the winners Spark's window picks.

Both rules run on the very same keyed records (the same `_w_seq`), generated with few keys (many
duplicates), precombine values drawn from a handful (many ties), nulls, and for doubles NaN,
infinities and both zeros; the surviving (partition, key, position) sets must be equal.
"""

from __future__ import annotations

import math
from datetime import date
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.writer import dedup
from runner.writer.create import SIMPLE, KeyLayout
from runner.writer.prepare import SEQ, deduplicate, with_keys
from runner.writer.schema import PARTITION_PATH, RECORD_KEY, field_types

LAYOUT = KeyLayout("t", ("id",), ("region",), "ts", SIMPLE, hive_style=False)
PRECOMBINE_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "long": st.sampled_from([-1, 0, 1, 2, 2**62]),
    "double": st.sampled_from([-0.0, 0.0, 1.5, -math.inf, math.inf, math.nan, 2.0]),
    "string": st.sampled_from(["", "a", "b", "ab", "é", "z"]),
    "date": st.sampled_from([date(1970, 1, 1), date(1969, 12, 31), date(2024, 2, 29)]),
}


def _rows(kind: str) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    row = st.tuples(st.integers(0, 5), st.sampled_from(["eu", "us"]), st.none() | PRECOMBINE_VALUES[kind])
    return st.lists(row, min_size=1, max_size=60)


def _winners_both_ways(spark: Any, rows: list[tuple[Any, ...]], kind: str, precombine: str | None
                       ) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    frame = spark.createDataFrame(rows, f"id long, region string, ts {kind}")
    # One collected table feeds both rules, so both see the same `_w_seq` of every record.
    keyed = with_keys(frame, LAYOUT).toArrow()
    layout_columns = [PARTITION_PATH, RECORD_KEY, SEQ]
    by_spark = deduplicate(spark.createDataFrame(keyed), precombine).select(*layout_columns).collect()
    by_arrow = dedup.deduplicate(keyed, precombine).select(layout_columns).to_pylist()
    return {tuple(r) for r in by_spark}, {tuple(r.values()) for r in by_arrow}


@pytest.mark.parametrize("kind", sorted(PRECOMBINE_VALUES))
def test_arrow_and_spark_deduplication_pick_the_same_winners(spark: Any, kind: str) -> None:
    assert dedup.orders_like_spark(kind)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(rows=_rows(kind), with_precombine=st.booleans())
    def check(rows: list[tuple[Any, ...]], with_precombine: bool) -> None:
        precombine = "ts" if with_precombine else None
        by_spark, by_arrow = _winners_both_ways(spark, rows, kind, precombine)
        assert by_arrow == by_spark
        assert len(by_arrow) == len({(r[0], r[1]) for r in rows})

    check()


def test_ties_go_to_the_later_record_and_nan_beats_infinity(spark: Any) -> None:
    rows = [
        (1, "eu", 2.0), (1, "eu", 2.0),  # tie: the later one
        (2, "eu", math.inf), (2, "eu", math.nan), (2, "eu", None),  # NaN is Spark's greatest double
        (3, "us", None), (3, "us", -0.0), (3, "us", 0.0),  # -0.0 equals 0.0: the later one
        (4, "us", None), (4, "us", None),  # only nulls: the later one
    ]
    by_spark, by_arrow = _winners_both_ways(spark, rows, "double", "ts")
    assert by_arrow == by_spark
    keyed = with_keys(spark.createDataFrame(rows, "id long, region string, ts double"), LAYOUT).toArrow()
    kept = dedup.deduplicate(keyed, "ts")
    positions = {r[SEQ]: i for i, r in enumerate(keyed.select([SEQ]).to_pylist())}
    assert sorted(positions[s] for s in kept.column(SEQ).to_pylist()) == [1, 3, 7, 9]


def test_unique_keys_come_back_unchanged() -> None:
    table = pa.table({PARTITION_PATH: ["a", "a", "b"], RECORD_KEY: ["1", "2", "1"], SEQ: [0, 1, 2],
                      "ts": [3, None, 1]})
    assert dedup.deduplicate(table, "ts") is table


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("123"), st.integers(0, 3)), max_size=8))
def test_keys_are_said_distinct_only_when_no_record_key_is_given_twice(rows: list[tuple[str, str, int]]) -> None:
    """What `deduplicated` says lets the tagging skip its own check, so True must be true, and it is
    said whenever the input's keys are distinct (else the tagging hashes them again for nothing)."""
    table = pa.table({PARTITION_PATH: pa.array([r[0] for r in rows], pa.string()),
                      RECORD_KEY: pa.array([r[1] for r in rows], pa.string()), SEQ: list(range(len(rows))),
                      "ts": pa.array([r[2] for r in rows], pa.int64())})
    kept, distinct = dedup.deduplicated(table, "ts")
    assert kept.equals(dedup.deduplicate(table, "ts"))
    keys = kept.column(RECORD_KEY).to_pylist()
    if distinct:
        assert len(set(keys)) == len(keys)
    if len({r[1] for r in rows}) == len(rows):
        assert distinct is True and kept is table


@pytest.mark.parametrize("spark_type, ordered", [
    ("long", True), ("decimal(10,2)", True), ("timestamp", True), ("string", True),
    ("string collate UTF8_LCASE", False), ({"type": "struct", "fields": []}, False), (None, True),
])
def test_only_types_arrow_orders_as_spark_are_deduplicated_in_arrow(spark_type: Any, ordered: bool) -> None:
    assert dedup.orders_like_spark(spark_type) is ordered


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "b", "k-1"])), max_size=12),
       cut=st.integers(0, 12), columns=st.integers(1, 2))
def test_rows_are_distinct_exactly_when_no_row_repeats(values: list[str | None], cut: int, columns: int) -> None:
    """One column (hashed alone) or two, chunked, nulls repeating like any value: the answer is
    the one a set of the rows gives."""
    cut = min(cut, len(values))
    column = pa.chunked_array([pa.array(values[:cut], pa.string()), pa.array(values[cut:], pa.string())])
    table = pa.table({f"c{i}": column for i in range(columns)})
    assert dedup.rows_distinct(table) == (len(set(values)) == len(values))


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["int8", "int32", "int64", "timestamp"]),
       rows=st.lists(st.tuples(st.sampled_from("ab"), st.integers(-3, 3), st.integers(0, 3)), max_size=8))
def test_keys_told_distinct_by_their_numbers_as_by_their_text(kind: str, rows: list[tuple[str, int, int]]) -> None:
    """A key field whose text is a number's (`arrow_input.key_numbers`) lets `deduplicated` sort the
    numbers instead of hashing the keys: the records it keeps and what it says of them are the
    same, and it says distinct exactly when the keys are."""
    from runner.writer import arrow_input

    arrow_type = pa.timestamp("us", tz="UTC") if kind == "timestamp" else getattr(pa, kind)()
    data = pa.table({"id": pa.array([r[1] for r in rows], pa.int64()).cast(arrow_type),
                     "region": pa.array([r[0] for r in rows], pa.string()),
                     "ts": pa.array([r[2] for r in rows], pa.int64())})
    spark_types = field_types(arrow_input.spark_schema(data.schema))
    records = arrow_input.keyed(data, LAYOUT, spark_types)
    numbers = arrow_input.key_numbers(records, LAYOUT, spark_types)
    assert numbers is not None
    by_numbers = dedup.deduplicated(records, "ts", numbers)
    by_text = dedup.deduplicated(records, "ts")
    assert by_numbers[0].equals(by_text[0]) and by_numbers[1] == by_text[1]
    keys = records.column(RECORD_KEY).to_pylist()
    assert by_numbers[1] is (len(set(keys)) == len(keys))


@pytest.mark.parametrize("kind", [pa.string(), pa.date32(), pa.bool_()])
def test_keys_of_other_types_have_no_numbers(kind: pa.DataType) -> None:
    """Only integers and timestamps are rendered from a number one to one; other keys are hashed."""
    from runner.writer import arrow_input

    values = {pa.string(): ["1"], pa.date32(): [date(2024, 1, 1)], pa.bool_(): [True]}[kind]
    data = pa.table({"id": pa.array(values, kind), "region": ["a"], "ts": [1]})
    spark_types = field_types(arrow_input.spark_schema(data.schema))
    assert arrow_input.key_numbers(data, LAYOUT, spark_types) is None
