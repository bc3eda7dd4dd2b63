"""The metadata table of a synthetic table: its `files` partition, laid out as Hudi writes it.

Hudi creates the metadata table (MDT) on a table's first write and then mirrors every completed
write in it, under the write's own instant time, before the write completes. This module does the
same for `TableBuilder(metadata_table=True)`:

* initialization (`HoodieBackedTableMetadataWriter.initializeFromFilesystem` on an empty table):
  `<base>/.hoodie/metadata/.hoodie/hoodie.properties` (a merge-on-read table with HFile base
  files), a completed deltacommit at the initialization instant, and in `files/` the partition
  metadata, the group's first log `.files-0000-0_{init}.log.1_0-0-0` holding an empty delete
  block (`initializeFileGroups`), and the base HFile `files-0000-0_0-0-0_{init}.hfile` holding
  the (empty) `__all_partitions__` record. The initialization instant is
  `createIndexInitTimestamp(SOLO_COMMIT_TIMESTAMP, 0)` = `00000000000000010` on Hudi 0.14/0.15
  (table version 6) and `00000000000000000` on Hudi 1.0 (version 8, fixture v8_trips_8i3u1d);
* every completed data write: one MDT deltacommit written by the runner's own MDT writer
  (`runner.hudi.mdt.writer`, so log naming and slicing are those the runner uses on real tables)
  with a file-list record per written partition (new base and log files with their sizes, as
  `convertMetadataToFilesPartitionRecords` does) and the `__all_partitions__` record of those
  partitions. On layout 2 its completion time falls between the write's request and completion.

With `indexes` it also keeps `column_stats` and `bloom_filters` partitions
(runner.testing.metadata_indexes): initialized with the `files` partition (two file groups each,
an empty delete block in each), and in every deltacommit the records of the base files the write
added.

Not modelled: the other index partitions, MDT compaction, cleaning and archival, the base file's
bloom filter.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping, Sequence
from datetime import timedelta

from runner.hudi.files import BaseFile, LogFile
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.actions import MdtCommit
from runner.hudi.mdt.hfile import CHECKSUM_CRC32C, standard_file_info, write_hfile
from runner.hudi.mdt.logfile import BlockType, HeaderKey, LogBlock, encode_log_block
from runner.hudi.mdt.reader import read_metadata_table
from runner.hudi.mdt.writer import write_mdt_commit
from runner.hudi.metadata import CommitMetadata, WriteStat, encode_commit_metadata
from runner.hudi.state import METADATA_TABLE
from runner.storage import storage_for
from runner.testing import layout
from runner.testing import metadata_indexes as indexes_module

FILES = "files"
FILES_GROUP = "files-0000-0"
INIT_INSTANT = {6: "00000000000000010", 8: "00000000000000000"}
INIT_TOKEN = "0-0-0"
# An empty HoodieDeleteBlock: block version 3, then the length and Avro bytes of an empty array.
EMPTY_DELETE_BLOCK = b"\x00\x00\x00\x03\x00\x00\x00\x01\x00"
_META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


def metadata_record_schema(*, with_indexes: bool = False) -> str:
    """The HoodieMetadataRecord fields the `files` partition uses, with Hudi's names and types, and
    with `with_indexes` the bloom-filter and column-stats payloads too.

    Readers decode every cell with the schema its block or file carries, so a schema without the
    index payloads (all nullable in Hudi's) reads the same `files` records.
    """
    file_info = {
        "type": "record",
        "name": "HoodieMetadataFileInfo",
        "fields": [{"name": "size", "type": "long"}, {"name": "isDeleted", "type": "boolean"}],
    }
    java_string = {"type": "string", "avro.java.string": "String"}
    fields: list[dict[str, object]] = [
        {"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in _META_FIELDS
    ]
    fields += [
        {"name": "key", "type": java_string},
        {"name": "type", "type": "int"},
        {
            "name": "filesystemMetadata",
            "type": ["null", {"type": "map", "values": file_info, "avro.java.string": "String"}],
        },
    ]
    if with_indexes:
        fields += indexes_module.index_payload_fields()
    schema = {
        "type": "record",
        "name": "HoodieMetadataRecord",
        "namespace": "org.apache.hudi.avro.model",
        "fields": fields,
    }
    return json.dumps(schema, separators=(",", ":"))


def mdt_properties(table_name: str, version: int) -> dict[str, str]:
    """The MDT's `hoodie.properties` (keys as Hudi 0.14 and 1.0 write them)."""
    props = {
        "hoodie.table.name": f"{table_name}_metadata",
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": str(version),
        "hoodie.table.base.file.format": "HFILE",
        "hoodie.table.recordkey.fields": "key",
        "hoodie.populate.meta.fields": "false",
        "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
        "hoodie.datasource.write.drop.partition.columns": "false",
        # CRC32 of `<database>.<table>`; the MDT has no database name (fixture v8_trips_8i3u1d)
        "hoodie.table.checksum": str(zlib.crc32(f".{table_name}_metadata".encode())),
    }
    if version == 6:
        props |= {
            "hoodie.timeline.layout.version": "1",
            "hoodie.archivelog.folder": "archived",
            "hoodie.table.keygenerator.class": "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
        }
    else:
        props |= {
            "hoodie.timeline.layout.version": "2",
            "hoodie.table.initial.version": str(version),
            "hoodie.timeline.path": "timeline",
            "hoodie.timeline.history.path": "history",
            "hoodie.archivelog.folder": "history",
            "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
            "hoodie.record.merge.mode": "CUSTOM",
            "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
        }
    return props


class SyntheticMetadataTable:
    """Creates and extends the `files` partition of one synthetic table's metadata table.

    Args:
        path: the data table's absolute base path.
        table_name: the data table's `hoodie.table.name`.
        version: table version, 6 or 8.
        step: the data table's clock step; MDT deltacommits complete a quarter step after their instant.
        indexes: index partitions to keep besides `files` (`column_stats`, `bloom_filters`).
        stats_columns: the columns the column_stats index covers.
    """

    def __init__(self, path: str, *, table_name: str, version: int, step: timedelta,
                 indexes: Sequence[str] = (), stats_columns: Sequence[str] = (),
                 expressions: Sequence[indexes_module.ExpressionIndex] = ()) -> None:
        if version not in INIT_INSTANT:
            raise ValueError(f"version must be 6 or 8, got {version}")
        if expressions and version < 8:
            raise ValueError("expression indexes need table version 8 (Hudi 1.x)")
        self.expressions = tuple(expressions)
        unknown = sorted(set(indexes) - set(indexes_module.INDEXES))
        if unknown:
            raise ValueError(f"indexes must be among {', '.join(indexes_module.INDEXES)}, got {', '.join(unknown)}")
        self.path, self.table_name, self.version = path, table_name, version
        self.indexes, self.stats_columns = tuple(sorted(set(indexes))), tuple(stats_columns)
        self.layout = 1 if version == 6 else 2
        self.timeline = f"{METADATA_TABLE}/.hoodie" + ("" if self.layout == 1 else "/timeline")
        self.schema = metadata_record_schema(with_indexes=bool(self.indexes or self.expressions))
        self._offset_ms = max(1, int(step.total_seconds() * 250))
        self._partitions: set[str] = set()

    def create(self, first_instant: InstantTime) -> None:
        """Initialize the MDT just before the table's first write (`first_instant`)."""
        init = InstantTime(INIT_INSTANT[self.version])
        os.makedirs(self._full(self.timeline))
        os.makedirs(self._full(f"{METADATA_TABLE}/.hoodie/" + ("archived" if self.layout == 1 else "timeline/history")))
        self._put(
            f"{METADATA_TABLE}/.hoodie/hoodie.properties",
            layout.properties_text(
                mdt_properties(self.table_name, self.version), comment="Written by runner.testing.metadata_table"
            ),
        )
        os.makedirs(self._full(f"{METADATA_TABLE}/{FILES}"))
        self._put(f"{METADATA_TABLE}/{FILES}/.hoodie_partition_metadata", layout.partition_metadata("files", init))
        self._instant(init, State.REQUESTED, b"")
        self._instant(init, State.INFLIGHT, b"")
        delete = LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: init}, EMPTY_DELETE_BLOCK)
        self._put(
            f"{METADATA_TABLE}/{FILES}/{LogFile(FILES_GROUP, init, 1, INIT_TOKEN).name}", encode_log_block(delete)
        )
        for index in self.indexes:
            os.makedirs(self._full(f"{METADATA_TABLE}/{index}"))
            self._put(f"{METADATA_TABLE}/{index}/.hoodie_partition_metadata", layout.partition_metadata(index, init))
            for group in indexes_module.FILE_GROUPS[index]:
                self._put(f"{METADATA_TABLE}/{index}/{LogFile(group, init, 1, INIT_TOKEN).name}",
                          encode_log_block(delete))
        for expression in self.expressions:
            os.makedirs(self._full(f"{METADATA_TABLE}/{expression.name}"))
            self._put(f"{METADATA_TABLE}/{expression.name}/.hoodie_partition_metadata",
                      layout.partition_metadata(expression.name, init))
            self._put(f"{METADATA_TABLE}/{expression.name}/{LogFile(expression.file_group, init, 1, INIT_TOKEN).name}",
                      encode_log_block(delete))
        with_stats = indexes_module.COLUMN_STATS in self.indexes
        if (with_stats or self.expressions) and self.version >= 8:
            # Hudi 1.x records the indexed columns in the table; 0.14/0.15 only in the writer's config
            os.makedirs(self._full(os.path.dirname(indexes_module.INDEX_DEFS_PATH)), exist_ok=True)
            self._put(indexes_module.INDEX_DEFS_PATH, indexes_module.index_definitions(
                self.stats_columns if with_stats else None, self.expressions))
        base = BaseFile(FILES_GROUP, INIT_TOKEN, init, "hfile")
        data = self._base_hfile()
        self._put(f"{METADATA_TABLE}/{FILES}/{base.name}", data)
        stat = WriteStat(
            partition_path=FILES,
            file_id=FILES_GROUP,
            path=f"{FILES}/{base.name}",
            prev_commit=None,
            num_writes=1,
            num_inserts=1,
            total_write_bytes=len(data),
            file_size_in_bytes=len(data),
        )
        meta = CommitMetadata(
            operation_type="BULK_INSERT",
            partition_to_write_stats={FILES: (stat,)},
            extra_metadata={"schema": _without_meta_fields(self.schema)},
        )
        # Hudi 1.0 completes the initialization while the first write is under way.
        self._instant(
            init,
            State.COMPLETED,
            encode_commit_metadata(meta, layout=self.layout),
            completed=first_instant.plus_millis(self._offset_ms // 2 or 1),
        )

    def record_write(self, t: InstantTime, stats: Mapping[str, Sequence[WriteStat]]) -> None:
        """Mirror one data write (its write stats) as MDT deltacommit `t`, before `t` completes."""
        written: dict[str, dict[str, tuple[int, bool]]] = {}
        for partition, partition_stats in stats.items():
            files = written.setdefault(partition, {})
            for stat in partition_stats:
                if stat.path:
                    name = stat.path.rsplit("/", 1)[-1]
                    # a file appended to twice in one write reports growing sizes: keep the largest
                    files[name] = (max(stat.file_size_in_bytes, files.get(name, (0, False))[0]), False)
        records = {
            _mdt_name(p): rec.encode_record(self.schema, rec.file_list_record(files)) for p, files in written.items()
        }
        index_records: dict[str, dict[str, bytes]] = {}
        for partition, files in written.items() if self.indexes or self.expressions else ():
            for name in files:
                if BaseFile.parse(name) is None:  # log files: not modelled (see the module docstring)
                    continue
                with open(self._full(f"{partition}/{name}".lstrip("/")), "rb") as f:
                    data = f.read()
                indexes_module.merge_into(index_records, indexes_module.base_file_records(
                    data, partition=partition, file_name=name, instant=str(t), indexes=self.indexes,
                    columns=self.stats_columns, schema=self.schema, version=self.version))
                for expression in self.expressions:
                    indexes_module.merge_into(index_records, {expression.name: indexes_module.expression_records(
                        data, partition=partition, file_name=name, instant=str(t), index=expression,
                        schema=self.schema)})
        if written:
            added = {_mdt_name(p): (0, False) for p in written}
            records[rec.ALL_PARTITIONS_KEY] = rec.encode_record(
                self.schema, rec.file_list_record(added, record_type=rec.PARTITION_LIST)
            )
        # a write without files (a partition delete) still gets its deltacommit, as in Hudi
        storage = storage_for(self.path)
        completion = t.plus_millis(self._offset_ms)
        write_mdt_commit(
            storage,
            read_metadata_table(storage),
            MdtCommit(str(t), ({FILES: records} if records else {}) | index_records),
            schema=self.schema,
            completion_time=lambda: completion,
            created_ms=0,
        )

    # --------------------------------------------------------------------------------- internals

    def _base_hfile(self) -> bytes:
        key = rec.ALL_PARTITIONS_KEY.encode()
        cells = [(key, rec.encode_record(self.schema, rec.file_list_record({}, record_type=rec.PARTITION_LIST)))]
        info = [
            (b"schema", self.schema.encode()),
            (b"minRecordKey", key),
            (b"maxRecordKey", key),
            *standard_file_info(cells, created_ms=0, hbase=True),
        ]
        return write_hfile(cells, info, checksum_type=CHECKSUM_CRC32C, hbase=True)

    def _instant(self, t: InstantTime, state: State, payload: bytes, *, completed: InstantTime | None = None) -> None:
        done = completed if state is State.COMPLETED and self.layout == 2 else None
        self._put(f"{self.timeline}/{Instant(t, Action.DELTA_COMMIT, state, done).file_name}", payload)

    def _full(self, relative: str) -> str:
        return os.path.join(self.path, relative)

    def _put(self, relative: str, payload: bytes) -> None:
        fd = os.open(self._full(relative), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, payload)
        finally:
            os.close(fd)


def _mdt_name(partition: str) -> str:
    """The MDT's name for a data partition: `.` for a non-partitioned table's root."""
    return partition or rec.NON_PARTITIONED_NAME


def _without_meta_fields(schema: str) -> str:
    parsed = json.loads(schema)
    parsed["fields"] = [f for f in parsed["fields"] if not str(f["name"]).startswith("_hoodie_")]
    return json.dumps(parsed, separators=(",", ":"))
