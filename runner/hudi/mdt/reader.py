"""Reading `<base>/.hoodie/metadata`: its timeline, and the merged records of one MDT partition.

A record's value at the latest valid instant is its base-HFile cell merged with every valid log
block after it, in log order (`HoodieMetadataPayload.preCombine`): file lists (types 1 and 2) are
unions where a later `isDeleted` entry removes a name and sizes take the larger value; every other
type is replaced by the newer record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from runner.errors import RunnerError, UnsupportedTableError
from runner.hudi.instant import Action
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.hfile import read_hfile, read_hfile_info
from runner.hudi.mdt.logfile import BlockType, HeaderKey, LogBlock, read_log_blocks
from runner.hudi.mdt.view import MdtSlice, latest_slices, valid_instants
from runner.hudi.metadata.history import decode_rollback_metadata
from runner.hudi.properties import TableConfig, read_properties
from runner.hudi.state import METADATA_TABLE, TableMetadata
from runner.hudi.timeline import Timeline
from runner.storage import Storage

MDT_PROPERTIES = f"{METADATA_TABLE}/.hoodie/hoodie.properties"
FILES_PARTITION = "files"


@dataclass(frozen=True, slots=True)
class MetadataTable:
    """The MDT's own config and timeline; `folder` is its timeline folder relative to the data table."""

    config: TableConfig
    timeline: Timeline
    folder: str


@dataclass(frozen=True, slots=True)
class FilesListing:
    """The `files` partition at the latest valid instant.

    Args:
        partitions: data partitions in `__all_partitions__` ("" for a non-partitioned table's root).
        files: data partition -> file name -> size, for every partition that has a file-list record.
        schema: the HoodieMetadataRecord schema string of the newest block or base file read.
    """

    partitions: frozenset[str]
    files: Mapping[str, Mapping[str, int]]
    schema: str


def read_metadata_table(storage: Storage) -> MetadataTable:
    """Read the MDT's hoodie.properties and timeline folder."""
    config = TableConfig.from_properties(
        read_properties(storage.read(MDT_PROPERTIES), path=MDT_PROPERTIES),
        path=MDT_PROPERTIES,
    )
    folder = f"{METADATA_TABLE}/{config.timeline_dir}"
    names = [f.path.rsplit("/", 1)[-1] for f in storage.list_dir(folder) if not f.is_dir]
    return MetadataTable(config, Timeline.from_file_names(names, folder=folder), folder)


def rolled_back_instants(storage: Storage, data: TableMetadata) -> frozenset[str]:
    """Instants undone by the data table's completed rollbacks (their MDT rollback blocks count)."""
    found: set[str] = set()
    for instant in data.timeline.completed(Action.ROLLBACK):
        path = f"{data.timeline_folder}/{instant.file_name}"
        raw = storage.read(path)
        if raw.strip():
            found.update(decode_rollback_metadata(raw, path=path).commits_rolled_back)
    return frozenset(found)


def read_partition(
    storage: Storage, data: TableMetadata, mdt: MetadataTable, partition: str, *, with_names: bool = False
) -> tuple[dict[str, rec.MetadataRecord], str]:
    """Merged records of one MDT partition (key -> record) and the schema string last seen.

    `with_names`: decode union values of several record types as (name, record) (`records.decode_record`).
    """
    valid = valid_instants(
        data.timeline, mdt.timeline, rolled_back_instants(storage, data), table_version=mdt.config.version
    )
    folder = f"{METADATA_TABLE}/{partition}"
    listing = [(f.path.rsplit("/", 1)[-1], f.size) for f in storage.list_dir(folder) if not f.is_dir]
    merged: dict[str, rec.MetadataRecord] = {}
    schema = ""
    for mdt_slice in latest_slices(listing, mdt.timeline, table_version=mdt.config.version):
        schema = _merge_slice(storage, folder, mdt_slice, valid, merged, with_names) or schema
    return merged, schema


def read_partition_schema(storage: Storage, data: TableMetadata, mdt: MetadataTable, partition: str) -> str:
    """The schema `read_partition` returns (that of the newest valid block or base file), read from
    the log blocks' headers and the base file's file info without decoding any record.

    Writing a deltacommit needs only this, and decoding a `files` partition that lists every file of
    a large table costs seconds. The blocks are still parsed and checked as `read_partition` checks
    them (framing, block types, delete blocks without keys); the records in their HFiles are not.
    """
    valid = valid_instants(
        data.timeline, mdt.timeline, rolled_back_instants(storage, data), table_version=mdt.config.version
    )
    folder = f"{METADATA_TABLE}/{partition}"
    listing = [(f.path.rsplit("/", 1)[-1], f.size) for f in storage.list_dir(folder) if not f.is_dir]
    schema = ""
    for mdt_slice in latest_slices(listing, mdt.timeline, table_version=mdt.config.version):
        found = ""
        if mdt_slice.base_file is not None:
            path = f"{folder}/{mdt_slice.base_file.name}"
            info = read_hfile_info(storage.read(path), where=path)
            found = _schema_or_refuse(info.get(b"schema", b"").decode("utf-8"), path)
        for path, block in _valid_blocks(storage, folder, mdt_slice, valid):
            _check_block(path, block)
            if block.block_type is BlockType.HFILE_DATA:
                found = _schema_or_refuse(block.header.get(HeaderKey.SCHEMA, ""), path)
        schema = found or schema
    return schema


def read_files_listing(storage: Storage, data: TableMetadata, mdt: MetadataTable | None = None) -> FilesListing:
    """The data table's partitions and files as the MDT `files` partition records them."""
    mdt = mdt or read_metadata_table(storage)
    merged, schema = read_partition(storage, data, mdt, FILES_PARTITION)
    partitions: set[str] = set()
    files: dict[str, Mapping[str, int]] = {}
    for key, record in merged.items():
        live = {name: size for name, (size, deleted) in rec.file_entries(record).items() if not deleted}
        if record["type"] == rec.PARTITION_LIST:
            partitions.update(_data_partition(name) for name in live)
        elif record["type"] == rec.FILE_LIST:
            files[_data_partition(key)] = MappingProxyType(live)
    return FilesListing(frozenset(partitions), MappingProxyType(files), schema)


def _data_partition(mdt_name: str) -> str:
    return "" if mdt_name == rec.NON_PARTITIONED_NAME else mdt_name


def _merge_slice(
    storage: Storage, folder: str, mdt_slice: MdtSlice, valid: frozenset[str], merged: dict[str, rec.MetadataRecord],
    with_names: bool = False,
) -> str:
    schema = ""
    if mdt_slice.base_file is not None:
        path = f"{folder}/{mdt_slice.base_file.name}"
        hfile = read_hfile(storage.read(path), where=path)
        schema = hfile.file_info.get(b"schema", b"").decode("utf-8")
        _apply_cells(hfile.cells, schema, path, merged, with_names)
    for path, block in _valid_blocks(storage, folder, mdt_slice, valid):
        schema = _apply_block(path, block, merged, with_names) or schema
    return schema


def _valid_blocks(
    storage: Storage, folder: str, mdt_slice: MdtSlice, valid: frozenset[str]
) -> list[tuple[str, LogBlock]]:
    """The slice's log blocks a reader merges, in log order: of valid instants, not rolled back."""
    blocks: list[tuple[str, LogBlock]] = []
    for log in mdt_slice.log_files:
        path = f"{folder}/{log.name}"
        blocks.extend((path, block) for block in read_log_blocks(storage.read(path), where=path))
    return [(path, block) for path, block in _without_rolled_back(blocks)
            if block.instant_time in valid or block.instant_time.startswith("00000000000000")]


def _without_rolled_back(blocks: list[tuple[str, LogBlock]]) -> Iterable[tuple[str, LogBlock]]:
    """Drop blocks a later rollback command block targets (HoodieCommandBlock ROLLBACK_BLOCK)."""
    rolled = {b.header.get(HeaderKey.TARGET_INSTANT_TIME) for _, b in blocks if b.block_type is BlockType.COMMAND}
    return [(p, b) for p, b in blocks if b.block_type is not BlockType.COMMAND and b.instant_time not in rolled]


def _apply_block(path: str, block: LogBlock, merged: dict[str, rec.MetadataRecord], with_names: bool = False) -> str:
    _check_block(path, block)
    if block.block_type is BlockType.DELETE:
        return ""
    schema = block.header.get(HeaderKey.SCHEMA, "")
    _apply_cells(read_hfile(block.content, where=path).cells, schema, path, merged, with_names)
    return schema


def _check_block(path: str, block: LogBlock) -> None:
    """Refuse the blocks the reader cannot merge: delete blocks with keys, and types other than
    HFILE_DATA and DELETE (command blocks are taken out before)."""
    if block.block_type is BlockType.DELETE:
        if block.content[8:] not in (b"", b"\x00"):
            raise UnsupportedTableError(
                f"{path}: a metadata-table delete block with keys (instant {block.instant_time}); "
                "the runner does not read those and will not guess what it removes",
                path=path,
                hint="let Hudi compact the metadata table (any Hudi write does), then retry.",
            )
    elif block.block_type is not BlockType.HFILE_DATA:
        raise UnsupportedTableError(
            f"{path}: a metadata-table log block of type {block.block_type.name}; expected HFILE_DATA, "
            "DELETE or COMMAND blocks",
            path=path,
        )


def _schema_or_refuse(schema: str, path: str) -> str:
    if not schema:
        raise RunnerError(f"{path}: a metadata-table HFile without its HoodieMetadataRecord schema")
    return schema


def _apply_cells(
    cells: Iterable[tuple[bytes, bytes]], schema: str, path: str, merged: dict[str, rec.MetadataRecord],
    with_names: bool = False,
) -> None:
    _schema_or_refuse(schema, path)
    for row, value in cells:
        key = row.decode("utf-8")
        newer = rec.decode_record(schema, value, where=path, with_names=with_names)
        older = merged.get(key)
        merged[key] = _combine(older, newer) if older is not None else newer


def _combine(older: rec.MetadataRecord, newer: rec.MetadataRecord) -> rec.MetadataRecord:
    if newer["type"] not in (rec.PARTITION_LIST, rec.FILE_LIST):
        return newer
    # The older map is copied, not converted: a partition's listing is merged once per log block,
    # so converting all of it each time made reading the listing quadratic in its blocks. Entries
    # are replaced, never changed in place, so the copy may share the older record's.
    combined = dict(older.get("filesystemMetadata") or {})
    for name, info in (newer.get("filesystemMetadata") or {}).items():
        if info["isDeleted"]:
            # Hudi drops the name, but keeps the tombstone when nothing older listed it, since the
            # older listing may still come from the base file; for one ordered pass both agree.
            combined[name] = {"size": 0, "isDeleted": True}
        else:
            size = int(info["size"])
            previous = combined.get(name)
            if previous is not None and not previous["isDeleted"]:
                size = max(size, int(previous["size"]))
            combined[name] = {"size": size, "isDeleted": False}
    return {**newer, "key": "", "filesystemMetadata": combined}
