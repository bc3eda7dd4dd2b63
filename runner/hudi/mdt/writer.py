"""Writing one MDT deltacommit the way `HoodieBackedTableMetadataWriter` does (table versions 6, 8, 9).

Order, for data instant T (whose requested and inflight files already exist):
1. `T.deltacommit.requested` (empty), `T.deltacommit.inflight` (HoodieCommitMetadata, no stats,
   operation UPSERT_PREPPED) in the MDT's timeline folder;
2. per touched MDT file group, a new log file holding one HFILE_DATA block (headers SCHEMA,
   INSTANT_TIME=T) with that group's records sorted by key:
   - version 8+: `.{fileId}_T.log.1_{token}`, one file per deltacommit;
   - version 6 (Hudi 0.14/0.15, `HoodieAppendHandle` + `HoodieLogFormatWriter`): the next log
     version of the group's latest slice, `.{fileId}_{baseInstant}.log.{N+1}_{token}`; 0.14+
     never appends to an existing log file, it rolls over to a new version. The HFile is laid out
     as HBase's writer (which 0.x used, and which 0.x readers parse) does;
3. the completed `T[_{completion}].deltacommit` with one write stat per log file (Avro on 8+,
   JSON on 6, whose layout-1 timeline has no completion times);
then the caller completes the data instant (its completion time is taken after ours).

Crash safety: until step 3 the MDT instant is pending and readers ignore its logs; until the data
instant completes, readers ignore the whole deltacommit (see view.py). Running `write` again for
the same T finishes a pending attempt (its logs are replaced) and does nothing once T completed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from runner.errors import RefusedError, RunnerError
from runner.hudi.files import BaseFile, LogFile
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.mdt import keys
from runner.hudi.mdt.actions import MdtCommit
from runner.hudi.mdt.hfile import (
    CHECKSUM_CRC32C,
    CHECKSUM_NULL,
    CellRun,
    Cells,
    standard_file_info,
    write_hfile,
)
from runner.hudi.mdt.logfile import BlockType, HeaderKey, LogBlock, encode_log_block, read_log_blocks
from runner.hudi.mdt.reader import MetadataTable, read_metadata_table
from runner.hudi.mdt.records import record_schema_fields
from runner.hudi.mdt.tombstones import IndexTombstones, LaterTombstones
from runner.hudi.mdt.view import MdtSlice, latest_slices
from runner.hudi.metadata import CommitMetadata, WriteStat, encode_commit_metadata
from runner.hudi.state import METADATA_TABLE
from runner.hudi.timeline_writer import TimelineWriter
from runner.storage import Storage

OPERATION = "UPSERT_PREPPED"
# Any unique `{task}-{stage}-{attempt}` triple will do; Hudi's own initial logs use 0-0-0.
WRITE_TOKEN = "0-1-0"
_GROUP_INDEX = re.compile(r"-(\d{4})-\d+$")
SUPPORTED_VERSIONS = frozenset({6, 8, 9})


def write_mdt_commit(
    storage: Storage,
    mdt: MetadataTable,
    commit: MdtCommit,
    *,
    schema: str,
    completion_time: Callable[[], InstantTime],
    created_ms: int,
    step: Callable[[str], None] = lambda _: None,
    encoded: Mapping[str, EncodedLogs] | None = None,
) -> list[str]:
    """Write (or finish) MDT deltacommit `commit.instant`; returns the MDT files written.

    `step(name)` is called after each durable step (`after_mdt_requested`, `after_mdt_inflight`,
    `after_mdt_logs`), so crash tests can stop the process there. `encoded`: log contents of some
    partitions' records, encoded ahead (`encode_groups`); used when the partition's file groups are
    still those they were cut for, else the records are encoded here.
    """
    if mdt.config.version not in SUPPORTED_VERSIONS:
        raise RefusedError(
            f"{storage.uri}: the metadata table has table version {mdt.config.version}; the runner writes "
            "metadata-table deltacommits only for table versions 6, 8 and 9",
            hint="set `metadata_table: disable` for this table.",
        )
    time = InstantTime(commit.instant)
    existing = {(i.action, i.state) for i in mdt.timeline.files if i.time == time}
    if (Action.DELTA_COMMIT, State.COMPLETED) in existing:
        return []
    timeline = TimelineWriter(storage, mdt.folder, mdt.config.timeline_layout_version)
    written: list[str] = []
    if (Action.DELTA_COMMIT, State.REQUESTED) not in existing:
        written.append(timeline.path(timeline.requested(time, Action.DELTA_COMMIT, b"")))
        step("after_mdt_requested")
    inflight = Instant(time, Action.DELTA_COMMIT, State.INFLIGHT)
    if existing:
        # An interrupted attempt (ours or Hudi's) may have left logs of this instant in any MDT
        # partition, possibly half-written; they would count once the instant completes.
        _remove_logs_of(storage, time, mdt.config.version)
    layout = mdt.config.timeline_layout_version
    if (Action.DELTA_COMMIT, State.INFLIGHT) not in existing:
        timeline.inflight(time, Action.DELTA_COMMIT, _commit_metadata({}, layout=layout))
        written.append(timeline.path(inflight))
        step("after_mdt_inflight")
    stats: dict[str, tuple[WriteStat, ...]] = {}
    for partition, records in sorted(commit.records.items()):
        ready = (encoded or {}).get(partition)
        stats[partition] = tuple(_write_partition(storage, mdt, partition, records, time, schema, created_ms, ready))
        written.extend(f"{METADATA_TABLE}/{s.path}" for s in stats[partition])
    step("after_mdt_logs")
    done = timeline.complete(
        inflight, _commit_metadata(stats, layout=layout, schema=schema), completion=completion_time()
    )
    written.append(timeline.path(done))
    return written


@dataclass(frozen=True, slots=True)
class EncodedLogs:
    """One MDT partition's new log files for a deltacommit, encoded before they are written: the
    partition's file groups they were cut for, and per touched group (in id order) its id, the
    log file's content and its record count."""

    groups: tuple[str, ...]
    logs: tuple[tuple[str, bytes, int], ...]


def partition_groups(storage: Storage, partition: str) -> tuple[str, ...]:
    """The MDT partition's file-group ids in shard order, as `write_mdt_commit` cuts its records."""
    folder = f"{METADATA_TABLE}/{partition}"
    names = [f.path.rsplit("/", 1)[-1] for f in storage.list_dir(folder) if not f.is_dir]
    return tuple(_file_groups(names, folder))


def encode_groups(records: Mapping[str, bytes], groups: tuple[str, ...], time: str, schema: str, created_ms: int,
                  version: int) -> EncodedLogs:
    """The log files `write_mdt_commit` would write for `records` in a partition whose file groups
    are `groups`, not written (pure: no storage): a clean's index tombstones are encoded while its
    deletes run (gzip is most of their cost)."""
    by_group = _cells_by_group(records, len(groups))
    logs = [(groups[g], _log_file(cells, time, schema, created_ms, version), len(cells))
            for g, cells in enumerate(by_group) if len(cells)]
    return EncodedLogs(groups, tuple(sorted(logs, key=lambda log: log[0])))


def _write_partition(
    storage: Storage,
    mdt: MetadataTable,
    partition: str,
    records: Mapping[str, bytes],
    time: InstantTime,
    schema: str,
    created_ms: int,
    ready: EncodedLogs | None = None,
) -> list[WriteStat]:
    folder = f"{METADATA_TABLE}/{partition}"
    listing = [(f.path.rsplit("/", 1)[-1], f.size) for f in storage.list_dir(folder) if not f.is_dir]
    names = [name for name, _ in listing]
    groups = tuple(_file_groups(names, folder))
    version = mdt.config.version
    if ready is None or ready.groups != groups:  # shards are cut by the group count, so it must not have changed
        ready = encode_groups(records, groups, time, schema, created_ms, version)
    slices = {s.file_id: s for s in latest_slices(listing, mdt.timeline, table_version=version)} if version < 8 else {}
    stats = []
    for file_id, data, count in ready.logs:
        if version < 8:
            if file_id not in slices:
                raise RefusedError(
                    f"{folder}: file group {file_id} has no committed file slice to append a log version to",
                    hint="let Hudi finish or roll back its metadata-table writes, or set `metadata_table: disable`.",
                )
            stat = _append_to_slice(partition, slices[file_id], names, count, len(data))
        else:
            stat = _log_write_stat(partition, LogFile(file_id, time, 1, WRITE_TOKEN), time, count, len(data))
        storage.write_new(f"{METADATA_TABLE}/{stat.path}", data)
        stats.append(stat)
    return stats


def _cells_by_group(records: Mapping[str, bytes], count: int) -> list[Cells]:
    """Each file group's cells in key order, laid out for its HFile."""
    if isinstance(records, LaterTombstones):
        records = records.built()
    if isinstance(records, IndexTombstones):
        return records.runs(count)  # a clean's index tombstones: whole arrays
    # Python orders str by code point, which is the order of their UTF-8 bytes, the order HFile
    # cells need; sorted once here, each group's cells stay in order.
    ordered = sorted(records)
    cells = [(key.encode("utf-8"), records[key]) for key in ordered]
    if count == 1:
        return [CellRun.from_pairs(cells)]
    by_group: list[list[tuple[bytes, bytes]]] = [[] for _ in range(count)]
    for cell, group in zip(cells, keys.shards(ordered, count), strict=True):
        by_group[group].append(cell)
    return [CellRun.from_pairs(group_cells) for group_cells in by_group]


def _append_to_slice(partition: str, mdt_slice: MdtSlice, names: list[str], count: int, size: int) -> WriteStat:
    """Version 6: the next log version over the slice's base instant, and the write stat Hudi 0.x
    records for it (`prevCommit` = that base instant, the slice's base file and logs)."""
    base = mdt_slice.base_file
    base_instant = base.instant_time if base else max(log.instant_time for log in mdt_slice.log_files)
    taken = [
        log.version
        for name in names
        if (log := LogFile.parse(name)) is not None
        and log.file_id == mdt_slice.file_id
        and log.instant_time == base_instant
    ]
    log = LogFile(mdt_slice.file_id, base_instant, max(taken, default=0) + 1, WRITE_TOKEN)
    earlier = tuple(existing.name for existing in mdt_slice.log_files)
    return _log_write_stat(partition, log, base_instant, count, size, base_file=base.name if base else "",
                           earlier_logs=earlier)


def _remove_logs_of(storage: Storage, time: InstantTime, version: int | None = None) -> list[str]:
    """Delete every MDT log file written for `time` (`version`: the MDT's table version, read when None).

    Version 8+ names logs after their deltacommit. Version 6 names them after their slice, so
    the runner's own logs (its write token) are read, and removed when their blocks are all of `time`.
    """
    if version is None:
        version = read_metadata_table(storage).config.version
    removed = []
    for folder in (f.path for f in storage.list_dir(METADATA_TABLE) if f.is_dir and not f.path.endswith("/.hoodie")):
        for info in storage.list_dir(folder):
            log = LogFile.parse(info.path.rsplit("/", 1)[-1])
            if log is None:
                continue
            ours = (
                log.instant_time == time
                if version >= 8
                else log.write_token == WRITE_TOKEN and _only_blocks_of(storage, info.path, time)
            )
            if ours:
                storage.delete(info.path)
                removed.append(info.path)
    return removed


def _only_blocks_of(storage: Storage, path: str, time: InstantTime) -> bool:
    """Whether every block of a log file is for `time`. Log files are written whole (write_new),
    so one that does not parse is not a half-written attempt of ours: it stays, and the reader
    reports it."""
    try:
        blocks = read_log_blocks(storage.read(path), where=path)
    except RunnerError:
        return False
    return bool(blocks) and all(block.instant_time == time for block in blocks)


def _file_groups(names: list[str], folder: str) -> list[str]:
    """The partition's file-group ids ordered by shard number; their count is fixed at initialization."""
    ids = set()
    for name in names:
        parsed: BaseFile | LogFile | None = BaseFile.parse(name) or LogFile.parse(name)
        if parsed is not None:
            ids.add(parsed.file_id)
    indexed = {int(m.group(1)): i for i in ids if (m := _GROUP_INDEX.search(i))}
    if not ids or len(indexed) != len(ids) or sorted(indexed) != list(range(len(ids))):
        raise RefusedError(
            f"{folder}: expected file groups named <prefix>-0000-0 … <prefix>-NNNN-0 without gaps, found {sorted(ids)}",
            hint="let Hudi compact or rebuild the metadata table, or set `metadata_table: disable`.",
        )
    return [indexed[n] for n in range(len(ids))]


# An HFile of at least this many cells (a large clean's index tombstones) is deflated the fast way
# (`write_hfile(fast=True)`): its compression is most of the update's CPU and runs beside the
# clean's deletes. Smaller ones are deflated as Hudi's writers do, so their bytes are Hudi's.
FAST_GZIP_FROM = 250_000


def _log_file(cells: Cells, time: str, schema: str, created_ms: int, version: int) -> bytes:
    header = {HeaderKey.SCHEMA: schema, HeaderKey.INSTANT_TIME: time}
    fast = len(cells) >= FAST_GZIP_FROM
    if version < 8:
        # Hudi 0.14/0.15 read HFiles with HBase's reader, which needs HBase's layout (see hfile.py);
        # HBase leaves the creation time 0 unless told.
        info = [(b"schema", schema.encode("utf-8")), *standard_file_info(cells, created_ms=0, hbase=True)]
        content = write_hfile(cells, info, checksum_type=CHECKSUM_CRC32C, hbase=True, fast=fast)
        return encode_log_block(LogBlock(BlockType.HFILE_DATA, header, content))
    info = [(b"schema", schema.encode("utf-8")), *standard_file_info(cells, created_ms=created_ms)]
    # Hudi 1.1 (table version 9) writes no checksums; Hudi 1.0 (version 8) wrote HFiles with HBase's
    # writer and CRC32C checksums, which every reader accepts, so version 8 tables get those.
    checksum = CHECKSUM_NULL if version >= 9 else CHECKSUM_CRC32C
    content = write_hfile(cells, info, checksum_type=checksum, fast=fast)
    return encode_log_block(LogBlock(BlockType.HFILE_DATA, header, content))


def _log_write_stat(partition: str, log: LogFile, prev_commit: str, count: int, size: int, *,
                    base_file: str = "", earlier_logs: tuple[str, ...] = ()) -> WriteStat:
    """The write stat of one new MDT log file: every record counts as an update write (Hudi's
    append handle), and the slice's file list ends with the new log."""
    return WriteStat(
        partition_path=partition,
        file_id=log.file_id,
        path=f"{partition}/{log.name}",
        prev_commit=prev_commit,
        num_writes=count,
        num_update_writes=count,
        total_write_bytes=size,
        file_size_in_bytes=size,
        log_version=log.version,
        log_offset=0,
        base_file=base_file,
        log_files=(*earlier_logs, log.name),
    )


def _commit_metadata(stats: Mapping[str, tuple[WriteStat, ...]], *, layout: int, schema: str | None = None) -> bytes:
    """Avro on layout 2; Hudi 0.x's JSON on layout 1."""
    extra = {"schema": _without_meta_fields(schema)} if schema else {}
    meta = CommitMetadata(operation_type=OPERATION, partition_to_write_stats=stats, extra_metadata=extra)
    return encode_commit_metadata(meta, layout=layout)


def _without_meta_fields(schema: str) -> str:
    """Hudi records the MDT schema in the deltacommit without the five `_hoodie_*` fields."""
    parsed = record_schema_fields(schema)  # checked when the maintainer read it (`check_record_schema`)
    parsed["fields"] = [f for f in parsed["fields"]
                        if not (isinstance(f, dict) and str(f.get("name", "")).startswith("_hoodie_"))]
    return json.dumps(parsed, separators=(",", ":"))
