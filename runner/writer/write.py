"""`runner.write`: a Spark DataFrame into a declared copy-on-write Hudi table, the way Hudi 0.14 writes it.

One call is one commit. Under the table's runner lock it: creates the table if absent (or checks the
declaration against it), rolls back failed writes (Hudi's EAGER policy), picks a new instant time,
writes `T.commit.requested`, computes keys, plans where records go, writes `T.inflight`, writes the
files, and completes `T.commit`. A write that dies anywhere before `T.commit` leaves only files of
an uncommitted instant, which readers ignore and the next write removes.

Two engines do the routing and the file writes (`runner.writer.local` chooses, by size, before any
Spark action): Spark jobs whose tasks write the files, or, for a small write on a local master,
the driver after one `toArrow`. They share every step's definition and write the same records to
the same file groups; `WriteResult.engine` says which ran.

Operations (Hudi's `WriteOperationType`):
- `upsert`: de-duplicate the input by key (precombine field), look the keys up in the latest base
  files of the touched partitions, merge updates into new versions of their file groups, route
  inserts with `assign_inserts` (small files first). As Hudi 0.14's default payload
  (`OverwriteWithLatestAvroPayload`) does, an incoming record replaces the stored one whatever
  their precombine values; the precombine field only decides between records of the same write.
- `insert`: the same routing without the lookup or de-duplication: keys already in the table get a
  second record, unless the insert lands in the small file holding them (Hudi's merge handle then
  replaces the old record, as `hoodie.merge.allow.duplicate.on.inserts=false` does in 0.14).
- `bulk_insert`: no lookup, no small files: each Spark task writes new file groups per partition,
  rolling to a new file at `max_file_size`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from runner.arrow_allocator import library_hint
from runner.declarations.loader import load_project
from runner.declarations.model import Source, TableDeclaration
from runner.errors import RefusedError, RunnerError, StepFailed
from runner.failpoints import failpoint
from runner.hudi.bootstrap import SKELETON_WHY, is_skeleton
from runner.hudi.bucket_index import bucket_index_evidence, bucket_index_refusal
from runner.hudi.files import BaseFile, relative_path
from runner.hudi.instant import Instant, InstantTime
from runner.hudi.pending_undo import refuse_pending_restore
from runner.hudi.properties import TableConfig
from runner.hudi.state import TableMetadata, TableState, read_table_metadata, read_table_state
from runner.hudi.timeline_writer import TimelineWriter, new_instant_time
from runner.selection import did_you_mean
from runner.shortlist import shortlist
from runner.sizing import CommitSize, average_record_size
from runner.spark_jobs import DRIVER, map_in_arrow
from runner.storage import Storage, storage_for
from runner.storage.lock import TableLock
from runner.writer import arrow_input, commit, dedup, local
from runner.writer.arguments import (
    check_project_dir,
    check_table_and_target,
    record_columns,
    refuse_clashing_names,
    refuse_duplicate_columns,
    refuse_non_avro_names,
    unknown_table,
)
from runner.writer.create import (
    COMPLEX,
    KeyLayout,
    create_table_if_absent,
    key_generator_of,
    layout_of,
    open_table,
)
from runner.writer.files import WrittenFile
from runner.writer.heartbeat import CommitHeartbeat
from runner.writer.index import OldFile, index_frame, index_table
from runner.writer.keys import ERROR_PREFIX, sample_record_key
from runner.writer.local import Engine
from runner.writer.options import WriteOptions, parse_options
from runner.writer.prepare import (
    SEQ,
    clustered_by_key,
    counts,
    data_columns,
    deduplicate,
    one_task_per_target,
    route_inserts,
    session_shuffle_partitions,
    shuffle_width,
    tag,
    with_keys,
)
from runner.writer.rollback import rollback_failed_writes
from runner.writer.route import Routing, plan_routing
from runner.writer.schema import PARTITION_PATH, avro_schema_json, field_types, file_avro_schema_json
from runner.writer.table_schema import current_schema, reconcile
from runner.writer.tasks import STATS_SCHEMA, TARGET, Target, WriteTask
from runner.writer.virtual_keys import VirtualKeys, refuse_uncomputable_keys
from runner.writer.workers import writer_workers

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

T = TypeVar("T")
log = logging.getLogger(__name__)


class Operation(StrEnum):
    """The write operations, spelled as `runner.write` takes them; `.hudi` is Hudi's name."""

    UPSERT = "upsert"
    INSERT = "insert"
    BULK_INSERT = "bulk_insert"

    @property
    def hudi(self) -> str:
        return self.value.upper()


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What one `runner.write` did.

    Args:
        table: the declared table name.
        path: the table's base path.
        instant: the completed commit's instant time.
        operation: the Hudi operation type (UPSERT, INSERT, BULK_INSERT).
        created: the table did not exist and was created.
        rolled_back: instant times of failed writes rolled back first.
        files: relative paths of the base files written.
        num_inserts, num_updates: records inserted and updated; num_writes counts every record
            in the files written (carried-over records of merged files included).
        bytes_written: total size of the files written.
        executors: ids of the Spark executors that wrote the files (`driver` in local mode and
            when the driver engine wrote them).
        engine: `driver` when the write ran on the driver in Arrow after one Spark action (a small
            write on a local master), `spark` when Spark jobs routed and wrote it
            (`runner.writer.local`).
    """

    table: str
    path: str
    instant: str
    operation: str
    created: bool
    rolled_back: tuple[str, ...]
    files: tuple[str, ...]
    num_inserts: int
    num_updates: int
    num_writes: int
    bytes_written: int
    executors: tuple[str, ...] = ()
    engine: Engine = "spark"


def write(df: DataFrame | pa.Table | pa.RecordBatchReader, table: str, *, operation: str = "upsert",
          project_dir: str | os.PathLike[str] = ".", target: str | None = None,
          options: Mapping[str, str] | None = None) -> WriteResult:
    """Write a DataFrame (or Arrow records) into the declared table as one Hudi commit (see the module docstring).

    Args:
        df: the records; Hudi meta columns in it are ignored. A `pyarrow.Table` or
            `RecordBatchReader` is written on the driver engine without Spark
            (`runner.writer.arrow_input`): same steps, checks and files as a DataFrame of the same rows.
        table: the table's declared name.
        operation: `upsert`, `insert` or `bulk_insert`.
        project_dir: the project holding the table's declaration.
        target: the project's target to load (as `--target`); the write itself runs on `df`'s session.
        options: Hudi write options, as `df.write.format("hudi").option(...)` takes them; only those
            `runner.writer.options` lists are accepted (`hoodie.parquet.compression.codec`).

    Returns:
        What was written.

    Raises:
        DeclarationError: invalid declarations, or an absent table without a `table:` block.
        RefusedError: an unknown table, operation or option, a declaration that contradicts the table, a
            table this writer does not write, or records it cannot write (null keys, bad types).
        LockError: another runner holds the table.
        StepFailed: the Spark job or a file operation failed; the commit stays pending and the
            next write rolls it back.
    """
    op = _operation(operation)
    write_options = parse_options(options)
    if (hint := library_hint()) is not None:
        log.info("%s.", hint)
    check_project_dir(project_dir)
    check_table_and_target(table, target)
    refuse_duplicate_columns(record_columns(df))  # before the project is read or the table created
    refuse_clashing_names(df)
    refuse_non_avro_names(df)
    decl = _declaration(project_dir, table, target)
    storage = storage_for(decl.path)
    if arrow_input.is_arrow(df):
        records, schema = arrow_input.prepared(df)
        return _write(storage, decl, op, records, schema, write_options)
    data = data_columns(df)
    with writer_workers(data.sparkSession):
        return _write(storage, decl, op, data, data.schema.jsonValue(), write_options)


def _write(storage: Storage, decl: TableDeclaration, op: Operation, data: DataFrame | pa.Table,
           spark_schema: dict[str, object], options: WriteOptions) -> WriteResult:
    if decl.table is not None and decl.table.meta_fields is False:
        # Before a new table's hoodie.properties is written; `_Job` checks what the table itself says.
        refuse_uncomputable_keys(decl.table.record_key, spark_schema, storage.uri)
    created = create_table_if_absent(storage, decl, avro_schema_json(spark_schema, decl.name))
    with TableLock(storage, owner=f"runner.write({op.value})"):
        config = open_table(storage, decl)
        meta = read_table_metadata(storage)
        refuse_pending_restore(storage, meta)
        _refuse_bucket_index(meta, ())
        data, schema = _conformed(storage, meta, config, data, spark_schema)
        if not config.populate_meta_fields:  # before the rollback: a refused write changes nothing
            refuse_uncomputable_keys(config.record_key_fields, schema, storage.uri)
        rolled_back = _guard(lambda: rollback_failed_writes(storage, config), "rollback of failed writes")
        # A rollback adds its own instant and removes failed ones: only then is the timeline read again.
        meta = read_table_metadata(storage) if rolled_back else meta
        layout = _layout(storage, config, meta)
        job = _Job(storage, decl, layout, op, data, schema, config.timezone, options, meta)
        with CommitHeartbeat(storage, job.instant) as job.heartbeat:
            files = _guard(job.run, "write")
    return WriteResult(
        table=decl.name, path=decl.path, instant=str(job.instant), operation=op.hudi, created=created,
        rolled_back=rolled_back, files=tuple(relative_path(f.partition, f.name) for f in files),
        num_inserts=sum(f.num_inserts for f in files), num_updates=sum(f.num_update_writes for f in files),
        num_writes=sum(f.num_writes for f in files), bytes_written=sum(f.size for f in files),
        executors=tuple(sorted(job.executors)), engine=job.engine,
    )


@dataclass(slots=True)
class _Touched:
    """What an upsert or insert on the driver reads of the partitions its records touch."""

    state: TableState
    latest: dict[str, list[BaseFile]]
    blocked: set[tuple[str, str]]
    index: pa.Table | None  # an upsert's (`index_table`); None for an insert
    old_files: dict[str, OldFile]

    def take_old_files(self) -> dict[str, OldFile]:
        """The files the index read, handed over: held here no longer, the caller may let go of
        those it does not merge while the others are written."""
        taken, self.old_files = self.old_files, {}
        return taken


class _Job:
    """One commit's worth of work, run under the lock."""

    def __init__(self, storage: Storage, decl: TableDeclaration, layout: KeyLayout, op: Operation,
                 data: DataFrame | pa.Table, schema: dict[str, object], timezone: str, options: WriteOptions,
                 meta: TableMetadata) -> None:
        self.storage, self.decl, self.layout, self.op, self.data = storage, decl, layout, op, data
        self.options = options
        self.schema = schema
        self.folder = meta.timeline_folder
        self.timeline = TimelineWriter(storage, self.folder, 1)
        self.instant = new_instant_time(meta.timeline, clock=datetime.now(UTC), table_timezone=timezone)
        self.commits = meta
        self.cached: list[DataFrame] = []
        self.executors: set[str] = set()
        self.engine: Engine = "spark"
        self.heartbeat: CommitHeartbeat | None = None  # Hudi's, for the commit (`runner.writer.heartbeat`)
        # Key fields whose keys could not be computed alike were refused in `_write`, before the rollback.
        self.virtual_keys = VirtualKeys.of(layout, schema, storage.uri)

    def run(self) -> list[WrittenFile]:
        if arrow_input.is_arrow(self.data):
            return self._run_arrow(self.data)
        commit.begin(self.timeline, InstantTime(self.instant))
        keyed = with_keys(self.data, self.layout)
        # Chosen on the keyed records: de-duplication only drops rows, so this estimate bounds its output's.
        choice = local.choose_engine(keyed)
        self.engine = choice.engine
        log.info("runner.write %s of %s at %s runs on the %s (%s).", self.op.value, self.decl.name, self.instant,
                 choice.engine, choice.reason)
        try:
            if choice.engine == "driver":
                inflight, files = self._on_driver(keyed)
            else:
                inflight, files = self._on_spark(keyed)
        finally:
            for frame in self.cached:
                frame.unpersist()
        return self._complete(inflight, files)

    def _run_arrow(self, data: pa.Table) -> list[WrittenFile]:
        """An Arrow input: keys computed (and refused) before the instant is requested, then the
        driver engine's steps, with no Spark action."""
        types = field_types(self.schema)
        precombine = self.layout.precombine_field
        if self.op is Operation.UPSERT and precombine in types and not dedup.orders_like_spark(types[precombine]):
            raise RefusedError(
                f"The precombine field {precombine!r} is of a type ({types[precombine]}) whose order only "
                "Spark defines; an Arrow input is de-duplicated without Spark.",
                hint="pass the records as a Spark DataFrame, or de-duplicate them before writing.",
            )
        records = arrow_input.keyed(data, self.layout, types)
        self.engine = "driver"
        log.info("runner.write %s of %s at %s runs on the driver (an Arrow input).", self.op.value,
                 self.decl.name, self.instant)
        commit.begin(self.timeline, InstantTime(self.instant))
        workers = arrow_input.threads()
        if self.op is not Operation.UPSERT:
            return self._complete(*self._on_driver_arrow(records, workers))
        # De-duplication drops only a key's extra records, so the partitions touched are those of the
        # records as given: their state and old files are read (after the instant is requested, as
        # always) while the records are de-duplicated. Leaving the block waits for the read.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="runner-index") as pool:
            reading = pool.submit(self._read_touched, local.partition_counts(records), workers)
            records, keys_distinct = dedup.deduplicated(records, precombine,
                                                        arrow_input.key_numbers(records, self.layout, types))
            touched = reading.result()
        inflight, files = self._on_driver_arrow(records, workers, keys_distinct=keys_distinct, touched=touched)
        return self._complete(inflight, files)

    def _complete(self, inflight: Instant, files: list[WrittenFile]) -> list[WrittenFile]:
        meta = commit.commit_metadata(self.op.hudi, files, avro_schema_json(self.schema, self.layout.table_name))
        if self.heartbeat is not None:
            self.heartbeat.check()
        commit.complete(self.storage, self.timeline, inflight, meta)
        return files

    def _on_spark(self, keyed: DataFrame) -> tuple[Instant, list[WrittenFile]]:
        keyed = self._cache(keyed)
        if self.op is Operation.BULK_INSERT:
            if getattr(self.storage, "through_link", None) is not None:  # a store with links: one count job
                _refuse_linked_partitions(self.storage, sorted(p for (p,) in counts(keyed, PARTITION_PATH)))
            inflight = self._bulk_inflight()
            routed, targets = keyed.sortWithinPartitions(PARTITION_PATH, SEQ), dict[str, Target]()
        else:
            inflight, routed, targets = self._route(keyed)
        failpoint("after_inflight")
        files = []
        for row in map_in_arrow(routed, self._task(targets), STATS_SCHEMA).collect():
            stat = row.asDict()
            self.executors.add(stat.pop("executor"))
            files.append(WrittenFile(**stat))
        failpoint("after_files")
        return inflight, files

    def _on_driver(self, keyed: DataFrame) -> tuple[Instant, list[WrittenFile]]:
        workers = local.threads(keyed)
        records = local.collect(keyed, deduplicate=self.op is Operation.UPSERT,
                                precombine_field=self.layout.precombine_field)
        return self._on_driver_arrow(records, workers)

    def _on_driver_arrow(self, records: pa.Table, workers: int, *, keys_distinct: bool = False,
                         touched: _Touched | None = None) -> tuple[Instant, list[WrittenFile]]:
        """The driver engine from the keyed (and, for an upsert, de-duplicated) records on;
        `keys_distinct`: no record key is given twice, as de-duplication found; `touched`: the
        records' partitions as `_read_touched` read them already."""
        self.executors.add(DRIVER)
        if self.op is Operation.BULK_INSERT:
            _refuse_linked_partitions(self.storage, sorted(records.column(PARTITION_PATH).unique().to_pylist()))
            inflight = self._bulk_inflight()
            failpoint("after_inflight")
            files = local.write_partitions(self._task({}), records, workers)
        else:
            if touched is None:
                touched = self._read_touched(local.partition_counts(records), workers)
            state, latest, blocked, old_files = touched.state, touched.latest, touched.blocked, touched.take_old_files()
            tagged = local.tag(records, touched.index, keys_distinct=keys_distinct)
            inflight, routing = self._plan(state, latest, blocked, *local.target_counts(tagged))
            routed = local.route_inserts(tagged, routing.ranges)
            merged = {relative_path(b.partition, b.base_file.name) for b in routing.buckets if b.base_file}
            old_files = {path: old for path, old in old_files.items() if path in merged}  # the rest can go now
            failpoint("after_inflight")
            files = local.write_targets(self._task(_targets(routing)), routed,
                                        [b.file_id for b in routing.buckets], workers, old_files)
        failpoint("after_files")
        return inflight, files

    def _cache(self, frame: DataFrame) -> DataFrame:
        from pyspark import StorageLevel

        self.cached.append(frame.persist(StorageLevel.MEMORY_AND_DISK))
        return self.cached[-1]

    def _bulk_inflight(self) -> Instant:
        return commit.mark_inflight(self.timeline, self.instant, commit.workload_profile(self.op.hudi, {}, []))

    def _route(self, keyed: DataFrame) -> tuple[Instant, DataFrame, dict[str, Target]]:
        """Count, de-duplicate (upsert), tag and route the cached keyed records.

        The counts come before de-duplication, which drops records but never a partition, so that
        the de-duplication and index shuffles can be sized to the file groups (`shuffle_width`).
        """
        per_partition = {path: n for (path,), n in counts(keyed, PARTITION_PATH).items()}
        state, latest, blocked = self._touched(per_partition)
        width = shuffle_width(per_partition, latest, self._records_per_group(state),
                              session_shuffle_partitions(keyed.sparkSession))
        index = None
        if self.op is Operation.UPSERT:
            keyed = deduplicate(clustered_by_key(keyed, width), self.layout.precombine_field)
            files = [(p, f) for p, fs in latest.items() for f in fs]
            index = index_frame(keyed.sparkSession, self.storage, files, width, self.virtual_keys)
        tagged = self._cache(tag(keyed, index))
        targets = counts(tagged, PARTITION_PATH, TARGET)
        updates = {(path, fid): n for (path, fid), n in targets.items() if fid is not None}
        inserts = {path: n for (path, fid), n in targets.items() if fid is None}
        inflight, routing = self._plan(state, latest, blocked, updates, inserts)
        routed = one_task_per_target(route_inserts(tagged, routing.ranges, width),
                                     [b.file_id for b in routing.buckets])
        return inflight, routed, _targets(routing)

    def _records_per_group(self, state: TableState) -> int:
        """Records a new file group is planned to hold (`plan_routing`'s split of new groups)."""
        sizing = self.decl.file_sizing
        if not self._auto_split():
            return sizing.insert_split_size
        return sizing.max_file_size // max(1, self._avg_record_size(state))

    def _read_touched(self, partitions: Iterable[str], workers: int) -> _Touched:
        """`_touched`, and for an upsert the index of those partitions' latest base files and the
        files it read (`index_table`), on `workers` threads."""
        state, latest, blocked = self._touched(partitions)
        index = None
        old_files: dict[str, OldFile] = {}
        if self.op is Operation.UPSERT:
            index, old_files = index_table(self.storage, [(p, f) for p, fs in latest.items() for f in fs],
                                           workers, keep_bytes=local.OLD_FILES_MAX_BYTES,
                                           virtual_keys=self.virtual_keys)
        return _Touched(state, latest, blocked, index, old_files)

    def _touched(self, partitions: Iterable[str]
                 ) -> tuple[TableState, dict[str, list[BaseFile]], set[tuple[str, str]]]:
        """The table state of the partitions the write touches, their latest base files, and the
        file groups a pending clustering or compaction rewrites. Read afresh, after this write's
        instant is requested and (on the DataFrame path) after the Spark action: a clustering a Hudi
        writer scheduled meanwhile is seen."""
        partitions = sorted(partitions)
        _refuse_linked_partitions(self.storage, partitions)
        state = read_table_state(self.storage, partitions=partitions)
        _refuse_bucket_index(state.metadata, (g.file_id for g in state.active_groups))
        blocked = set(state.metadata.pending_clustering) | set(state.metadata.pending_compaction)
        return state, _latest_base_files(state), blocked

    def _plan(self, state: TableState, latest: dict[str, list[BaseFile]], blocked: set[tuple[str, str]],
              updates: dict[tuple[str, str], int], inserts: dict[str, int]) -> tuple[Instant, Routing]:
        """Refuse updates to blocked groups, plan the buckets, and write `T.inflight`.

        A metadata-only bootstrap's skeleton (`runner.hudi.bootstrap`) is never merged into: its rows
        hold keys only, so the merged file would carry its records without their data. Updates of
        its records are refused; inserts go to other small files or new groups, as they do beside
        a pending clustering.
        """
        _refuse_updates_to(blocked & set(updates), self.storage.uri)
        skeletons = {(p, b.file_id): b for p, files in latest.items() for b in files if is_skeleton(b)}
        _refuse_skeleton_updates([relative_path(k[0], skeletons[k].name) for k in sorted(skeletons.keys() & updates)],
                                 self.storage.uri)
        routing = plan_routing(
            updates,
            inserts,
            latest,
            sizing=self.decl.file_sizing,
            avg_record_size=self._avg_record_size(state),
            auto_split=self._auto_split(),
            blocked=blocked | skeletons.keys(),
        )
        inflight = commit.mark_inflight(
            self.timeline, self.instant, commit.workload_profile(self.op.hudi, inserts, routing.buckets)
        )
        return inflight, routing

    def _task(self, targets: dict[str, Target]) -> WriteTask:
        return WriteTask(
            storage=self.storage,
            instant=self.instant,
            spark_schema=self.schema,
            avro_schema=file_avro_schema_json(self.schema, self.layout.table_name),
            targets=targets,
            max_file_size=self.decl.file_sizing.max_file_size,
            avg_record_size=self._avg_record_size(None),
            codec=self.options.codec,
            keys_distinct=self.op is Operation.UPSERT,  # both engines de-duplicate an upsert first
            virtual_keys=self.virtual_keys,
        )

    def _avg_record_size(self, state: TableState | None) -> int:
        meta = state.metadata if state is not None else self.commits
        sizes = [
            CommitSize(i.action.value, m.total_bytes_written, m.total_records_written)
            for i in reversed(meta.timeline.completed_writes)
            if (m := meta.commits.get(i.time)) is not None
        ]
        return average_record_size(sizes, small_file_limit=self.decl.file_sizing.small_file_limit)

    def _auto_split(self) -> bool:
        """Hudi splits new file groups by size (`insert.auto.split`) unless a split size was declared."""
        return (
            dict(self.decl.provenance).get("file_sizing.insert_split_size", Source.HUDI_DEFAULT) is Source.HUDI_DEFAULT
        )


def _conformed(storage: Storage, meta: TableMetadata, config: TableConfig, data: DataFrame | pa.Table,
               spark_schema: dict[str, object]) -> tuple[DataFrame | pa.Table, dict[str, object]]:
    """The data in the table's column order and its schema to write, or a refusal if the columns
    differ from the table's (see `runner.writer.table_schema`). Runs before anything is written."""
    table_schema = current_schema(meta, config)
    if table_schema is None:
        return data, spark_schema
    order, schema = reconcile(spark_schema, table_schema, table=config.name, where=storage.uri)
    if arrow_input.is_arrow(data):
        return arrow_input.conformed(data, schema), schema
    if order == data.columns:  # already in the table's order: no new plan for Spark to analyse
        return data, schema
    return data.select(*order), schema


def _layout(storage: Storage, config: TableConfig, meta: TableMetadata) -> KeyLayout:
    """The table's key layout; a single-field ComplexKeyGenerator table is asked how it stores keys
    (one without meta fields stores none: `runner.writer.virtual_keys`)."""
    if key_generator_of(config) != COMPLEX or len(config.record_key_fields) != 1 or not config.populate_meta_fields:
        return layout_of(config)
    return layout_of(config, sample_key=sample_record_key(storage, meta.commits))


def _latest_base_files(state: TableState) -> dict[str, list[BaseFile]]:
    """Per listed partition, the latest committed base file of each active (not replaced) file group."""
    latest: dict[str, list[BaseFile]] = {}
    for group in state.active_groups:
        newest = group.latest
        if newest is None or newest.base_file is None:
            continue
        latest.setdefault(group.partition, []).append(newest.base_file)
    return latest


def _refuse_bucket_index(meta: TableMetadata, file_ids: Iterable[str]) -> None:
    """Refuse a table laid out for Hudi's bucket index (`runner.hudi.bucket_index`): this writer
    routes inserts by size and opens file groups with random ids, so its records would sit outside
    their buckets. `file_ids` are the active groups of the partitions the write touches; the file
    groups the latest write wrote are looked at too, for a bulk insert, which lists no partition."""
    latest = meta.timeline.completed_writes[-1].time if meta.timeline.completed_writes else None
    commit = meta.commits.get(latest) if latest is not None else None
    written = [s.file_id for s in commit.write_stats if s.file_id] if commit is not None else []
    ids = list(file_ids)
    evidence = bucket_index_evidence(meta.config.raw, has_bucket_index_folder=meta.has_bucket_index_folder,
                                     file_ids=ids or written)
    if evidence is not None:
        raise RefusedError(
            bucket_index_refusal(evidence, what=f"runner.write into {meta.base_path}",
                                 fix="nothing was written"),
            hint="write this table with Hudi's own writer and its bucket index settings.",
        )


def _refuse_updates_to(groups: set[tuple[str, str]], table: str) -> None:
    """Hudi's default `SparkRejectUpdateStrategy`: no updates to groups a pending clustering rewrites."""
    if groups:
        listed = ", ".join(f"{p}/{f}" if p else f for p, f in sorted(groups))
        raise RefusedError(
            f"Refusing to update file groups of {table} that a pending clustering or compaction is "
            f"rewriting: {listed}.",
            hint="let the pending clustering or compaction complete (or roll it back), then write again.",
        )


def _refuse_skeleton_updates(paths: list[str], table: str) -> None:
    """Updates of records whose file group's latest base file is a bootstrap skeleton (`paths`)."""
    if paths:
        shown = shortlist(paths, 3)
        raise RefusedError(
            f"Refusing to update records of {table} held by skeleton base files of Hudi's metadata-only "
            f"bootstrap ({shown}): {SKELETON_WHY}; nothing was merged.",
            hint="update these records with a Hudi writer, which merges them with the bootstrap source files.",
        )


def _targets(routing: Routing) -> dict[str, Target]:
    return {b.file_id: Target(b.partition, b.base_file) for b in routing.buckets}


def _operation(operation: str) -> Operation:
    try:
        return Operation(operation)
    except ValueError:
        # Hudi's own option reads its value in any case ("UPSERT"); a delete is what users try next.
        if isinstance(operation, str) and operation.strip().lower() == "delete":
            near = " (runner.write does not delete records: delete them with Hudi itself)"
        else:
            near = did_you_mean(str(operation).strip().lower(), [o.value for o in Operation]) \
                if isinstance(operation, str) else ""
        raise RefusedError(
            f"Unknown write operation {operation!r}; expected one of {', '.join(o.value for o in Operation)}{near}."
        ) from None


def _declaration(project_dir: str | os.PathLike[str], table: str, target: str | None) -> TableDeclaration:
    project = load_project(project_dir, target=target)
    for decl in project.tables:
        if decl.name == table:
            return decl
    unknown_table(project, table)


def _guard(action: Callable[[], T], stage: str) -> T:
    """Run `action`, turning Spark and I/O failures into runner errors (ours keep their message)."""
    try:
        return action()
    except RunnerError:
        raise
    except Exception as error:
        raise _translate(error, stage) from error


def _translate(error: Exception, stage: str) -> RunnerError:
    text = str(error)
    for marker in (ERROR_PREFIX, "RefusedError: "):
        if marker in text:
            message = text[text.index(marker) + len(marker) :].splitlines()[0].strip()
            return RefusedError(message.rstrip(".") + ".")
    first = next(iter(_lines(text)), type(error).__name__)
    return StepFailed(
        f"The {stage} failed: {first}", hint="fix the cause and write again; the failed commit is rolled back first."
    )


def _lines(text: str) -> Iterable[str]:
    return (line.strip() for line in text.splitlines() if line.strip())



def _refuse_linked_partitions(storage: Storage, partitions: Sequence[str]) -> None:
    """Refuse a write into a partition folder reached through a symbolic link: the table's listings
    never enter one (`runner.hudi.view.list_partitions`), so its records could not be looked up,
    and an upsert would write a second copy of each. A bulk insert looks nothing up, but its files
    would land where the link leads: outside the table, or in another partition's folder, whose
    listing would then hold records of a partition it is not."""
    linked = getattr(storage, "through_link", None)
    found = sorted(p for p in partitions if linked is not None and linked(p))
    if found:
        raise RefusedError(
            f"{storage.uri}: partition {found[0]!r} is a symbolic link (or lies inside one); the runner never "
            "reads or writes a table through a link, so its records cannot be looked up; nothing of this write "
            "was committed",
            hint="move the partition's folder back into the table (or write to the table at the link's target).",
        )
