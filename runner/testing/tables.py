"""`TableBuilder`: real Hudi tables on local disk, written with pyarrow instead of Spark.

The tables follow Hudi's on-disk formats closely enough for Hudi's readers (hudi-rs, the `hudi` PyPI
package, is used as the oracle in tests) and for the runner:

* `.hoodie/hoodie.properties` of table version 6 (timeline layout 1: instants directly in
  `.hoodie/`, JSON commit metadata) or 8 (layout 2: `.hoodie/timeline/`, completed instants named
  `<requested>_<completion>.<action>`, Avro commit metadata); no metadata table unless asked for (below).
* For every write, the requested, inflight and completed instant files, the completed one carrying
  full write stats; Parquet base files `<fileId>_<token>_<instant>.parquet` with Hudi's meta columns;
  `.hoodie_partition_metadata` in every partition.
* Copy-on-write updates rewrite a file group's whole row set into a new base file (a new slice);
  merge-on-read updates append a log file holding one Parquet data block with the updated records.

Time is deterministic: the first instant is `start`, each later one `step` after the previous (or
the `at=` given to an operation), and layout 2 completes every instant half a step after it starts.
File ids, write tokens and row values derive from `seed`.

Tiny mode (`tiny=True`) is for benchmarks that need many files with real names, sizes and a real
timeline, fast. Every base file is the same zero-row Parquet file (padded with a sparse hole to
`file_bytes`), log files hold a zero-row block, inflight instants are empty, and write stats still
count `rows_per_file` records per file. Such tables read as empty: they are not row-readable, and
`expected_rows` refuses them.

With `metadata_table=True` the table also gets a metadata table holding its `files` partition
(runner.testing.metadata_table).

Not modelled: Hudi's bloom filter footer (Hudi's BLOOM index cannot upsert into these tables),
the metadata table's index partitions, archival, rollbacks and cleans (the runner writes those),
updates to groups inside a pending compaction or clustering plan, and merge-on-read failed writes
with log files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

import pyarrow as pa

from runner.hudi.instant import Action, InstantTime, State
from runner.hudi.metadata import (
    CLUSTER,
    ClusteringGroup,
    CommitMetadata,
    RequestedReplace,
    SavepointMetadata,
    WriteStat,
    encode_commit_metadata,
    encode_requested_replace,
    encode_savepoint_metadata,
)
from runner.testing import data, layout
from runner.testing.expected import ExpectedSlice, Group, SyntheticFile, expected_rows, expected_slices
from runner.testing.folder import TableFiles
from runner.testing.metadata_indexes import INDEX_DEFS_PATH, ExpressionIndex
from runner.testing.metadata_table import SyntheticMetadataTable
from runner.testing.writes import WriteSet, clustering_slice, compaction_operation, workload
from runner.vocabulary import TableType

# Kept as names of their own: outside scripts build tables with `table_type=MERGE_ON_READ`.
COPY_ON_WRITE, MERGE_ON_READ = TableType.COPY_ON_WRITE, TableType.MERGE_ON_READ
DEFAULT_START = datetime(2026, 1, 1)
CLUSTERING_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"

# The meta columns Hudi 1.x's column_stats index covers by default (fixtures v8_trips_8i3u1d and
# v9_txns_simple_meta), before the data columns; the padding column `note` is left out.
STATS_META_COLUMNS = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key")

# `{partition: [file ids] | count}`, or a count for every partition; a count picks the oldest live groups.
Updates = Mapping[str, Sequence[str] | int] | int | None


class TableBuilder:
    """Creates a Hudi table at `path` and writes its history one operation at a time.

    Args:
        path: the table's base path; must not hold a table already.
        name: `hoodie.table.name`.
        partitions: relative partition paths (`region=eu`, or `eu` for non-hive-style); empty for
            a non-partitioned table.
        version: table version, 6 or 8.
        table_type: a `TableType`, or its name (`"MERGE_ON_READ"`).
        record_key, partition_field, precombine: column names; `partition_field` defaults to the
            `field` of hive-style `field=value` partitions.
        seed: makes file ids and row values differ between otherwise equal builders.
        start, step: the first instant time and the gap between instants.
        rows_per_file: records in each new file group.
        file_bytes: rough size of each new base file (padding rows with a `note` string); in tiny
            mode the exact size.
        tiny: write identical zero-row files (see the module docstring).
        metadata_table: give the table a metadata table with a `files` partition, initialized
            on the first write and updated by every completed write (runner.testing.metadata_table).
        metadata_indexes: index partitions the metadata table keeps too: `column_stats` (over
            `STATS_COLUMNS`) and `bloom_filters` (runner.testing.metadata_indexes).
        expression_indexes: expression indexes the metadata table keeps (version 8).
        bucket_index: name new file groups as Hudi's bucket index does (the bucket number, 0, 1,
            ... per partition, as the id's first 8 digits); rows are not hashed to their bucket.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        name: str,
        partitions: Sequence[str] = (),
        version: int = 6,
        table_type: TableType | str = TableType.COPY_ON_WRITE,
        record_key: str = "id",
        partition_field: str | None = None,
        precombine: str = "ts",
        seed: int = 0,
        start: datetime = DEFAULT_START,
        step: timedelta = timedelta(seconds=1),
        rows_per_file: int = 3,
        file_bytes: int | None = None,
        tiny: bool = False,
        metadata_table: bool = False,
        metadata_indexes: Sequence[str] = (),
        expression_indexes: Sequence[ExpressionIndex] = (),
        bucket_index: bool = False,
    ) -> None:
        if version not in (6, 8):
            raise ValueError(f"version must be 6 or 8, got {version}")
        if table_type not in set(TableType):
            raise ValueError(f"table_type must be one of {', '.join(TableType)}, got {table_type!r}")
        self.path = os.path.abspath(path)
        self.name, self.version, self.seed = name, version, seed
        self.table_type = TableType(table_type)
        self.partitions: tuple[str, ...] = tuple(partitions) or ("",)
        field = partition_field or layout.hive_field(partitions)
        self.schema = data.RowSchema(name, record_key, field, precombine)
        self.rows_per_file, self.file_bytes, self.tiny = rows_per_file, file_bytes, tiny
        self.files = TableFiles(self.path, version=version, start=start, step=step)
        self._groups: dict[str, list[Group]] = {p: [] for p in self.partitions}
        self._next_record, self._next_group = 1, 0
        self._buckets: dict[str, int] | None = {} if bucket_index else None
        self._completed: set[InstantTime] = set()
        self._failed: list[SyntheticFile] = []
        properties = layout.table_properties(
            name=name, table_type=self.table_type, version=version, record_key=record_key,
            partition_field=field, ordering_field=precombine, hive_style=layout.is_hive_style(partitions),
            create_schema=self.schema.avro_json(with_meta=False),
        )
        if (metadata_indexes or expression_indexes) and not metadata_table:
            raise ValueError("metadata_indexes and expression_indexes need metadata_table=True")
        stats_columns = (*STATS_META_COLUMNS, *(n for n, _ in self.schema.data_fields if n != data.NOTE))
        self.metadata_table = (
            SyntheticMetadataTable(self.path, table_name=name, version=version, step=step,
                                   indexes=metadata_indexes, stats_columns=stats_columns,
                                   expressions=expression_indexes)
            if metadata_table else None
        )
        if self.metadata_table is not None:
            names = {"files", *metadata_indexes, *(e.name for e in expression_indexes)}
            properties["hoodie.table.metadata.partitions"] = ",".join(sorted(names))
            if ("column_stats" in metadata_indexes or expression_indexes) and version >= 8:
                properties["hoodie.table.index.defs.path"] = INDEX_DEFS_PATH
        self.files.create(properties)
        self._mdt_created = False

    # ----------------------------------------------------------------------------------- writes

    def commit(
        self,
        *,
        writes: Mapping[str, int] | int = 0,
        updates: Updates = None,
        at: datetime | None = None,
        rows: int | None = None,
        file_bytes: int | None = None,
    ) -> InstantTime:
        """A completed write: a `commit` (COW) or `deltacommit` (MOR).

        Args:
            writes: new file groups, `{partition: count}` or one count for every partition.
            updates: file groups whose every record is updated: a new base file (COW) or a log
                file on the latest slice (MOR). Operation type is UPSERT with updates, else INSERT.
            at: the instant's wall-clock time instead of the next step.
            rows, file_bytes: override `rows_per_file` and `file_bytes` for the new groups.

        Returns:
            The instant time.
        """
        return self._write(writes, updates, at, rows, file_bytes, complete=True)

    def inflight_commit(
        self,
        *,
        writes: Mapping[str, int] | int = 0,
        updates: Updates = None,
        at: datetime | None = None,
        rows: int | None = None,
        file_bytes: int | None = None,
    ) -> InstantTime:
        """A failed write: requested and inflight instants and all its data files, never completed.

        Readers ignore its files; Hudi would roll it back. MOR tables accept only `writes` here.
        """
        if updates and self.table_type is TableType.MERGE_ON_READ:
            raise ValueError("inflight_commit with updates is not modelled for MERGE_ON_READ (log files)")
        return self._write(writes, updates, at, rows, file_bytes, complete=False)

    def insert_overwrite(
        self,
        partition: str | Sequence[str],
        *,
        groups: int = 1,
        at: datetime | None = None,
        rows: int | None = None,
        file_bytes: int | None = None,
    ) -> InstantTime:
        """A `replacecommit` (INSERT_OVERWRITE) replacing every live group of the partitions with
        `groups` new ones each. The replaced groups' files stay on disk until a clean."""
        parts = [partition] if isinstance(partition, str) else list(partition)
        return self._replace(parts, "INSERT_OVERWRITE", groups, at, rows, file_bytes)

    def delete_partition(self, partition: str | Sequence[str], *, at: datetime | None = None) -> InstantTime:
        """A `replacecommit` (DELETE_PARTITION) replacing every live group of the partitions; no new files."""
        parts = [partition] if isinstance(partition, str) else list(partition)
        return self._replace(parts, "DELETE_PARTITION", 0, at, None, None)

    def clustering(
        self,
        partition: str,
        file_ids: Sequence[str] | None = None,
        *,
        pending: bool = False,
        at: datetime | None = None,
    ) -> InstantTime:
        """Clustering of `file_ids` (default: every live group of `partition`) into one new group.

        Layout 1 plans it in `<t>.replacecommit.requested`, layout 2 in `<t>.clustering.requested`;
        both complete as a `replacecommit` (operation CLUSTER). `pending=True` stops after the plan,
        which keeps the input groups out of cleaning and updates.
        """
        inputs = self._select(partition, file_ids)
        t = self.files.tick(at)
        action = Action.REPLACE_COMMIT if self.files.layout == 1 else Action.CLUSTERING
        plan = ClusteringGroup(tuple(clustering_slice(g) for g in inputs))
        request = RequestedReplace(CLUSTER, (plan,), strategy_class=CLUSTERING_STRATEGY)
        self.files.instant(t, action, State.REQUESTED, encode_requested_replace(request, base_path=self.path))
        if pending:
            for group in inputs:
                group.pending = Action.CLUSTERING
            return t
        self.files.instant(t, action, State.INFLIGHT)
        writes = WriteSet(self, t)
        writes.merge(partition, inputs)
        self._finish(t, Action.REPLACE_COMMIT, "CLUSTER", writes, replaced={partition: inputs})
        return t

    def compaction(
        self,
        file_ids: Mapping[str, Sequence[str]] | None = None,
        *,
        pending: bool = False,
        at: datetime | None = None,
    ) -> InstantTime:
        """A MERGE_ON_READ compaction of the latest slices of `file_ids` (default: every live group
        whose latest slice has log files) into new base files.

        Writes `<t>.compaction.requested` (the Avro plan), then `<t>.compaction.inflight` and the
        completing `commit` (operation COMPACT, `compacted: true`) unless `pending`.
        """
        if self.table_type is not TableType.MERGE_ON_READ:
            raise ValueError("compaction needs a MERGE_ON_READ table")
        chosen = self._compaction_inputs(file_ids)
        t = self.files.tick(at)
        operations = [compaction_operation(g) for groups in chosen.values() for g in groups]
        self.files.instant(t, Action.COMPACTION, State.REQUESTED, layout.compaction_plan(operations))
        if pending:
            for group in (g for groups in chosen.values() for g in groups):
                group.pending = Action.COMPACTION
            return t
        self.files.instant(t, Action.COMPACTION, State.INFLIGHT)
        writes = WriteSet(self, t)
        for groups in chosen.values():
            writes.compact(groups)
        self._finish(t, Action.COMMIT, "COMPACT", writes, compacted=True)
        return t

    def pending_compaction(
        self, file_ids: Mapping[str, Sequence[str]] | None = None, *, at: datetime | None = None
    ) -> InstantTime:
        """`compaction(..., pending=True)`: only the requested plan."""
        return self.compaction(file_ids, pending=True, at=at)

    def savepoint(self, instant: str, *, at: datetime | None = None) -> InstantTime:
        """A completed savepoint of the completed write `instant`.

        Lists, per partition, the files of the latest slice of every group as of `instant`; Hudi's
        cleaner never deletes them. The savepoint instant file carries `instant`'s own time; layout
        2 names it `<instant>_<completion>.savepoint`, the completion being the next clock tick.
        """
        target = InstantTime(instant)
        if target not in self._completed:
            raise ValueError(f"savepoint target {instant} is not a completed write instant of {self.name}")
        when = self.files.tick(at)
        files: dict[str, tuple[str, ...]] = {}
        for piece in expected_slices(self._all_groups(), as_of=target):
            files[piece.partition] = files.get(piece.partition, ()) + piece.file_names
        meta = SavepointMetadata(
            savepointed_by="runner-synthetic", savepointed_at_ms=data.epoch_millis(when),
            comments=f"savepoint of {instant}", partition_files=files,
        )
        payload = encode_savepoint_metadata(meta)
        self.files.instant(target, Action.SAVEPOINT, State.INFLIGHT)
        self.files.instant(target, Action.SAVEPOINT, State.COMPLETED, payload, completed=when)
        return target

    # ------------------------------------------------------------------------------------ views

    def file_ids(self, partition: str = "") -> list[str]:
        """Live (committed, not replaced) file groups of `partition`, oldest first."""
        return [g.file_id for g in self._groups[partition] if g.is_live]

    def latest_slices(self, as_of: str | None = None) -> list[ExpectedSlice]:
        """The file slices a reader must list, latest or as of an instant."""
        return expected_slices(self._all_groups(), None if as_of is None else InstantTime(as_of))

    def expected_rows(self, as_of: str | None = None) -> pa.Table:
        """The rows a snapshot (or time-travel) query must return, with meta columns, sorted by key."""
        when = None if as_of is None else InstantTime(as_of)
        return expected_rows(self._all_groups(), self.schema.arrow, self.schema.record_key, when)

    @property
    def failed_files(self) -> tuple[SyntheticFile, ...]:
        """Data files of writes that never completed."""
        return tuple(self._failed)

    @property
    def completed_instants(self) -> list[InstantTime]:
        """Completed write instants (commit, deltacommit, replacecommit), oldest first."""
        return sorted(self._completed)

    # --------------------------------------------------------------------------------- internals

    def _write(
        self,
        writes: Mapping[str, int] | int,
        updates: Updates,
        at: datetime | None,
        rows: int | None,
        file_bytes: int | None,
        *,
        complete: bool,
    ) -> InstantTime:
        targets = self._update_targets(updates)
        action = Action.COMMIT if self.table_type is TableType.COPY_ON_WRITE else Action.DELTA_COMMIT
        operation = "UPSERT" if targets else "INSERT"
        t, batch = self._begin(at, action, operation, self._insert_counts(writes), targets, rows, file_bytes)
        if complete:
            self._finish(t, action, operation, batch)
        else:
            self._failed.extend(w.file for w in batch.writes)
        return t

    def _replace(
        self,
        parts: list[str],
        operation: str,
        groups: int,
        at: datetime | None,
        rows: int | None,
        file_bytes: int | None,
    ) -> InstantTime:
        for p in parts:
            self._check_partition(p)
        replaced = {p: [g for g in self._groups[p] if g.is_live] for p in parts}
        inserts = {p: groups for p in parts if groups}
        requested = encode_requested_replace(RequestedReplace(None, None), base_path=self.path)
        t, batch = self._begin(at, Action.REPLACE_COMMIT, operation, inserts, {}, rows, file_bytes, requested)
        self._finish(t, Action.REPLACE_COMMIT, operation, batch, replaced=replaced)
        return t

    def _begin(
        self,
        at: datetime | None,
        action: Action,
        operation: str,
        inserts: dict[str, int],
        targets: dict[str, list[Group]],
        rows: int | None,
        file_bytes: int | None,
        requested: bytes = b"",
    ) -> tuple[InstantTime, WriteSet]:
        """Start a write: requested and inflight instant files, then every data file."""
        t = self.files.tick(at)
        if self.metadata_table is not None and not self._mdt_created:
            self.metadata_table.create(t)  # Hudi creates the metadata table as the first write starts
            self._mdt_created = True
        per_file = rows or self.rows_per_file
        self.files.instant(t, action, State.REQUESTED, requested)
        profile = self._workload(workload(inserts, targets, per_file), operation)
        self.files.instant(t, action, State.INFLIGHT, profile)
        batch = WriteSet(self, t)
        for partition, count in inserts.items():
            batch.insert(partition, count, per_file, file_bytes or self.file_bytes)
        for groups in targets.values():
            batch.update(groups, log=self.table_type is TableType.MERGE_ON_READ)
        return t, batch

    def _finish(
        self,
        t: InstantTime,
        action: Action,
        operation: str,
        batch: WriteSet,
        *,
        replaced: Mapping[str, Sequence[Group]] | None = None,
        compacted: bool = False,
    ) -> None:
        """Write the completed instant with its metadata, then record the writes as committed."""
        replaced_ids = {p: tuple(g.file_id for g in gs) for p, gs in (replaced or {}).items()}
        meta = CommitMetadata(
            operation_type=operation,
            partition_to_write_stats=batch.stats(),
            partition_to_replace_file_ids=replaced_ids,
            extra_metadata={"schema": self.schema.avro_json(with_meta=False)},
            compacted=compacted,
            is_replace=action is Action.REPLACE_COMMIT,
        )
        if self.metadata_table is not None:
            if not self._mdt_created:
                self.metadata_table.create(t)
                self._mdt_created = True
            self.metadata_table.record_write(t, meta.partition_to_write_stats)
        self.files.instant(t, action, State.COMPLETED, encode_commit_metadata(meta, layout=self.files.layout))
        self._completed.add(t)
        batch.commit()
        for groups in (replaced or {}).values():
            for group in groups:
                group.replaced_at, group.pending = t, None

    def _workload(self, stats: dict[str, tuple[WriteStat, ...]], operation: str) -> bytes:
        """The inflight file: Hudi's workload profile (counts per partition, no paths), or nothing
        in tiny mode, where encoding it would double the timeline cost; Hudi reads an empty
        inflight file as empty metadata."""
        if self.tiny:
            return b""
        meta = CommitMetadata(operation_type=operation, partition_to_write_stats=stats)
        return encode_commit_metadata(meta, layout=self.files.layout)

    def _insert_counts(self, writes: Mapping[str, int] | int) -> dict[str, int]:
        counts = {p: writes for p in self.partitions} if isinstance(writes, int) else dict(writes)
        for partition in counts:
            self._check_partition(partition)
        return {p: n for p, n in counts.items() if n > 0}

    def _update_targets(self, updates: Updates) -> dict[str, list[Group]]:
        if not updates:
            return {}
        chosen = {p: updates for p in self.partitions} if isinstance(updates, int) else dict(updates)
        targets = {}
        for partition, selection in chosen.items():
            if isinstance(selection, int):
                groups = [g for g in self._groups[partition] if g.is_live and g.pending is None][:selection]
            else:
                groups = self._select(partition, selection)
            if groups:
                targets[partition] = groups
        return targets

    def _select(self, partition: str, file_ids: Iterable[str] | None) -> list[Group]:
        """Live groups of `partition` by id, or all outside a pending plan; refuses pending ones by id."""
        self._check_partition(partition)
        live = {g.file_id: g for g in self._groups[partition] if g.is_live}
        if file_ids is None:
            return [g for g in live.values() if g.pending is None]
        groups = []
        for fid in file_ids:
            if fid not in live:
                raise ValueError(f"{fid} is not a live file group of partition {partition!r} in {self.name}")
            if live[fid].pending:
                raise ValueError(
                    f"file group {fid} is part of a pending {live[fid].pending}; Hudi would refuse the write"
                )
            groups.append(live[fid])
        return groups

    def _compaction_inputs(self, file_ids: Mapping[str, Sequence[str]] | None) -> dict[str, list[Group]]:
        if file_ids is not None:
            return {p: self._select(p, ids) for p, ids in file_ids.items()}
        chosen = {p: [g for g in self._select(p, None) if g.slices[-1].logs] for p in self.partitions}
        return {p: gs for p, gs in chosen.items() if gs}

    def _check_partition(self, partition: str) -> None:
        if partition not in self._groups:
            raise ValueError(
                f"partition {partition!r} is not one of {self.name}'s partitions {list(self.partitions)}"
            )

    def _all_groups(self) -> list[Group]:
        return [g for groups in self._groups.values() for g in groups]

    # ------------------------------------------------------- used by WriteSet (writes.py)

    def new_group(self, partition: str, t: InstantTime) -> Group:
        self._next_group += 1
        file_id = layout.file_id(self.name, self.seed, self._next_group)
        if self._buckets is not None:
            bucket = self._buckets[partition] = self._buckets.get(partition, -1) + 1
            file_id = layout.bucket_file_id(bucket, file_id)
        return Group(partition, file_id, t)

    def add_group(self, group: Group) -> None:
        self._groups[group.partition].append(group)

    def next_records(self, count: int) -> range:
        first = self._next_record
        self._next_record += count
        return range(first, first + count)
