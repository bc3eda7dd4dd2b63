"""The Spark side of a write: one `mapInArrow` task writes the files of the buckets it receives.

Rows reach a task sorted by their target (the file id for upsert and insert, the partition path for
bulk insert), so each target is one consecutive run of Arrow batches. A run for an existing file
group is gathered and merged (copy-on-write); any other run streams into a create handle. The task
returns one row per file written; the driver turns those into write stats. The job itself runs
through `runner.spark_jobs.map_in_arrow`. A write small enough for the driver (`runner.writer.local`)
calls the same `WriteTask.write` there, once per target, with the task number Spark would have used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.hudi.files import BaseFile, relative_path, write_token
from runner.storage import Storage
from runner.writer.files import CreateHandle, FileContext, WrittenFile, merge, stat_rows
from runner.writer.options import GZIP, ParquetCodec
from runner.writer.schema import PARTITION_PATH, arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa

    from runner.writer.index import OldFile
    from runner.writer.virtual_keys import VirtualKeys

TARGET = "_w_fid"  # the file id column of routed rows
STATS_SCHEMA = (
    "partition string, file_id string, name string, prev_commit string, num_writes long, "
    "num_inserts long, num_update_writes long, size long, executor string"
)


@dataclass(frozen=True, slots=True)
class Target:
    """Where a run of rows goes: its partition and, for an existing file group, the base file."""

    partition: str
    base_file: BaseFile | None


@dataclass(frozen=True)
class WriteTask:
    """Picklable `mapInArrow` function writing the files of one instant.

    Args:
        storage: the table's storage.
        instant: the commit's instant time.
        spark_schema: `df.schema.jsonValue()` of the data columns.
        avro_schema: the footer's Avro schema JSON (meta fields included).
        targets: file id → target, for upsert and insert; empty for bulk insert, whose runs are
            partition paths and always open new file groups.
        max_file_size: the create handle's roll-over size.
        avg_record_size: bytes per record expected before a file has any row group.
        codec: the Parquet codec of the files written.
        keys_distinct: the rows were de-duplicated by partition and key (upsert), so a file group's
            rows, all of one partition, give each key once and a merge need not collapse them.
        virtual_keys: set for a table without meta fields (`runner.writer.virtual_keys`).
    """

    storage: Storage
    instant: str
    spark_schema: Mapping[str, object]
    avro_schema: str
    targets: Mapping[str, Target]
    max_file_size: int
    avg_record_size: int
    codec: ParquetCodec = GZIP
    keys_distinct: bool = False
    virtual_keys: VirtualKeys | None = None
    deflate_pool: bool = True

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from runner.spark_jobs import executor_id

        task = TaskContext.get()
        ids = (task.partitionId(), task.stageId(), task.taskAttemptId()) if task else (0, 0, 0)
        executor = executor_id()
        for files in self.write(batches, *ids):
            yield _stats(files, executor)

    def on_driver(self, rows: pa.Table, task_number: int,
                  old_files: Mapping[str, OldFile] | None = None) -> list[WrittenFile]:
        """Write `rows` (runs sorted as a task receives them) on the driver, as Spark task `task_number`
        of stage 0 would: its number goes into the write token and `_hoodie_commit_seqno`.
        `old_files`: base files the driver's index already read, by relative path."""
        written = self.write(iter(rows.to_batches()), task_number, 0, 0, old_files or {})
        return [f for files in written for f in files]

    def write(self, batches: Iterator[pa.RecordBatch], partition_id: int, stage_id: int,
              attempt_id: int, old_files: Mapping[str, OldFile] | None = None) -> Iterator[list[WrittenFile]]:
        """The files of each run of targets in `batches`, a run at a time."""
        import pyarrow as pa

        ctx = self._context(partition_id, stage_id, attempt_id)
        column = PARTITION_PATH if not self.targets else TARGET
        run: _Run | None = None
        for batch in batches:
            table = pa.Table.from_batches([batch])
            for key, part in runs(table, column):
                if run is None or run.key != key:
                    if run is not None:
                        yield run.finish()
                    run = self._run(ctx, key, old_files or {})
                run.add(part)
        if run is not None:
            yield run.finish()

    def _run(self, ctx: FileContext, key: str, old_files: Mapping[str, OldFile]) -> _Run:
        from runner.writer.route import new_file_id

        if not self.targets:  # bulk insert: a run is a partition path and opens a new file group
            return _Run(ctx, key, new_file_id(), Target(key, None))
        if key not in self.targets:
            raise AssertionError(f"rows routed to unknown file group {key!r}")
        target = self.targets[key]
        base = target.base_file
        return _Run(ctx, key, key, target,
                    old_files.get(relative_path(target.partition, base.name)) if base is not None else None)

    def _context(self, partition_id: int, stage_id: int, attempt_id: int) -> FileContext:
        return FileContext(
            storage=self.storage,
            instant=self.instant,
            write_token=write_token(partition_id, stage_id, attempt_id),
            partition_id=partition_id,
            schema=arrow_schema(self.spark_schema),
            avro_schema=self.avro_schema,
            max_file_size=self.max_file_size,
            avg_record_size=self.avg_record_size,
            codec=self.codec,
            keys_distinct=self.keys_distinct,
            virtual_keys=self.virtual_keys,
            deflate_pool=self.deflate_pool,
        )


class _Run:
    """The rows of one target: merged at the end for an existing group, streamed otherwise."""

    def __init__(self, ctx: FileContext, key: str, file_id: str, target: Target,
                 old_file: OldFile | None = None) -> None:
        self.ctx, self.key, self.target, self.old_file = ctx, key, target, old_file
        self._rows: list[pa.Table] = []
        self._create = None if target.base_file else CreateHandle(ctx, target.partition, file_id)

    def add(self, rows: pa.Table) -> None:
        if self._create is not None:
            self._create.write(rows)
        else:
            self._rows.append(rows)

    def finish(self) -> list[WrittenFile]:
        import pyarrow as pa

        if self._create is not None:
            return self._create.close()
        assert self.target.base_file is not None
        return [merge(self.ctx, self.target.partition, self.target.base_file, pa.concat_tables(self._rows),
                      self.old_file)]


def runs(table: pa.Table, column: str) -> Iterator[tuple[str, pa.Table]]:
    """Consecutive runs of equal values of `column`, with their rows."""
    import pyarrow.compute as pc

    encoded = pc.run_end_encode(table.column(column).combine_chunks())
    start = 0
    for end, value in zip(encoded.run_ends.to_pylist(), encoded.values.to_pylist(), strict=True):
        yield str(value), table.slice(start, end - start)
        start = end


def _stats(files: list[WrittenFile], executor: str) -> pa.RecordBatch:
    """The write stats of `files`, each tagged with the executor that wrote it."""
    import pyarrow as pa

    rows = stat_rows(files)
    return pa.RecordBatch.from_pydict({**rows, "executor": [executor] * len(files)}, schema=_stats_schema())


def _stats_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([
        ("partition", pa.string()), ("file_id", pa.string()), ("name", pa.string()),
        ("prev_commit", pa.string()), ("num_writes", pa.int64()), ("num_inserts", pa.int64()),
        ("num_update_writes", pa.int64()), ("size", pa.int64()), ("executor", pa.string()),
    ])
