"""Record keys and partition paths as Spark column expressions, the way Hudi's key generators build them.

Values become strings as Hudi renders Avro values (`HoodieAvroUtils.getNestedFieldValAsString` with
`consistentLogicalTimestampEnabled=false`): numbers and booleans print as Java does, a date as
`yyyy-MM-dd`, a timestamp as its raw epoch microseconds.

- Record key, one field (Simple, Nonpartitioned): the value; null or empty fails the write, as
  Hudi's `HoodieKeyException` does.
- Record key, pairs (Complex, or several fields; see `KeyLayout.complex_keys` for Complex with one
  field, whose encoding `sample_record_key` reads from the table): `f1:v1,f2:v2`, a null value written `__null__`
  and an empty one `__empty__`; only all-null-or-empty fails.
- Partition path: each field's value, `field=value` when hive style, joined by `/`; a null or empty
  value becomes `__HIVE_DEFAULT_PARTITION__`. A value containing `/` is refused: without URL
  encoding it would silently add a folder level. So is a value that would name no partition
  folder of the table (`folder_message`): without hive style `.`, `..` or a name starting
  `.hoodie` (the table's root, its parent, the timeline folder or a partition marker; a nested
  `.hoodie` makes the folder above it another table's root to the runner's listing); in any style
  an ASCII control character, which the `hudi` reader's path parser (object_store) rejects,
  failing the read of the whole table; and a folder name (`field=value` when hive style) longer than
  `MAX_FOLDER_BYTES` in UTF-8, which local file systems refuse to create (NAME_MAX) only once the
  data file is written, after the instant is requested (`length_message`).

Failures are raised inside Spark with `raise_error` and a message starting with `ERROR_PREFIX`, which
the writer turns back into a `RefusedError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from runner.errors import RefusedError
from runner.hudi import footer
from runner.hudi.instant import InstantTime
from runner.hudi.metadata import CommitMetadata
from runner.selection import did_you_mean
from runner.storage import Storage
from runner.writer.create import KeyLayout
from runner.writer.schema import SparkType

if TYPE_CHECKING:
    from pyspark.sql import Column

ERROR_PREFIX = "runner.writer: "
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
NULL_PLACEHOLDER = "__null__"
EMPTY_PLACEHOLDER = "__empty__"
# Both engines test a value with these patterns (Java's regex in Spark, RE2 in Arrow read them alike).
CONTROL_PATTERN = "[\\x00-\\x1f\\x7f]"
RESERVED_PATTERN = "^(\\.|\\.\\.|\\.hoodie.*)$"
# NAME_MAX of ext4, xfs, btrfs, APFS and NTFS alike: a longer folder name cannot be created.
MAX_FOLDER_BYTES = 255
_CASTABLE = ("string", "byte", "short", "integer", "long", "boolean", "float", "double", "date")


def record_key_column(layout: KeyLayout, types: Mapping[str, SparkType]) -> Column:
    """The `_hoodie_record_key` expression for a DataFrame with the given column types."""
    from pyspark.sql import functions as F

    fields = layout.record_key_fields
    values = [_as_string(f, types) for f in fields]
    if not layout.complex_keys:
        value = values[0]
        message = (f"{ERROR_PREFIX}record key field {fields[0]!r} is null or empty in a row of table "
                   f"{layout.table_name!r}; Hudi requires a value")
        return F.when(value.isNull() | (value == ""), F.raise_error(F.lit(message))).otherwise(value)
    parts = [
        F.concat(F.lit(f"{f}:"), F.when(v.isNull(), F.lit(NULL_PLACEHOLDER))
                 .when(v == "", F.lit(EMPTY_PLACEHOLDER)).otherwise(v))
        for f, v in zip(fields, values, strict=True)
    ]
    all_missing = F.lit(True)
    for v in values:
        all_missing = all_missing & (v.isNull() | (v == ""))
    message = (f"{ERROR_PREFIX}record key fields {list(fields)} are all null or empty in a row of table "
               f"{layout.table_name!r}; Hudi requires a value")
    return F.when(all_missing, F.raise_error(F.lit(message))).otherwise(F.concat_ws(",", *parts))


def partition_path_column(layout: KeyLayout, types: Mapping[str, SparkType]) -> Column:
    """The `_hoodie_partition_path` expression; `""` for a non-partitioned table."""
    from pyspark.sql import functions as F

    if not layout.partition_fields:
        return F.lit("")
    segments = []
    for index, field in enumerate(layout.partition_fields):
        value = _as_string(field, types)
        message = f"{ERROR_PREFIX}partition field {field!r} has a value containing '/', which would nest folders"
        checked = F.when(F.instr(value, "/") > 0, F.raise_error(F.lit(message))).otherwise(value)
        if index == 0:  # the partition path's first folder: a ':' there names a URI scheme
            checked = F.when(F.instr(value, ":") > 0, F.raise_error(F.lit(colon_message(field)))).otherwise(checked)
        checked = F.when(value.rlike(CONTROL_PATTERN), F.raise_error(F.lit(folder_message(field, control=True)))
                         ).otherwise(checked)
        if not layout.hive_style:
            checked = F.when(value.rlike(RESERVED_PATTERN), F.raise_error(F.lit(folder_message(field, control=False)))
                             ).otherwise(checked)
        allowed = max_value_bytes(field, hive_style=layout.hive_style)
        checked = F.when(F.octet_length(value) > allowed, F.raise_error(F.lit(length_message(field, allowed)))
                         ).otherwise(checked)
        text = F.when(value.isNull() | (value == ""), F.lit(DEFAULT_PARTITION)).otherwise(checked)
        segments.append(F.concat(F.lit(f"{field}="), text) if layout.hive_style else text)
    return F.concat_ws("/", *segments)


def colon_message(field: str) -> str:
    """Why a ':' in the first partition field's value is refused (both engines say it alike)."""
    return (f"{ERROR_PREFIX}partition field {field!r} has a value containing ':', which Hudi reads as a URI scheme "
            "in the first folder of a partition path (its paths take what comes before the ':' for one), so Hudi "
            "could not read or write the partition")


def folder_message(field: str, *, control: bool) -> str:
    """Why a value that names no partition folder is refused (both engines say it alike)."""
    if control:
        return (f"{ERROR_PREFIX}partition field {field!r} has a value containing a control character (a newline, "
                "tab, NUL, ...), which the hudi reader cannot parse in a path, so it could not read the table")
    return (f"{ERROR_PREFIX}partition field {field!r} has a value that is '.', '..' or starts with '.hoodie'; "
            "the table names partition folders by value alone (hive_style_partitioning=false), so it would "
            "name the table's root, a folder outside it, or Hudi's own timeline or partition marker, not a partition")


def max_value_bytes(field: str, *, hive_style: bool) -> int:
    """The longest value, in UTF-8 bytes, whose partition folder name fits `MAX_FOLDER_BYTES`."""
    return MAX_FOLDER_BYTES - (len(f"{field}=".encode()) if hive_style else 0)


def length_message(field: str, allowed: int) -> str:
    """Why a partition value too long for a folder name is refused (both engines say it alike)."""
    return (f"{ERROR_PREFIX}partition field {field!r} has a value longer than {allowed} bytes in UTF-8; "
            f"its partition folder's name would pass the {MAX_FOLDER_BYTES} bytes a file system allows "
            "a name, so no data file could be written there")


def require_key_field(field: str, types: Mapping[str, SparkType], *, source: str) -> SparkType:
    """The type of a key or partition field of the input (`source`: "DataFrame", "Arrow input"),
    or a refusal naming the columns there are."""
    if field not in types:
        raise RefusedError(
            f"The {source} has no column {field!r}, which the table uses as a key or partition field; "
            f"columns: {', '.join(types)}{did_you_mean(field, types)}.",
            hint="add the column, or check the table's record_key and partition_by.",
        )
    return types[field]


def require_precombine_field(layout: KeyLayout, types: Mapping[str, SparkType], *, source: str) -> None:
    """Refuse an input (`source`: "DataFrame", "Arrow input") without the table's precombine field."""
    if layout.precombine_field and layout.precombine_field not in types:
        raise RefusedError(
            f"The {source} has no column {layout.precombine_field!r}, the table's precombine field; "
            f"columns: {', '.join(types)}{did_you_mean(layout.precombine_field, types)}.",
            hint="add the column: it decides which of several records with one key is kept.",
        )


def _as_string(field: str, types: Mapping[str, SparkType]) -> Column:
    from pyspark.sql import functions as F

    kind = require_key_field(field, types, source="DataFrame")
    column = F.col(f"`{field}`")
    if kind == "timestamp":
        return F.unix_micros(column).cast("string")
    if isinstance(kind, str) and (kind in _CASTABLE or kind.startswith("decimal(")):
        return column.cast("string")
    raise RefusedError(
        f"Column {field!r} of type {kind if isinstance(kind, str) else kind.get('type')} cannot be a record "
        "key or partition field.",
        hint="use a string, number, boolean, date or timestamp column.",
    )


def sample_record_key(storage: Storage, commits: Mapping[InstantTime, CommitMetadata]) -> str | None:
    """A record key the table holds: the footer minimum of a file the newest commit wrote, if any."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for time in sorted(commits, key=lambda t: t.normalized, reverse=True):
        for stat in commits[time].write_stats:
            if stat.path and stat.path.endswith(".parquet") and storage.stat(stat.path) is not None:
                bounds = footer.range_of(pq.ParquetFile(pa.BufferReader(storage.read(stat.path))).metadata.metadata)
                return bounds[0] if bounds else None
    return None
