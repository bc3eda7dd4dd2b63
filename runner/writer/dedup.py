"""De-duplication of collected records in Arrow: the rule of `runner.writer.prepare.deduplicate`.

The driver engine collects the keyed records without Spark's window (whose shuffle was most of the
one Spark action's cost) and picks the winners here. The rule is the Spark one, restated for Arrow:
among records of one (partition path, record key), the greatest precombine value wins, a null value
being the smallest; on a tie, or without a precombine field, the later record in the input (greater
`_w_seq`) wins. Spark's order for floating point values is kept: NaN is greater than every other
value (infinity included), and -0.0 equals 0.0. `tests/writer/test_writer_dedup.py` checks both
definitions pick the same winners on generated inputs with ties, nulls and many duplicates.

Only precombine types whose Arrow order is Spark's order are de-duplicated here (`orders_like_spark`);
for any other type (nested types, strings with a collation) the writer keeps Spark's window.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from runner.writer.prepare import SEQ
from runner.writer.schema import PARTITION_PATH, RECORD_KEY, SparkType

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

# Spark types whose values Arrow sorts in Spark's order (bytewise strings and binary, numbers,
# booleans, dates and timestamps as their integers, decimals by value).
_ORDERED = frozenset({
    "byte", "short", "integer", "long", "float", "double", "string", "binary", "boolean", "date",
    "timestamp", "timestamp_ntz",
})
_DECIMAL = re.compile(r"decimal\(\d+,\s*\d+\)")
_CLASS, _VALUE, _AT = "_w_dclass", "_w_dvalue", "_w_dat"


def orders_like_spark(spark_type: SparkType | None) -> bool:
    """True when Arrow's order of this precombine type is Spark's (None: no precombine field)."""
    if spark_type is None:
        return True
    return isinstance(spark_type, str) and (spark_type in _ORDERED or bool(_DECIMAL.fullmatch(spark_type)))


def deduplicate(records: pa.Table, precombine_field: str | None) -> pa.Table:
    """One record per (partition path, record key), the winner by the module's rule, in input order."""
    return deduplicated(records, precombine_field)[0]


def deduplicated(records: pa.Table, precombine_field: str | None,
                 key_numbers: np.ndarray | None = None) -> tuple[pa.Table, bool]:
    """`deduplicate`, and whether the record keys alone are distinct in what it returns (True) or
    that is not known (False): the tagging's lookup by key needs exactly that, and is spared
    hashing the keys a second time (`local.tag`).

    `key_numbers`: per record, a number its key is the text of, one to one (`arrow_input.key_numbers`:
    a single integer or timestamp key field). Two keys are then equal exactly when their
    numbers are, and numbers are told distinct by sorting them, about a thirtieth of the CPU of
    hashing the strings (`bench/README.md`, "the keys told distinct by their numbers")."""
    import numpy as np
    import pyarrow as pa

    # The usual case, no key given twice, is found on the key alone: one column hashed, not two.
    if key_numbers is not None and numbers_distinct(key_numbers):
        return records, True
    if key_numbers is None and rows_distinct(records.select([RECORD_KEY])):
        return records, True
    keys = records.select([PARTITION_PATH, RECORD_KEY])
    if rows_distinct(keys):
        return records, False  # a key repeats, but in another partition: another record
    order = winners_first(records, precombine_field)
    ranked = keys.take(order).append_column(_AT, order)
    # With one thread, "first" is the first row of each group in the table's order: the winner.
    first = ranked.group_by([PARTITION_PATH, RECORD_KEY], use_threads=False).aggregate([(_AT, "first")])
    kept = np.sort(first.column(f"{_AT}_first").to_numpy())
    return records.take(pa.array(kept, pa.int64())), False


def numbers_distinct(numbers: np.ndarray) -> bool:
    """Whether no number is given twice."""
    import numpy as np

    ordered = np.sort(numbers)
    return bool((ordered[1:] != ordered[:-1]).all())


def rows_distinct(columns: pa.Table) -> bool:
    """Whether no row of `columns` is given twice (a null equals a null). One column is hashed by
    `unique`, which cost about two thirds of a one-key group-by on 100,000 string keys; several by
    a group-by without aggregates, on one thread: cheaper than `count_distinct`, which also spends
    threads."""
    import pyarrow.compute as pc

    if columns.num_columns == 1:
        return bool(len(pc.unique(columns.column(0))) == columns.num_rows)
    return bool(columns.group_by(columns.column_names, use_threads=False).aggregate([]).num_rows == columns.num_rows)


def winners_first(records: pa.Table, precombine_field: str | None) -> pa.Array:
    """Row positions ordered so that, within every key, the winner comes first.

    Arrow places nulls (and NaN) last whatever the direction, so the precombine value is sorted by
    a class first (NaN above every number, null below every value) and by the value second.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    columns: dict[str, pa.ChunkedArray | pa.Array] = {}
    if precombine_field is not None:
        value = records.column(precombine_field)
        valid = pc.is_valid(value).cast(pa.int8())
        if pa.types.is_floating(value.type):
            nan = pc.fill_null(pc.is_nan(value), False).cast(pa.int8())
            valid = pc.add(valid, nan)
        columns[_CLASS] = valid
        columns[_VALUE] = value
    columns[SEQ] = records.column(SEQ)
    table = pa.table(columns)
    return pc.sort_indices(table, sort_keys=[(name, "descending") for name in table.column_names])
