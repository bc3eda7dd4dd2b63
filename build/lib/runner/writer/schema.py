"""The written records' schema, three ways: Spark's, Hudi's Avro, and the Parquet file's Arrow schema.

Hudi's Spark writer turns the DataFrame schema into Avro with Spark's own converter
(`SchemaConverters.toAvroType`), naming the top record `<table>_record` in namespace `hoodie.<table>`,
and then makes every nullable field `["null", T]` with `"default": null`
(`AvroConversionUtils.convertStructTypeToAvroSchema`). That JSON is what a commit stores under
`extraMetadata.schema`, and readers (hudi-rs too) take the table schema from it. Nested names follow
the converter: a struct, or the struct element of an array or map, is a record named after its
field, in the namespace `<enclosing record's full name>`; a decimal is a `fixed` named `fixed` in the
namespace `<enclosing record's full name>.<field>`, of the fewest bytes holding its precision.

The base files carry the same fields behind the five `_hoodie_*` meta columns, and Parquet types
follow the Avro ones: bytes and shorts widen to 32-bit ints (Avro has no smaller int), timestamps
are microseconds adjusted to UTC, timestamps without time zone are local microseconds.

This module works on `StructType.jsonValue()` dictionaries, so it imports neither pyspark nor
(until an Arrow schema is asked for) pyarrow.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from runner.errors import RefusedError

if TYPE_CHECKING:
    import pyarrow as pa

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
META_COLUMNS = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)

SparkType = str | Mapping[str, object]
_PRIMITIVES = {
    "boolean": "boolean",
    "byte": "int",
    "short": "int",
    "integer": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "binary": "bytes",
}
_DECIMAL_RE = re.compile(r"decimal\((\d+),\s*(-?\d+)\)")


def record_name(table: str) -> tuple[str, str]:
    """(record name, namespace) Hudi gives a table's records: `<table>_record`, `hoodie.<table>`."""
    return f"{table}_record", f"hoodie.{table}"


def avro_schema(spark_schema: Mapping[str, object], table: str) -> dict[str, object]:
    """Hudi's Avro writer schema for a DataFrame schema (no meta fields), as commit metadata stores it.

    Args:
        spark_schema: `df.schema.jsonValue()`.
        table: the Hudi table name (`hoodie.table.name`).

    Raises:
        RefusedError: a column type Avro cannot hold (a map with non-string keys, intervals, ...).
    """
    name, namespace = record_name(table)
    return _record(spark_schema, name, namespace)


def avro_schema_json(spark_schema: Mapping[str, object], table: str) -> str:
    """`avro_schema` as compact JSON, the way Jackson prints it in `extraMetadata.schema`."""
    return json.dumps(avro_schema(spark_schema, table), separators=(",", ":"))


def file_avro_schema_json(spark_schema: Mapping[str, object], table: str) -> str:
    """The `parquet.avro.schema` footer value: the meta fields (nullable strings, empty doc) first."""
    schema = avro_schema(spark_schema, table)
    meta = [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_COLUMNS]
    fields = schema["fields"]
    assert isinstance(fields, list)
    return json.dumps({**schema, "fields": meta + fields}, separators=(",", ":"))


def _record(struct: Mapping[str, object], name: str, namespace: str) -> dict[str, object]:
    full_name = f"{namespace}.{name}" if namespace else name
    fields: list[dict[str, object]] = []
    for field in _fields(struct):
        field_name = str(field["name"])
        avro = _avro_type(_type_of(field), field_name, full_name)
        if field.get("nullable", True):
            fields.append({"name": field_name, "type": ["null", avro], "default": None})
        else:
            fields.append({"name": field_name, "type": avro})
    return {"type": "record", "name": name, "namespace": namespace, "fields": fields}


def _avro_type(spark_type: SparkType, field: str, namespace: str) -> object:
    """Avro type of one Spark type; `field` names nested records, `namespace` is the enclosing record."""
    if isinstance(spark_type, str):
        return _avro_atomic(spark_type, field, namespace)
    kind = spark_type.get("type")
    if kind == "struct":
        return _record(spark_type, field, namespace)
    if kind == "array":
        items = _avro_type(_nested(spark_type, "elementType"), field, namespace)
        return {"type": "array", "items": ["null", items] if spark_type.get("containsNull") else items}
    if kind == "map":
        if spark_type.get("keyType") != "string":
            raise _unsupported(field, f"map<{spark_type.get('keyType')}, ...>", "Avro map keys are strings")
        values = _avro_type(_nested(spark_type, "valueType"), field, namespace)
        return {"type": "map", "values": ["null", values] if spark_type.get("valueContainsNull") else values}
    raise _unsupported(field, str(kind), "it has no Avro equivalent")


def _avro_atomic(spark_type: str, field: str, namespace: str) -> object:
    if spark_type in _PRIMITIVES:
        return _PRIMITIVES[spark_type]
    if spark_type == "date":
        return {"type": "int", "logicalType": "date"}
    if spark_type == "timestamp":
        return {"type": "long", "logicalType": "timestamp-micros"}
    if spark_type == "timestamp_ntz":
        return {"type": "long", "logicalType": "local-timestamp-micros"}
    decimal = _DECIMAL_RE.fullmatch(spark_type)
    if decimal:
        precision, scale = int(decimal[1]), int(decimal[2])
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{field}",
            "size": decimal_bytes(precision),
            "logicalType": "decimal",
            "precision": precision,
            "scale": scale,
        }
    raise _unsupported(field, spark_type, "it has no Avro equivalent")


def decimal_bytes(precision: int) -> int:
    """Fewest bytes whose two's complement holds every `precision`-digit number (Spark's rule)."""
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def arrow_schema(spark_schema: Mapping[str, object]) -> pa.Schema:
    """The Arrow schema of a base file: meta columns, then the data columns with Avro-compatible types.

    Nullability follows the Spark schema, as the Avro fields do (`["null", T]` or plain `T`); the
    meta columns are nullable strings, as Hudi declares them.
    """
    import pyarrow as pa

    meta = [pa.field(name, pa.string()) for name in META_COLUMNS]
    return pa.schema(meta + [_arrow_field(field) for field in _fields(spark_schema)])


def _arrow_field(field: Mapping[str, object]) -> pa.Field:
    import pyarrow as pa

    return pa.field(str(field["name"]), _arrow_type(_type_of(field)), nullable=bool(field.get("nullable", True)))


def _arrow_type(spark_type: SparkType) -> pa.DataType:
    import pyarrow as pa

    if isinstance(spark_type, str):
        return _arrow_atomic(spark_type)
    kind = spark_type.get("type")
    if kind == "struct":
        return pa.struct([_arrow_field(f) for f in _fields(spark_type)])
    if kind == "array":
        item = pa.field("element", _arrow_type(_nested(spark_type, "elementType")),
                        nullable=bool(spark_type.get("containsNull", True)))
        return pa.list_(item)
    if kind == "map":
        value = pa.field("value", _arrow_type(_nested(spark_type, "valueType")),
                         nullable=bool(spark_type.get("valueContainsNull", True)))
        return pa.map_(pa.string(), value)
    raise _unsupported("?", str(kind), "it has no Avro equivalent")


def _arrow_atomic(spark_type: str) -> pa.DataType:
    import pyarrow as pa

    simple = {
        "boolean": pa.bool_(),
        "byte": pa.int32(),
        "short": pa.int32(),
        "integer": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "string": pa.string(),
        "binary": pa.binary(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "timestamp_ntz": pa.timestamp("us"),
    }
    if spark_type in simple:
        return simple[spark_type]
    decimal = _DECIMAL_RE.fullmatch(spark_type)
    if decimal:
        return pa.decimal128(int(decimal[1]), int(decimal[2]))
    raise _unsupported("?", spark_type, "it has no Avro equivalent")


def field_types(spark_schema: Mapping[str, object]) -> dict[str, SparkType]:
    """Top-level column name → Spark type (a name like `string`, or a nested type's dictionary)."""
    return {str(f["name"]): _type_of(f) for f in _fields(spark_schema)}


def _fields(struct: Mapping[str, object]) -> Sequence[Mapping[str, object]]:
    fields = struct.get("fields", [])
    assert isinstance(fields, list)
    return fields


def _type_of(field: Mapping[str, object]) -> SparkType:
    value = field["type"]
    assert isinstance(value, (str, dict))
    return value


def _nested(spark_type: Mapping[str, object], key: str) -> SparkType:
    value = spark_type[key]
    assert isinstance(value, (str, dict))
    return value


def _unsupported(field: str, found: str, why: str) -> RefusedError:
    return RefusedError(
        f"Cannot write column {field!r} of Spark type {found} to a Hudi table: {why}.",
        hint="cast the column to a supported type (string, numbers, boolean, date, timestamp, decimal, "
        "binary, or structs, arrays and string-keyed maps of these) before writing.",
    )
