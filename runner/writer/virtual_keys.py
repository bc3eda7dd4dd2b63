"""Record keys of a table that stores none: Hudi's virtual keys (`hoodie.populate.meta.fields=false`).

Such a table's base files hold the five `_hoodie_*` columns, all null but `_hoodie_file_name` (the
file's own name, which Hudi's create and merge handles set whatever `populateMetaFields` says), and
no record-key footer: Hudi writes the bloom filter and the key range only with meta fields
(`HoodieFileWriterFactory`'s `enableBloomFilter`), and so does this writer. Where the writer needs
a stored record's key (the index, and the merge's match of old records to new ones) it computes it
from the record-key fields, by the rule an Arrow input's keys follow (`arrow_input.record_keys`).

Why that is safe: an upsert updates a record only if the key it computes for the arriving record
equals the key it computes for the stored one; a difference would write the record a second time.
Both keys are now computed by the writer, so they must be computed alike:

- The arriving records of a Spark DataFrame get their keys from Spark's casts (`runner.writer.keys`),
  the stored records from Arrow's. The two agree, as tested for Arrow inputs, for the key field types
  `arrow_input.KEY_TYPES` lists (strings, integers, booleans, dates, timestamps); a table with a key
  field of another type (floating point, decimal: Java renders them) is refused before anything is
  written.
- A single-field ComplexKeyGenerator table's encoding (`field:value` or the bare value) is settled
  by a stored key in a table with meta fields (`KeyLayout.bare_single_key`). Here no key is stored
  and none is needed: the writer's encoding is used for both sides, and Hudi's own writers compute
  theirs alike on both sides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.errors import RefusedError
from runner.writer.create import KeyLayout
from runner.writer.schema import SparkType, field_types

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class VirtualKeys:
    """How to compute the record keys of a virtual-key table's records (picklable: Spark tasks use it).

    Args:
        layout: the table's key layout.
        types: the Spark type of each record key field.
    """

    layout: KeyLayout
    types: Mapping[str, SparkType]

    @classmethod
    def of(cls, layout: KeyLayout, spark_schema: Mapping[str, object], where: str) -> VirtualKeys | None:
        """The table's virtual keys, or None when it stores its keys (meta fields populated).

        Raises:
            RefusedError: a record key field whose text the writer cannot compute exactly as both
                engines do (see the module docstring); `where` names the table in the message.
        """
        if not layout.virtual_keys:
            return None
        refuse_uncomputable_keys(layout.record_key_fields, spark_schema, where)
        types = field_types(spark_schema)
        # A key field the records lack is refused by the key rules (`keys.require_key_field`), by name.
        return cls(layout, {field: types[field] for field in layout.record_key_fields if field in types})

    @property
    def columns(self) -> list[str]:
        """The data columns the keys are computed from."""
        return list(self.layout.record_key_fields)

    def keys(self, records: pa.Table, path: str) -> pa.Array:
        """The record keys of stored `records` (read from the base file `path`), as one string array.

        Raises:
            RefusedError: a record whose key fields give no key (null or empty), naming the file.
        """
        import pyarrow as pa

        from runner.writer.arrow_input import record_keys

        try:
            keys = record_keys(records, self.layout, self.types)
        except RefusedError as error:
            raise RefusedError(f"Cannot compute the record keys of {path}: {error.message}",
                               hint="a file Hudi wrote holds a key in every record; check which writer wrote it.",
                               ) from None
        return keys.combine_chunks().cast(pa.string())


def refuse_uncomputable_keys(fields: Sequence[str], spark_schema: Mapping[str, object], where: str) -> None:
    """Refuse (RefusedError) a virtual-key table's key field whose keys the two engines could compute
    differently (see the module docstring); `where` names the table. A field the records lack is left
    to the key rules' own refusal (`keys.require_key_field`)."""
    from runner.writer.arrow_input import KEY_TYPES

    types = field_types(spark_schema)
    for field in fields:
        kind = types.get(field)
        if kind is None or kind in KEY_TYPES:
            continue
        shown = kind if isinstance(kind, str) else kind.get("type")
        raise RefusedError(
            f"Refusing to write {where}: it stores no record keys (hoodie.populate.meta.fields=false), so the "
            f"writer computes them from the key fields, and key field {field!r} is of type {shown}; the writer "
            "computes keys only from string, integer, boolean, date and timestamp fields. Nothing was written.",
            hint="write this table with Hudi itself, or key it on a string, integer, boolean, date or timestamp "
                 "column.",
        )


def stored_keys(column: pa.Array | pa.ChunkedArray, path: str) -> pa.Array:
    """The `_hoodie_record_key` values a file of a table with meta fields holds, as one string array.

    Raises:
        RefusedError: a null key. Hudi writes a key into every record when meta fields are
            populated, so such a file belongs to a table without them whose `hoodie.properties`
            says otherwise (edited by hand, or copied); its records' keys would match nothing and
            an upsert would write them a second time.
    """
    import pyarrow as pa

    keys = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if keys.null_count:
        raise RefusedError(
            f"Refusing to write: {path} holds {keys.null_count} of {len(keys)} records without a "
            "_hoodie_record_key, but the table says its records carry meta fields (hoodie.populate.meta.fields "
            "is not false); an upsert could not find those records and would write them again. Nothing was "
            "written.",
            hint="if the table was created without meta fields, restore hoodie.populate.meta.fields=false in "
                 ".hoodie/hoodie.properties (and declare meta_fields: false).",
        )
    return keys.cast(pa.string())
