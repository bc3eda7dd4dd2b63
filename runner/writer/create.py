"""Creating a copy-on-write table from its declaration, or checking an existing one against it.

A new table gets the `hoodie.properties` a Hudi 0.14 Spark writer would give it (table version 6,
timeline layout 1, `.hoodie/` timeline, JSON commit metadata). The key generator is the one Hudi
infers (`KeyGenUtils.inferKeyGeneratorType`): no partition fields → NonpartitionedKeyGenerator; one
record key field and one partition field → SimpleKeyGenerator; anything else → ComplexKeyGenerator.
Partitions are hive style (`region=eu`), values are not URL-encoded, and partition columns stay in
the data. `hoodie.table.checksum` is Hudi's: CRC32 of `<database>.<table name>`, the database being
empty here because the runner sets none.

An existing table is written only if the writer can keep it readable by Hudi and hudi-rs exactly as
Hudi would: version 6, copy-on-write, Parquet, one of the three key generators, no URL-encoded
partition paths, no dropped partition columns, no change logging for CDC queries, no metadata table
(which this writer cannot keep in step with the data files), and records merged as Hudi's default
payload does (no other `hoodie.compaction.payload.class` or record merger strategy in
`hoodie.properties`). Tables without meta fields (`hoodie.populate.meta.fields=false`, Hudi's
virtual keys; `meta_fields: false` in the declaration creates one) are written too: see
`runner.writer.virtual_keys`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from runner.declarations.model import TableDeclaration
from runner.errors import DeclarationError, Problem, RefusedError
from runner.hudi.properties import TableConfig, format_properties
from runner.hudi.state import METADATA_TABLE, PROPERTIES, metadata_table_enabled
from runner.selection import did_you_mean_columns
from runner.storage import AlreadyExists, Storage
from runner.storage.guard import require_table
from runner.vocabulary import TableType

SIMPLE = "org.apache.hudi.keygen.SimpleKeyGenerator"
COMPLEX = "org.apache.hudi.keygen.ComplexKeyGenerator"
NON_PARTITIONED = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
KEY_GENERATORS = (SIMPLE, COMPLEX, NON_PARTITIONED)

# How the writer merges an arriving record with the stored one: Hudi 0.14's default payload (the
# arriving record wins) through Hudi's default, payload-based record merger.
OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
PAYLOAD_KEYS = ("hoodie.compaction.payload.class", "hoodie.datasource.write.payload.class")
MERGER_STRATEGY_KEY = "hoodie.compaction.record.merger.strategy"
PAYLOAD_MERGER_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """How the writer derives `_hoodie_record_key` and `_hoodie_partition_path` for this table.

    Args:
        table_name: `hoodie.table.name`, which also names the Avro record (`<name>_record`).
        record_key_fields: the record key columns, in order.
        partition_fields: the partition path columns, in order; empty when not partitioned.
        precombine_field: the ordering column that decides between records of one key, if any.
        key_generator: the key generator class Hudi uses for the table.
        hive_style: partition folders are `field=value` rather than `value`.
        bare_single_key: a ComplexKeyGenerator table with one key field stores the bare value
            (as Hudi 0.14.1-1.0 wrote it) rather than `field:value` (0.14.0, 1.1+).
        virtual_keys: the table stores no meta fields (`hoodie.populate.meta.fields=false`): its
            files' `_hoodie_*` columns are null and record keys are computed from the key fields.
    """

    table_name: str
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    precombine_field: str | None
    key_generator: str
    hive_style: bool
    bare_single_key: bool = False
    virtual_keys: bool = False

    @property
    def complex_keys(self) -> bool:
        """Record keys are `field:value` pairs joined by commas rather than the bare value.

        More than one key field always gives pairs. With one key field, ComplexKeyGenerator gives a
        pair in Hudi 0.14.0 and 1.1+ but the bare value in 0.14.1-1.0 (a regression Hudi later
        undid, HUDI-9666); the writer follows what the table already holds (`bare_single_key`).
        """
        if len(self.record_key_fields) > 1:
            return True
        return self.key_generator == COMPLEX and not self.bare_single_key


def key_generator_for(record_key: tuple[str, ...], partition_by: tuple[str, ...]) -> str:
    """The key generator class Hudi infers from the record key and partition fields."""
    if not partition_by:
        return NON_PARTITIONED
    return SIMPLE if len(record_key) == 1 and len(partition_by) == 1 else COMPLEX


def create_table_if_absent(storage: Storage, decl: TableDeclaration, create_schema: str | None) -> bool:
    """Create the table from its declaration if the folder holds no table yet; True if created.

    This is the only write allowed before the folder is known to be a Hudi table, and it writes
    exactly one file, `hoodie.properties`, with an exclusive create, so it needs no lock: of two
    creators one wins and the other finds the table. A folder with a `.hoodie` but no readable
    properties is a damaged table, never re-created over.

    Raises:
        DeclarationError: the table does not exist and the declaration has no `table:` block.
        RefusedError: the declaration asks for a table the writer cannot create.
        NotAHudiTableError: `.hoodie` exists without `hoodie.properties`; nothing was written.
    """
    if storage.stat(PROPERTIES) is not None:
        return False
    if storage.stat(".hoodie") is not None:
        require_table(storage, "write")  # raises: .hoodie without properties
    try:
        storage.write_new(PROPERTIES, properties_bytes(new_table_properties(decl, create_schema)))
    except AlreadyExists:
        return False  # another creator won; the caller checks what it wrote like any existing table
    return True


def open_table(storage: Storage, decl: TableDeclaration) -> TableConfig:
    """Read an existing table's configuration and check that this writer may write it.

    Raises:
        NotAHudiTableError: the folder is not a Hudi table.
        RefusedError: the declaration disagrees with the table, or the table is one this writer
            must not write (see the module docstring).
    """
    require_table(storage, "write")
    config = read_config(storage)
    check_writable(storage, config)
    check_declaration(decl, config)
    return config


def read_config(storage: Storage) -> TableConfig:
    text = storage.read(PROPERTIES).decode("iso-8859-1")
    return TableConfig.parse(text, path=f"{storage.uri}/{PROPERTIES}")


def new_table_properties(decl: TableDeclaration, create_schema: str | None) -> dict[str, str]:
    """`hoodie.properties` of a new table, in a stable order, with the checksum last."""
    spec = decl.table
    if spec is None:
        raise DeclarationError([Problem(decl.source_file, 0, 0, "table", (
            f"table {decl.name!r} does not exist yet at {decl.path} and its declaration has no `table:` "
            "block, so the writer does not know its record key and partitioning; add `table:` with "
            "`type`, `record_key` and `partition_by`"))])
    if spec.type is not TableType.COPY_ON_WRITE:
        raise RefusedError(
            f"{decl.source_file}: table.type is {spec.type.value}; the writer creates COPY_ON_WRITE tables only.",
            hint="declare `type: COPY_ON_WRITE`; merge-on-read writes (log files, compaction) are not supported yet.",
        )
    if not spec.record_key:
        raise RefusedError(f"{decl.source_file}: table.record_key is empty; the writer needs a record key "
                           "to place updates (Hudi's keyless tables are not supported).",
                           hint="declare `record_key: [<column>, ...]`.")
    props = {
        "hoodie.table.name": decl.name,
        "hoodie.table.type": TableType.COPY_ON_WRITE.value,
        "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1",
        "hoodie.table.recordkey.fields": ",".join(spec.record_key),
        "hoodie.table.keygenerator.class": key_generator_for(spec.record_key, spec.partition_by),
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.archivelog.folder": "archived",
        "hoodie.populate.meta.fields": "false" if spec.meta_fields is False else "true",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
    }
    if spec.partition_by:
        props["hoodie.table.partition.fields"] = ",".join(spec.partition_by)
    if spec.precombine_field:
        props["hoodie.table.precombine.field"] = spec.precombine_field
    if create_schema:
        props["hoodie.table.create.schema"] = create_schema
    props["hoodie.table.checksum"] = str(zlib.crc32(f".{decl.name}".encode()))
    return props


def properties_bytes(props: dict[str, str]) -> bytes:
    """The file as `java.util.Properties.store` writes it: a comment, then escaped `key=value` lines."""
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return (f"#Properties saved on {stamp}\n" + format_properties(props)).encode("iso-8859-1")


def check_writable(storage: Storage, config: TableConfig) -> None:
    """Refuse tables this writer cannot write the way Hudi would (see the module docstring)."""
    where = f"{storage.uri}/{PROPERTIES}"
    raw = config.raw
    problems = [
        (config.version != 6, f"hoodie.table.version is {config.version}; the writer writes table version 6 only"),
        *_damage_problems(raw),
        (config.table_type is not TableType.COPY_ON_WRITE,
         f"hoodie.table.type is {config.table_type.value}; the writer writes COPY_ON_WRITE tables only"),
        (config.base_file_format != "PARQUET", f"hoodie.table.base.file.format is {config.base_file_format}"),
        (_flag(raw, "hoodie.datasource.write.partitionpath.urlencode"), "partition paths are URL-encoded"),
        (_flag(raw, "hoodie.datasource.write.drop.partition.columns"), "partition columns are dropped"),
        (_flag(raw, "hoodie.table.cdc.enabled"), "hoodie.table.cdc.enabled is true: Hudi's writers log each "
         "write's changes for CDC queries (.cdc log files), which this writer does not write"),
        (not config.record_key_fields, "the table has no record key fields"),
        (key_generator_of(config) not in KEY_GENERATORS,
         f"hoodie.table.keygenerator.class is {key_generator_of(config)}"),
        (metadata_table_enabled(folder_exists=storage.stat(METADATA_TABLE) is not None, config=config),
         "the table has a metadata table (.hoodie/metadata or hoodie.table.metadata.partitions)"),
        *_merge_problems(raw),
    ]
    for failed, why in problems:
        if failed:
            raise RefusedError(f"Refusing to write {storage.uri}: {why} ({where}).",
                               hint="write this table with Hudi itself; the runner's writer supports "
                                    "version 6 copy-on-write tables with Simple, Complex or Nonpartitioned keys.")


# Flags the writer's layout and refusals read: Hudi parses them with `Boolean.parseBoolean`, which
# takes any text but `true` for false, so another value is a damaged or hand-edited file.
_FLAGS = ("hoodie.datasource.write.hive_style_partitioning", "hoodie.datasource.write.partitionpath.urlencode",
          "hoodie.datasource.write.drop.partition.columns", "hoodie.populate.meta.fields", "hoodie.table.cdc.enabled")


def _damage_problems(raw: Mapping[str, str]) -> list[tuple[bool, str]]:
    """A file Hudi would not load, or whose values the writer cannot trust. Hudi checks
    `hoodie.table.checksum` (CRC32 of `<hoodie.database.name>.<hoodie.table.name>`) on load and
    falls back to `hoodie.properties.backup` when it does not match (`HoodieTableConfig.fetchConfigs`);
    every table of version 4 on has one, so a version 6 file without it was cut short (its last
    lines, the partition fields among them, lost) and is refused too."""
    name, database = raw.get("hoodie.table.name", ""), raw.get("hoodie.database.name", "")
    expected = str(zlib.crc32(f"{database}.{name}".encode()))
    found = raw.get("hoodie.table.checksum", "").strip()
    problems = [(found != expected, (
        f"hoodie.table.checksum is {found or 'missing'}, expected {expected} (CRC32 of '{database}.{name}'): "
        "the file is damaged or cut short, and Hudi would not load it (it falls back to hoodie.properties.backup)"))]
    problems += [
        (True, f"{key} is {value!r}, neither true nor false")
        for key in _FLAGS if (value := raw.get(key, "").strip()) and value.lower() not in ("true", "false")
    ]
    return problems


def _merge_problems(raw: Mapping[str, str]) -> list[tuple[bool, str]]:
    """A table that merges records otherwise than the writer does (`OVERWRITE_PAYLOAD`): with
    `DefaultHoodieRecordPayload` a late record must not replace a newer one, with `AWSDmsAvroPayload`
    an `Op = 'D'` record deletes, and so on; written the writer's way, such a table would lose the
    newer records or keep deleted ones."""
    problems = [
        (True, f"{key} is {value}; the writer merges records as {OVERWRITE_PAYLOAD} only")
        for key in PAYLOAD_KEYS if (value := raw.get(key, "").strip()) and value != OVERWRITE_PAYLOAD
    ]
    merger = raw.get(MERGER_STRATEGY_KEY, "").strip()
    if merger and merger != PAYLOAD_MERGER_STRATEGY:
        problems.append((True, f"{MERGER_STRATEGY_KEY} is {merger}, not Hudi's payload-based merger; the writer "
                               f"merges records as {OVERWRITE_PAYLOAD} only"))
    return problems


def key_generator_of(config: TableConfig) -> str:
    """`hoodie.table.keygenerator.class`, or Hudi's inferred class when the table does not record one."""
    found = config.raw.get("hoodie.table.keygenerator.class", "").strip()
    return found or key_generator_for(config.record_key_fields, config.partition_fields)


def check_declaration(decl: TableDeclaration, config: TableConfig) -> None:
    """Refuse to write when the declaration's `table:` block contradicts hoodie.properties."""
    spec = decl.table
    if spec is None:
        return
    found_precombine = config.ordering_fields[0] if config.ordering_fields else None
    checks = (
        ("type", spec.type.value, config.table_type.value, "hoodie.table.type"),
        ("record_key", list(spec.record_key), list(config.record_key_fields), "hoodie.table.recordkey.fields"),
        ("partition_by", list(spec.partition_by), list(config.partition_fields), "hoodie.table.partition.fields"),
        ("precombine_field", spec.precombine_field, found_precombine, "hoodie.table.precombine.field"),
        ("meta_fields", spec.meta_fields, config.populate_meta_fields, "hoodie.populate.meta.fields"),
    )
    for field, expected, found, key in checks:
        if expected != found and not (field == "meta_fields" and expected is None):
            # An absent value in YAML terms: Python's None means nothing to someone reading a declaration.
            declared = "is not set" if expected is None else f"is {_shown(expected)}"
            has = f"has no {key}" if found is None else f"has {key} = {_shown(found)}"
            fix = (f"remove table.{field} from {decl.source_file}" if found is None else
                   f"{'set' if expected is None else 'change'} table.{field} in {decl.source_file} to {_shown(found)}")
            raise RefusedError(
                f"{decl.source_file}: table.{field} {declared} but the table at {decl.path} {has}"
                f"{did_you_mean_columns(expected, found)}; refusing to write with a different {field}.",
                hint=f"{fix} (a Hudi table's keys, partitioning and meta fields cannot change after creation).",
            )


def _shown(value: object) -> str:
    """A declared or found value as YAML writes it: booleans `true`/`false`, other values quoted."""
    return str(value).lower() if isinstance(value, bool) else repr(value)


def layout_of(config: TableConfig, *, sample_key: str | None = None) -> KeyLayout:
    """The key layout of a checked table.

    Args:
        config: the table's configuration.
        sample_key: any record key stored in the table, if it has one; it settles how a
            ComplexKeyGenerator table with one key field encodes keys (see `KeyLayout`).
    """
    field = config.record_key_fields[0] if config.record_key_fields else ""
    bare = sample_key is not None and not sample_key.startswith(f"{field}:")
    return KeyLayout(
        table_name=config.name,
        record_key_fields=config.record_key_fields,
        partition_fields=config.partition_fields,
        precombine_field=config.ordering_fields[0] if config.ordering_fields else None,
        key_generator=key_generator_of(config),
        hive_style=config.hive_style_partitioning,
        bare_single_key=bare,
        virtual_keys=not config.populate_meta_fields,
    )


def _flag(raw: object, key: str) -> bool:
    assert hasattr(raw, "get")
    return str(raw.get(key, "")).strip().lower() == "true"

