"""The table's current schema, and whether a write's columns may go into it without breaking readers.

Readers (Hudi's and hudi-rs) take a copy-on-write table's schema from the latest commit's
`extraMetadata.schema` and expect every base file of a snapshot to hold those columns with those
types. A write whose columns differ would commit files that no longer agree with the rest of the
table, so it is refused in the driver before anything is written. The writer does not do schema
evolution (Hudi's added nullable columns); a write must carry exactly the table's columns.

What is reconciled rather than refused, because it changes nothing a reader sees:
- column order: the write is re-ordered to the table's order;
- a column the table declares nullable arriving as non-nullable: written as nullable, like the
  rest of the table (Hudi reconciles nullability to the table's the same way).
A nullable column where the table's is required is refused: it could carry nulls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from runner.errors import RefusedError
from runner.hudi.properties import TableConfig
from runner.hudi.state import TableMetadata
from runner.selection import did_you_mean_any
from runner.writer.schema import META_COLUMNS, avro_schema

CREATE_SCHEMA = "hoodie.table.create.schema"


@dataclass(frozen=True, slots=True)
class Column:
    """One top-level column as Avro describes it: its type without the null branch, and nullability."""

    name: str
    avro_type: str  # compact JSON, comparable across schemas produced by the same converter
    nullable: bool


def current_schema(meta: TableMetadata, config: TableConfig) -> str | None:
    """The Avro schema JSON readers take as the table's: the newest completed commit's, else the
    schema recorded at creation, else None (a table that never stored one)."""
    for instant in reversed(meta.timeline.completed_writes):
        commit = meta.commits.get(instant.time)
        schema = commit.extra_metadata.get("schema", "") if commit is not None else ""
        if schema.strip():
            return schema
    created = config.raw.get(CREATE_SCHEMA, "").strip()
    return created or None


def columns_of_avro(schema_json: str) -> list[Column]:
    """The top-level data columns of an Avro record schema (Hudi meta columns left out)."""
    record = json.loads(schema_json)
    fields = record.get("fields", []) if isinstance(record, dict) else []
    return [_column(f) for f in fields if isinstance(f, dict) and f.get("name") not in META_COLUMNS]


def reconcile(
    spark_schema: Mapping[str, object], table_schema: str, *, table: str, where: str
) -> tuple[list[str], dict[str, object]]:
    """Check the write's columns against the table's; return the column order and Spark schema to write.

    Args:
        spark_schema: the write's data columns, `df.schema.jsonValue()`.
        table_schema: the table's Avro schema JSON (`current_schema`).
        table: `hoodie.table.name`, which names the Avro records.
        where: the table's location, for messages.

    Returns:
        The columns in the table's order, and `spark_schema` re-ordered likewise with nullability
        widened where the table's column is nullable.

    Raises:
        RefusedError: a missing or extra column, a different type, or nulls into a required column.
    """
    ours = {c.name: c for c in columns_of_avro(json.dumps(avro_schema(spark_schema, table)))}
    theirs = columns_of_avro(table_schema)
    names = [c.name for c in theirs]
    missing = [n for n in names if n not in ours]
    extra = [n for n in ours if n not in set(names)]
    if extra:
        _refuse(
            where,
            f"column(s) {_listed(extra)} are not in the table (its columns: {_listed(names)})"
            f"{did_you_mean_any(extra, missing)}; "
            "adding columns (schema evolution) is not supported by the writer",
            "write only the table's columns, or write this data to a new table.",
        )
    if missing:
        _refuse(
            where,
            f"the records lack the table's column(s) {_listed(missing)}",
            "add the missing columns (null where unknown, cast to the table's type) before writing.",
        )
    for column in theirs:
        mine = ours[column.name]
        if mine.avro_type != column.avro_type:
            _refuse(
                where,
                f"column {column.name!r} is {_shown(mine.avro_type)} in the records but "
                f"{_shown(column.avro_type)} in the table",
                f"cast {column.name!r} to the table's type before writing.",
            )
        if mine.nullable and not column.nullable:
            _refuse(
                where,
                f"column {column.name!r} is nullable in the records but required in the table",
                f"drop or fill nulls in {column.name!r} and make it non-nullable before writing.",
            )
    fields = {str(f["name"]): dict(f) for f in _spark_fields(spark_schema)}
    for column in theirs:
        if column.nullable:
            fields[column.name]["nullable"] = True
    return names, {**spark_schema, "fields": [fields[n] for n in names]}


def _column(field: Mapping[str, object]) -> Column:
    kind = field.get("type")
    nullable = isinstance(kind, list) and "null" in kind
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        kind = rest[0] if len(rest) == 1 else rest
    return Column(str(field.get("name")), json.dumps(kind, separators=(",", ":"), sort_keys=True), nullable)


def _spark_fields(spark_schema: Mapping[str, object]) -> Sequence[Mapping[str, object]]:
    fields = spark_schema.get("fields", [])
    assert isinstance(fields, list)
    return fields


def _listed(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _shown(avro_type: str) -> str:
    plain = avro_type.strip('"')
    return plain if len(plain) <= 80 else plain[:77] + "..."


def _refuse(where: str, why: str, hint: str) -> None:
    raise RefusedError(f"Refusing to write {where}: {why}; nothing was written.", hint=hint)
