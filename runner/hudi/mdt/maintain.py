"""Keeping a table's metadata table in step with the runner's cleans and resizes: checks, then hooks.

`prepare_clean_maintenance` reads the MDT once (under the table lock, before anything is written),
refuses when it is not safe to extend, and returns the hook the clean runner calls after the
deletes and before the data clean completes. `prepare_resize_maintenance` does the same for a
resize: its hook runs after the new base files are written and before the replacecommit completes.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from runner.errors import CorruptMetadataError, RefusedError, StorageError
from runner.hudi.footer import BLOOM_FILTER, BLOOM_FILTER_TYPE_CODE
from runner.hudi.instant import Action, InstantTime, State
from runner.hudi.json_text import load_json
from runner.hudi.mdt import ahead as ahead_encoding
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.actions import MdtCommit, clean_commit, held_by_file, unsupported_partitions
from runner.hudi.mdt.check import consistency_problems
from runner.hudi.mdt.clustering import (
    PARTITION_STATS,
    RECORD_INDEX,
    NewBaseFile,
    missing_stats,
    resize_commit,
    resize_refusals,
    will_not_resize,
)
from runner.hudi.mdt.partitions import BLOOM_FILTERS, COLUMN_STATS, EXPRESSION_INDEX_PREFIX, EXPRESSION_INDEX_TYPES
from runner.hudi.mdt.reader import (
    FILES_PARTITION,
    MetadataTable,
    read_metadata_table,
    read_partition,
    read_partition_schema,
)
from runner.hudi.mdt.records import check_record_schema
from runner.hudi.mdt.tombstones import LaterTombstones
from runner.hudi.mdt.writer import (
    SUPPORTED_VERSIONS,
    EncodedLogs,
    _remove_logs_of,
    partition_groups,
    write_mdt_commit,
)
from runner.hudi.metadata import CleanMetadata
from runner.hudi.state import METADATA_TABLE, TableMetadata, read_table_metadata, read_table_state
from runner.storage import Storage

INDEX_DEFS_KEY = "hoodie.table.index.defs.path"
DEFAULT_INDEX_DEFS = ".hoodie/.index_defs/index.json"
Names = ahead_encoding.Names
# Hudi 1.x (table version 8+) records its indexes' columns in the table's index definitions.
INDEX_DEFS_VERSION = 8


@dataclass(frozen=True, slots=True)
class CleanMaintenance:
    """What the clean hook needs, read once: the MDT, its record schema and indexed columns.

    `held_partitions`: index partitions whose tombstones are those of the records the MDT holds
    for each cleaned file: column_stats on table version 6 (the indexed columns are in no table
    file) and expression indexes (`actions.held_by_file`).
    """

    storage: Storage
    mdt: MetadataTable
    partitions: tuple[str, ...]
    schema: str
    stats_columns: tuple[str, ...]
    step: Callable[[str], None] = lambda _: None
    held_partitions: tuple[str, ...] = ()
    # instant -> (the deleted names it was started for, the work): see `ahead`
    _ahead: dict[str, tuple[Names, ahead_encoding.Encoder]] = field(default_factory=dict)

    def ahead(self, instant: InstantTime, names: Names) -> Callable[[], None]:
        """Start building and encoding the index partitions' tombstones for a clean deleting `names`
        (data partition -> file names), while the clean's deletes run: in a child process for a
        large clean, on a thread for a small one (see `CHILD_FROM`).

        gzip of their HFile blocks is most of the MDT update's CPU, and it depends only on which
        files the plan lists (Hudi tombstones every `deletePathPatterns` entry, deleted or not),
        never on how the deletes went. Nothing is written here: the deltacommit is still written
        by `__call__`, after the deletes, and uses this work only if the clean's files are these.
        Not for `held_partitions`, whose records are read from the MDT when the clean is recorded.
        Returns what stops that work (the clean calls it if it fails before recording).
        """
        indexes = tuple(p for p in self.partitions if p in (COLUMN_STATS, BLOOM_FILTERS))
        if self.held_partitions or not indexes:
            return _no_work
        names = {p: n for p, n in names.items() if n}
        for _, earlier in self._ahead.values():
            earlier.stop()
        self._ahead.clear()
        version = self.mdt.config.version
        job = ahead_encoding.EncodeJob(
            str(instant), names, {p: partition_groups(self.storage, p) for p in indexes}, self.stats_columns,
            self.schema, version, version < INDEX_DEFS_VERSION, int(time.time() * 1000),
        )
        tombstones = sum(map(len, names.values())) * (len(self.stats_columns) + (BLOOM_FILTERS in indexes))
        encoder = (ahead_encoding.Encoder if tombstones >= CHILD_FROM else ahead_encoding.ThreadEncoder)(job)
        self._ahead[str(instant)] = (names, encoder)
        return functools.partial(self._abandon, str(instant))

    def _abandon(self, instant: str) -> None:
        started = self._ahead.pop(instant, None)
        if started is not None:
            started[1].stop()

    def __call__(
        self, instant: InstantTime, clean: CleanMetadata, completion_time: Callable[[], InstantTime]
    ) -> list[str]:
        job, ready = self._take_ahead(str(instant), clean)
        held = {}
        if self.held_partitions:
            data = read_table_metadata(self.storage)
            held = {p: held_by_file(read_partition(self.storage, data, self.mdt, p)[0]) for p in self.held_partitions}
        commit = clean_commit(
            str(instant), clean, mdt_partitions=[p for p in self.partitions if p not in ready],
            stats_columns=self.stats_columns, schema=self.schema, held=held,
            legacy_keys=self.mdt.config.version < INDEX_DEFS_VERSION,
        )
        if job is not None and ready:
            # Built again only if a partition's file groups changed since (the writer re-encodes then).
            built = functools.cache(lambda: ahead_encoding.tombstones(job))
            later = {p: LaterTombstones(functools.partial(_pick, built, p)) for p in ready}
            commit = MdtCommit(commit.instant, {**commit.records, **later})
        mdt = read_metadata_table(self.storage)  # a retry may find its own pending instant
        return write_mdt_commit(
            self.storage,
            mdt,
            commit,
            schema=self.schema,
            completion_time=completion_time,
            created_ms=job.created_ms if job is not None else int(time.time() * 1000),
            step=self.step,
            encoded=ready,
        )

    def _take_ahead(self, instant: str, clean: CleanMetadata) -> tuple[ahead_encoding.EncodeJob | None,
                                                                        Mapping[str, EncodedLogs]]:
        """`ahead`'s job and logs for this clean, if it was started for exactly its files and
        finished; else (None, {}): the hook encodes everything itself, as without it."""
        started = self._ahead.pop(instant, None)
        if started is None:
            return None, {}
        names, work = started
        listed = {p: m.delete_path_patterns for p, m in clean.partition_metadata.items() if m.delete_path_patterns}
        if listed != names:
            work.stop()
            return None, {}
        logs = work.result()
        return (work.job, logs) if logs is not None else (None, {})


def _no_work() -> None:
    """Stops nothing: `ahead` started no work."""


def _pick(build: Callable[[], dict[str, Mapping[str, bytes]]], partition: str) -> Mapping[str, bytes]:
    return build()[partition]


# From how many tombstones `ahead` encodes in a child process rather than on a thread (see
# runner.hudi.mdt.ahead for why). A child costs about 0.5 s of CPU to start (numpy and the encoder's
# imports); encoding takes about 4.6 us of CPU a tombstone, so below this the thread is cheaper.
CHILD_FROM = 250_000


def refusal_reasons(storage: Storage, data: TableMetadata, *, resuming: frozenset[str] = frozenset(),
                    for_resize: bool = False) -> list[str]:
    """Why the runner must not write to this table's MDT now (empty when it may).

    `resuming` are data instants the runner itself is about to finish (pending cleans): their own
    pending or completed MDT deltacommit is the runner's interrupted work, not a foreign failure.
    `for_resize`: also the MDT partitions a resize cannot keep in step.
    """
    # The runner's own interrupted resizes are finished (or rolled back) by this apply, MDT part included.
    resuming = resuming | {str(t) for t in data.runner_pending_clustering}
    if data.config.version not in SUPPORTED_VERSIONS:
        return [
            (
                f"the table has version {data.config.version}; the runner maintains metadata tables "
                "only for table versions 6, 8 and 9"
            )
        ]
    if not data.has_metadata_table:
        return [
            (
                f"hoodie.table.metadata.partitions lists {', '.join(data.config.metadata_partitions)} but "
                ".hoodie/metadata is missing, so readers may expect a metadata table that is not there"
            )
        ]
    if "files" not in data.config.metadata_partitions:
        return [
            "hoodie.table.metadata.partitions does not list `files`, so readers do not use this "
            "metadata table; the runner will not write to it"
        ]
    mdt = read_metadata_table(storage)
    reasons = consistency_problems(data, mdt, resuming=resuming)
    missing = unsupported_partitions(data.config.metadata_partitions)
    if missing:
        reasons.append(f"the runner cannot update the metadata partitions {', '.join(missing)} for a clean")
    reasons.extend(_expression_index_problems(storage, data))
    if for_resize:
        reasons.extend(r for r in resize_refusals(data.config) if r not in reasons)
    return reasons


def prepare_clean_maintenance(
    storage: Storage,
    data: TableMetadata,
    *,
    resuming: frozenset[str] = frozenset(),
    step: Callable[[str], None] = lambda _: None,
) -> CleanMaintenance:
    """Check the MDT and read what every clean hook call needs; raises RefusedError with the reasons."""
    reasons = refusal_reasons(storage, data, resuming=resuming)
    if reasons:
        raise RefusedError(
            f"{storage.uri}: the runner will not clean this table while keeping its metadata table, because "
            + "; ".join(reasons),
            hint="run a Hudi write or `hudi-cli metadata` to let Hudi settle its metadata table, or set "
            "`metadata_table: disable` to remove it (readers then list files; indexes are lost).",
        )
    mdt = read_metadata_table(storage)
    schema = _record_schema(storage, data, mdt)
    partitions = data.config.metadata_partitions
    held = tuple(p for p in partitions if p.startswith(EXPRESSION_INDEX_PREFIX))
    with_stats = COLUMN_STATS in partitions
    if with_stats and data.config.version < INDEX_DEFS_VERSION:
        held, with_stats = (COLUMN_STATS, *held), False
    columns = _stats_columns(storage, data) if with_stats else ()
    return CleanMaintenance(storage, mdt, partitions, schema, columns, step, held_partitions=held)


@dataclass(frozen=True, slots=True)
class ResizedFile:
    """A base file a resize wrote: partition, path relative to the base path, size, input paths."""

    partition: str
    path: str
    size: int
    inputs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ResizeMaintenance:
    """What the resize hooks need, read once: the MDT partitions, record schema and indexed columns."""

    storage: Storage
    partitions: tuple[str, ...]
    schema: str
    stats_columns: tuple[str, ...]
    timezone: str
    step: Callable[[str], None] = lambda _: None

    def input_problems(self, inputs: Iterable[str]) -> list[str]:
        """Why the MDT records of a resize of `inputs` (paths) cannot be computed: inputs without
        column stats, whose min, max and counts the new file's stats are made of."""
        if COLUMN_STATS not in self.partitions or not self.stats_columns:
            return []
        stats = self._column_stats()
        missing = missing_stats((_split(p) for p in inputs), self.stats_columns, stats)
        if not missing:
            return []
        return [f"the metadata table has no column_stats for {len(missing)} input column(s), e.g. {missing[0]}"]

    def __call__(self, instant: InstantTime, written: Sequence[ResizedFile],
                 completion_time: Callable[[], InstantTime]) -> list[str]:
        """Write the MDT deltacommit `instant` recording `written`; returns the MDT files written."""
        undo_mdt_commit(self.storage, instant, keep_pending=True)  # an earlier attempt's, listing its files
        data = read_table_metadata(self.storage)
        mdt = read_metadata_table(self.storage)
        with_stats = COLUMN_STATS in self.partitions and bool(self.stats_columns)
        stats = self._column_stats(data, mdt) if with_stats else {}
        keys_needed = RECORD_INDEX in self.partitions
        blooms_needed = BLOOM_FILTERS in self.partitions
        files = [_describe(self.storage, f, self.stats_columns if with_stats else (), keys_needed, blooms_needed)
                 for f in written]
        latest: dict[str, set[str]] = {}
        if with_stats and PARTITION_STATS in self.partitions:
            state = read_table_state(self.storage, partitions={f.partition for f in written}, metadata=data)
            for group in state.active_groups:
                if group.latest is not None:
                    latest.setdefault(group.partition, set()).update(group.latest.file_names)
        commit = resize_commit(str(instant), files, mdt_partitions=self.partitions, stats_columns=self.stats_columns,
                               column_stats=stats, latest_files=latest, schema=self.schema,
                               table_timezone=self.timezone)
        return write_mdt_commit(self.storage, mdt, commit, schema=self.schema, completion_time=completion_time,
                                created_ms=int(time.time() * 1000), step=self.step)

    def roll_back(self, instant: InstantTime) -> list[str]:
        """Remove the MDT deltacommit of a resize being rolled back (before its data instant goes)."""
        return undo_mdt_commit(self.storage, instant, keep_pending=False)

    def _column_stats(self, data: TableMetadata | None = None,
                      mdt: MetadataTable | None = None) -> dict[str, rec.MetadataRecord]:
        data = data or read_table_metadata(self.storage)
        mdt = mdt or read_metadata_table(self.storage)
        return read_partition(self.storage, data, mdt, COLUMN_STATS, with_names=True)[0]


def prepare_resize_maintenance(storage: Storage, data: TableMetadata, *,
                               step: Callable[[str], None] = lambda _: None) -> ResizeMaintenance:
    """Check the MDT for a resize and read what its hooks need.

    Raises:
        RefusedError: the reasons, as a sentence without the table or what the caller did about
            them (it may roll an interrupted resize back, or refuse a new one).
    """
    reasons = refusal_reasons(storage, data, for_resize=True)
    if reasons:
        raise RefusedError(
            will_not_resize(reasons),
            hint="run a Hudi write or `hudi-cli metadata` to let Hudi settle its metadata table, run Hudi's "
            "clustering instead, or set `metadata_table: disable` to remove it (readers then list files; "
            "indexes are lost).",
        )
    schema = _record_schema(storage, data, read_metadata_table(storage))
    columns = _stats_columns(storage, data) if COLUMN_STATS in data.config.metadata_partitions else ()
    return ResizeMaintenance(storage, data.config.metadata_partitions, schema, columns, data.config.timezone, step)


def undo_mdt_commit(storage: Storage, instant: InstantTime, *, keep_pending: bool) -> list[str]:
    """Take back the MDT deltacommit `instant` of a data instant that never completed.

    Readers ignore it while the data instant is pending, but a completed one would count once the
    data instant is gone, and it names files an earlier attempt wrote. The completed file goes
    first (from then on nothing of it is valid), then its logs, then, unless `keep_pending` (a
    retry writes it again), its inflight and requested files.
    """
    mdt = read_metadata_table(storage)
    removed = []
    mine = [i for i in mdt.timeline.files if i.time == instant and i.action is Action.DELTA_COMMIT]
    for state in (State.COMPLETED, State.INFLIGHT, State.REQUESTED):
        if state is not State.COMPLETED and keep_pending:
            break
        for i in mine:
            if i.state is state:
                path = f"{mdt.folder}/{i.file_name}"
                storage.delete(path)
                removed.append(path)
        if state is State.COMPLETED and mine:
            removed.extend(_remove_logs_of(storage, instant))
    return removed


def _describe(storage: Storage, f: ResizedFile, columns: Sequence[str], with_keys: bool,
              with_bloom: bool = False) -> NewBaseFile:
    """The new file's column-chunk sizes (`ColumnChunkMetaData.getTotalSize` and
    `getTotalUncompressedSize`, summed over row groups), for the record index its keys, and for
    the bloom_filters index the bloom filter of its footer, as Hudi's file reader returns it."""
    partition, name = _split(f.path)
    parquet = pq.ParquetFile(pa.BufferReader(storage.read(f.path)))
    sizes: dict[str, tuple[int, int]] = {}
    wanted = set(columns)
    meta = parquet.metadata
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            if chunk.path_in_schema in wanted:
                compressed, uncompressed = sizes.get(chunk.path_in_schema, (0, 0))
                sizes[chunk.path_in_schema] = (compressed + chunk.total_compressed_size,
                                               uncompressed + chunk.total_uncompressed_size)
    record_keys: list[str] = []
    if with_keys:
        record_keys = parquet.read(columns=["_hoodie_record_key"]).column(0).to_pylist()
    bloom = _footer_bloom_filter(storage, f.path, meta.metadata) if with_bloom else None
    return NewBaseFile(partition, name, f.size, tuple(_split(p)[1] for p in f.inputs), sizes, record_keys, bloom)


def _footer_bloom_filter(storage: Storage, path: str, footer: dict[bytes, bytes] | None) -> tuple[str, str]:
    """(type code, serialized filter) of a base file's footer. Hudi reads the filter back and
    re-serializes it (`BloomFilter.serializeToString`), which gives the footer's string again."""
    entries = footer or {}
    serialized = entries.get(BLOOM_FILTER.encode())
    type_code = entries.get(BLOOM_FILTER_TYPE_CODE.encode())
    if serialized is None or type_code is None:
        raise CorruptMetadataError(
            f"{storage.uri}/{path}: the rewritten file has no bloom filter in its footer "
            f"(expected {BLOOM_FILTER} and {BLOOM_FILTER_TYPE_CODE}), so its bloom_filters record cannot be written",
            path=path,
        )
    return type_code.decode("utf-8"), serialized.decode("utf-8")


def _split(path: str) -> tuple[str, str]:
    partition, _, name = path.rpartition("/")
    return partition, name


def _record_schema(storage: Storage, data: TableMetadata, mdt: MetadataTable) -> str:
    schema = read_partition_schema(storage, data, mdt, FILES_PARTITION)
    if not schema:
        raise RefusedError(f"{storage.uri}: the metadata table's files partition has no record schema to write with")
    # Before anything is written: the records and the deltacommit's `schema` are made with it.
    check_record_schema(schema, where=f"{storage.uri}/{METADATA_TABLE}/{FILES_PARTITION}")
    return schema


def _expression_index_problems(storage: Storage, data: TableMetadata) -> list[str]:
    """Expression-index partitions whose clean the runner cannot record: without an index definition,
    or of a type other than column stats or bloom filters (`ExpressionIndexer.buildClean` refuses those too)."""
    expressions = [p for p in data.config.metadata_partitions if p.startswith(EXPRESSION_INDEX_PREFIX)]
    if not expressions:
        return []
    path = data.config.raw.get(INDEX_DEFS_KEY) or DEFAULT_INDEX_DEFS
    try:
        definitions = _index_definitions(storage, path)
        types = {p: str(definitions[p]["indexType"]).lower() if p in definitions else None for p in expressions}
    except (StorageError, CorruptMetadataError, ValueError, KeyError, TypeError) as error:
        return [f"cannot read the expression indexes' definitions in {path} (expected "
                f"indexDefinitions.<name>.indexType): {error}"]
    unknown = sorted(f"{p} ({t or 'no definition'})" for p, t in types.items() if t not in EXPRESSION_INDEX_TYPES)
    if not unknown:
        return []
    return [f"the runner records a clean only in expression indexes of type column_stats or bloom_filters, "
            f"not in {', '.join(unknown)}"]


def _index_definitions(storage: Storage, path: str) -> Any:
    """`indexDefinitions` of Hudi's index definitions file, read within bounds (`json_text`).

    Raises:
        CorruptMetadataError: not JSON, or nested too deeply to read.
        StorageError, KeyError, TypeError: unreadable, or without `indexDefinitions`.
    """
    return load_json(storage.read(path), path=path, expected="Hudi's index definitions (JSON)")["indexDefinitions"]  # type: ignore[index]


def _stats_columns(storage: Storage, data: TableMetadata) -> tuple[str, ...]:
    """Columns of the column_stats index, from the table's index definitions (Hudi 1.x)."""
    path = data.config.raw.get(INDEX_DEFS_KEY) or DEFAULT_INDEX_DEFS
    try:
        definitions = _index_definitions(storage, path)
        fields = definitions[COLUMN_STATS]["sourceFields"]
    except (StorageError, CorruptMetadataError, ValueError, KeyError, TypeError) as error:
        raise RefusedError(
            f"{storage.uri}/{path}: cannot tell which columns the column_stats index covers "
            f"(expected indexDefinitions.column_stats.sourceFields): {error}",
            hint="set `metadata_table: disable`, or let Hudi rewrite its index definitions.",
        ) from error
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise RefusedError(f"{storage.uri}/{path}: indexDefinitions.column_stats.sourceFields is not a list of names")
    return tuple(fields)
