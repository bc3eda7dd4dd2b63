"""An Arrow input for `runner.write`: a `pyarrow.Table` or `RecordBatchReader` written without Spark.

A pipeline that already holds Arrow (and the benchmark against delta-rs, whose input is Arrow) would
otherwise pay a Spark action to turn a DataFrame back into the Arrow the driver engine works on.
An Arrow input always runs on the driver engine, so it is held in memory whole, like the driver
engine's collected input. From here on both inputs take the same steps (`runner.writer.write`):
schema reconciliation, lock, rollback, de-duplication, index, routing, file writes and commit.

What this module restates in Arrow, and where the DataFrame path defines it:

- the Spark schema of the input (`spark_schema`), which the Avro schema, the reconciliation with the
  table and the files' Arrow types are all derived from, as they are from `df.schema.jsonValue()`:
  the one `createDataFrame` gives the same Arrow table (tested), except that a timestamp without a
  time zone stays a local timestamp (`timestamp_ntz`, as with `spark.sql.timestampType=TIMESTAMP_NTZ`)
  where Spark's default would read it in the session's time zone, which a write without Spark has
  not got. Arrow types Spark has no type for (unsigned integers, times, durations, ...) are refused;
- the record key and partition path (`keyed`), the rules of `runner.writer.keys` with the same
  refusals and messages. Key fields may be strings, integers, booleans, dates or timestamps, whose
  text is the same in Arrow as in Spark's casts (decimal digits, `true`, `yyyy-MM-dd` with Spark's
  `+` before a year past 9999, epoch microseconds). Floating point and decimal key fields are
  refused: Spark renders them as Java does (`1.0E10`, scale rules) and Arrow does not, so a key
  could differ from the one a DataFrame write gives the same record;
- the input position `_w_seq` (`monotonically_increasing_id` keeps input order, which is all its
  users need), here the row number.

Precombine fields whose Arrow order is not Spark's (`dedup.orders_like_spark`) are refused for an
upsert: the DataFrame path falls back to Spark's window for them, which needs Spark.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeGuard

from runner.errors import RefusedError
from runner.writer.create import KeyLayout
from runner.writer.keys import (
    CONTROL_PATTERN,
    DEFAULT_PARTITION,
    EMPTY_PLACEHOLDER,
    ERROR_PREFIX,
    NULL_PLACEHOLDER,
    RESERVED_PATTERN,
    colon_message,
    folder_message,
    length_message,
    max_value_bytes,
    require_key_field,
    require_precombine_field,
)
from runner.writer.prepare import SEQ
from runner.writer.schema import META_COLUMNS, PARTITION_PATH, RECORD_KEY, SparkType, arrow_schema

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

# Spark types whose text as a key is the same from Arrow's cast as from Spark's (see the docstring).
KEY_TYPES = frozenset({"string", "byte", "short", "integer", "long", "boolean", "date", "timestamp"})
_INTEGERS = {8: "byte", 16: "short", 32: "integer", 64: "long"}


def is_arrow(data: object) -> TypeGuard[pa.Table | pa.RecordBatchReader]:
    """True for the Arrow inputs `runner.write` takes, without importing pyspark to ask."""
    import pyarrow as pa

    return isinstance(data, (pa.Table, pa.RecordBatchReader))


def prepared(data: pa.Table | pa.RecordBatchReader) -> tuple[pa.Table, dict[str, object]]:
    """The input's data columns (Hudi meta columns dropped) and their Spark schema, values cast to
    the types the files hold (`schema.arrow_schema`), so every later step sees what the DataFrame
    path's `toArrow` would give it.

    Raises:
        RefusedError: a column type Spark has no type for, or values the file's type cannot hold.
    """
    import pyarrow as pa

    table = data.read_all() if isinstance(data, pa.RecordBatchReader) else data
    table = table.drop_columns([c for c in table.column_names if c in META_COLUMNS])
    schema = spark_schema(table.schema)
    return conformed(table, schema), schema


def conformed(table: pa.Table, schema: Mapping[str, object]) -> pa.Table:
    """`table` with the columns and Arrow types of `schema` (a Spark schema, in its column order)."""
    import pyarrow as pa

    fields = [f for f in arrow_schema(schema) if f.name not in META_COLUMNS]
    table = table.select([f.name for f in fields])
    if table.schema.equals(pa.schema(fields)):
        return table
    columns = []
    for field, column in zip(fields, table.columns, strict=True):
        try:
            columns.append(column.cast(field.type) if column.type != field.type else column)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise RefusedError(
                f"Column {field.name!r} of the Arrow input ({column.type}) cannot be written as {field.type}: "
                f"{str(error).splitlines()[0]}; nothing was written.",
                hint=f"cast {field.name!r} to {field.type} first (timestamps are stored in microseconds).",
            ) from None
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def spark_schema(schema: pa.Schema) -> dict[str, object]:
    """The Spark schema (`StructType.jsonValue()` shape) Spark would give a DataFrame of this Arrow schema."""
    return {"type": "struct", "fields": [_spark_field(f) for f in schema]}


def _spark_field(field: pa.Field) -> dict[str, object]:
    return {"name": field.name, "type": _spark_type(field.type, field.name), "nullable": field.nullable,
            "metadata": {}}


def _spark_type(kind: pa.DataType, name: str) -> SparkType:
    import pyarrow as pa
    import pyarrow.types as t

    if t.is_dictionary(kind):
        return _spark_type(kind.value_type, name)
    if t.is_boolean(kind):
        return "boolean"
    if t.is_signed_integer(kind):
        return _INTEGERS[kind.bit_width]
    if t.is_float32(kind):
        return "float"
    if t.is_float64(kind):
        return "double"
    if t.is_string(kind) or t.is_large_string(kind) or _is_view(kind, "string"):
        return "string"
    if t.is_binary(kind) or t.is_large_binary(kind) or _is_view(kind, "binary"):
        return "binary"
    if t.is_date32(kind) or t.is_date64(kind):
        return "date"
    if t.is_timestamp(kind):
        return "timestamp" if kind.tz is not None else "timestamp_ntz"
    if t.is_decimal(kind) and kind.precision <= 38:
        return f"decimal({kind.precision},{kind.scale})"
    if t.is_struct(kind):
        return {"type": "struct", "fields": [_spark_field(kind.field(i)) for i in range(kind.num_fields)]}
    if t.is_list(kind) or t.is_large_list(kind):
        return {"type": "array", "elementType": _spark_type(kind.value_type, name),
                "containsNull": kind.value_field.nullable}
    if t.is_map(kind):
        return {"type": "map", "keyType": _spark_type(kind.key_type, name),
                "valueType": _spark_type(kind.item_type, name), "valueContainsNull": kind.item_field.nullable}
    raise RefusedError(
        f"Cannot write column {name!r} of Arrow type {kind} to a Hudi table: Spark, whose types the table "
        "schema is written in, has no such type; nothing was written.",
        hint=f"cast {name!r} to a signed integer, float, string, binary, boolean, date, timestamp, decimal "
        f"or a nested type of these (for example `{pa.int64()}` for unsigned integers).",
    )


def _is_view(kind: pa.DataType, name: str) -> bool:
    import pyarrow.types as t

    check = getattr(t, f"is_{name}_view", None)  # view types came with pyarrow 16; the project takes 14
    return bool(check is not None and check(kind))


def keyed(records: pa.Table, layout: KeyLayout, types: Mapping[str, SparkType]) -> pa.Table:
    """`prepare.with_keys` in Arrow: the record key, the partition path and the input position added.

    Raises:
        RefusedError: as `with_keys` and `runner.writer.keys` refuse (a missing precombine or key
            column, a type that cannot be a key, a null or empty key, a `/` in a partition value),
            and for float or decimal key fields (see the module docstring).
    """
    import numpy as np
    import pyarrow as pa

    require_precombine_field(layout, types, source="Arrow input")
    return (records.append_column(RECORD_KEY, record_keys(records, layout, types))
            .append_column(PARTITION_PATH, _partition_path(records, layout, types))
            .append_column(SEQ, pa.array(np.arange(records.num_rows, dtype=np.int64))))


def key_numbers(records: pa.Table, layout: KeyLayout, types: Mapping[str, SparkType]) -> np.ndarray | None:
    """Per record, the number its key is the text of, when the key is one field of a type whose
    text `_as_string` renders from a number, one to one: integers (decimal digits) and timestamps
    (epoch microseconds). Equal numbers give equal keys and unequal numbers unequal keys, so
    `dedup.deduplicated` can tell the keys distinct by these (a `field:` prefix, as complex keys
    carry, changes neither). None for any other key (dates too: their text is a calendar's)."""
    import pyarrow as pa

    if len(layout.record_key_fields) != 1:
        return None
    field = layout.record_key_fields[0]
    kind = types.get(field)
    column = records.column(field)
    if kind in _INTEGERS.values():
        numbers = column.cast(pa.int64())
    elif kind == "timestamp":
        numbers = column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    else:
        return None
    if numbers.null_count:
        return None  # refused by `keyed` before this is asked; no number to stand for a null
    found: np.ndarray = numbers.to_numpy()
    return found


def threads() -> int:
    """The driver's cores, as a local master's `defaultParallelism` counts them."""
    return max(1, len(os.sched_getaffinity(0)))


def record_keys(records: pa.Table, layout: KeyLayout, types: Mapping[str, SparkType]) -> pa.ChunkedArray:
    """Each record's key by `runner.writer.keys`' rules, from its key fields (see `keyed`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fields = layout.record_key_fields
    values = [_as_string(records, f, types) for f in fields]
    if not layout.complex_keys:
        if _any_missing(values[0]):
            _refuse_row(f"record key field {fields[0]!r} is null or empty in a row of table {layout.table_name!r}; "
                        "Hudi requires a value")
        return values[0]
    all_missing = None
    parts = []
    for field, value in zip(fields, values, strict=True):
        missing = pc.or_kleene(pc.is_null(value), pc.equal(value, ""))
        all_missing = missing if all_missing is None else pc.and_(all_missing, missing)
        shown = pc.if_else(pc.is_null(value), NULL_PLACEHOLDER,
                           pc.if_else(pc.equal(value, ""), EMPTY_PLACEHOLDER, value))
        parts.append(pc.binary_join_element_wise(pa.scalar(f"{field}:"), shown, ""))
    if all_missing is not None and pc.any(all_missing).as_py():
        _refuse_row(f"record key fields {list(fields)} are all null or empty in a row of table "
                    f"{layout.table_name!r}; Hudi requires a value")
    return pc.binary_join_element_wise(*parts, ",")


def _partition_path(records: pa.Table, layout: KeyLayout, types: Mapping[str, SparkType]) -> pa.ChunkedArray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if not layout.partition_fields:
        return pa.chunked_array([pa.repeat(pa.scalar(""), records.num_rows)])
    segments = []
    for index, field in enumerate(layout.partition_fields):
        value = _as_string(records, field, types)
        missing = pc.or_kleene(pc.is_null(value), pc.equal(value, ""))
        nested = pc.and_not(pc.fill_null(pc.match_substring(value, "/"), False), missing)
        if pc.any(nested).as_py():
            _refuse_row(f"partition field {field!r} has a value containing '/', which would nest folders")
        if index == 0 and pc.any(pc.fill_null(pc.match_substring(value, ":"), False)).as_py():
            _refuse_row(colon_message(field).removeprefix(ERROR_PREFIX))
        for control, pattern in ((True, CONTROL_PATTERN), (False, RESERVED_PATTERN)):  # keys.folder_message
            if (control or not layout.hive_style) and pc.any(pc.match_substring_regex(value, pattern)).as_py():
                _refuse_row(folder_message(field, control=control).removeprefix(ERROR_PREFIX))
        allowed = max_value_bytes(field, hive_style=layout.hive_style)
        if pc.any(pc.greater(pc.binary_length(value), allowed)).as_py():
            _refuse_row(length_message(field, allowed).removeprefix(ERROR_PREFIX))
        text = pc.if_else(missing, DEFAULT_PARTITION, value)
        segments.append(pc.binary_join_element_wise(pa.scalar(f"{field}="), text, "") if layout.hive_style
                        else text)
    return segments[0] if len(segments) == 1 else pc.binary_join_element_wise(*segments, "/")


def _as_string(records: pa.Table, field: str, types: Mapping[str, SparkType]) -> pa.ChunkedArray:
    import pyarrow as pa

    kind = require_key_field(field, types, source="Arrow input")
    column = records.column(field)
    if kind not in KEY_TYPES:
        shown = kind if isinstance(kind, str) else kind.get("type")
        floating = kind in ("float", "double") or (isinstance(kind, str) and kind.startswith("decimal("))
        raise RefusedError(
            f"Column {field!r} of type {shown} cannot be a record key or partition field"
            + (" of an Arrow input: its text as a key is Java's rendering, which only a DataFrame write gives"
               if floating else "") + ".",
            hint="pass the records as a Spark DataFrame" if floating
            else "use a string, number, boolean, date or timestamp column.",
        )
    if kind == "timestamp":  # epoch microseconds, as `unix_micros` gives them
        column = column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    if kind == "date":
        return _date_text(column)
    return column.cast(pa.string())


# 9999-12-31 in days since the epoch: Spark's cast (java.time's ISO format, as Hudi's
# `LocalDate.toString`) writes a later year with a `+` (`+10000-01-01`), Arrow's cast without one.
_LAST_4_DIGIT_DAY = 2932896


def _date_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    import pyarrow as pa
    import pyarrow.compute as pc

    days = column.cast(pa.date32())
    text = days.cast(pa.string())
    late = pc.greater(days.cast(pa.int32()), _LAST_4_DIGIT_DAY)
    if not pc.any(late).as_py():
        return text
    return pc.if_else(late, pc.binary_join_element_wise(pa.scalar("+"), text, ""), text)


def _any_missing(value: pa.ChunkedArray) -> bool:
    import pyarrow.compute as pc

    return bool(value.null_count) or bool(pc.any(pc.equal(value, "")).as_py())


def _refuse_row(message: str) -> None:
    # The DataFrame path's message, raised in Spark and turned back into this refusal by `write._translate`.
    raise RefusedError(message + ".")
