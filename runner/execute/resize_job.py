"""The Spark task of a resize: rewrite one clustering group's base files as one new base file.

What Hudi's clustering writes, and so what this writes (checked against a Hudi 1.1 clustering in
the `v9_txns_simple_nometa` fixture and `HoodieRowCreateHandle`):
- the rows of every input file, in input order, with the meta columns preserved
  (`preserveHoodieMetadata`, default of `hoodie.clustering.preserve.commit.metadata` since 0.11):
  `_hoodie_commit_time`, `_hoodie_commit_seqno`, `_hoodie_record_key` and `_hoodie_partition_path`
  keep their values, so incremental queries still see each row at the commit that wrote it; only
  `_hoodie_file_name` becomes the new file's name. Tables written with
  `hoodie.populate.meta.fields=false` have no meta columns and are copied as they are;
- the footer keys `hoodie_min_record_key` / `hoodie_max_record_key`, which Hudi's bloom index
  requires to prune files by key range, and Hudi's bloom filter of the file's record keys
  (`org.apache.hudi.bloomfilter`, DYNAMIC_V0), which a writer using the BLOOM or GLOBAL_BLOOM
  index reads for every candidate file; all built by `runner.hudi.footer`, the builder the writer
  uses too, with the range in Java's string order as the bloom index compares it.

Columns keep the Parquet physical types Arrow reads them as: decimals stay fixed-length, list
elements keep their names (`array` for parquet-avro's legacy lists), INT96 timestamps stay INT96,
and the codec is the input's. Files whose schemas differ (schema evolution) are unified with Arrow's
permissive promotion, newest file first, so the newest column order wins and missing columns are
null.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.parquet as pq

from runner.hudi import footer
from runner.hudi.files import BaseFile, relative_path, write_token
from runner.hudi.instant import InstantTime
from runner.storage import Storage

FILE_NAME_COLUMN = "_hoodie_file_name"
RECORD_KEY_COLUMN = "_hoodie_record_key"

# Hudi's `hoodie.parquet.block.size`: rows are cut into row groups of about this many bytes.
ROW_GROUP_BYTES = 120 * 1024 * 1024

_CODECS = {"SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "LZ4": "lz4", "LZ4_RAW": "lz4",
           "BROTLI": "brotli", "UNCOMPRESSED": "none"}


@dataclass(frozen=True, slots=True)
class GroupRewrite:
    """One clustering group: its input base files become one new file group.

    Args:
        partition: the partition path, `""` for a non-partitioned table.
        file_id: the new file group's id (`<uuid>-0`); chosen by the driver, so a retried task
            attempt writes the same file group and the driver can tell its leftovers apart.
        inputs: the input base files, relative to the base path.
        binary_copy: copy the inputs' row groups when they qualify (`runner.execute.resize_copy`).
    """

    partition: str
    file_id: str
    inputs: tuple[str, ...]
    binary_copy: bool = False


@dataclass(frozen=True, slots=True)
class RewrittenFile:
    """What one task wrote: the facts the replacecommit's write stat records.

    Args:
        path: the new base file, relative to the base path.
        records: rows written (Hudi's `numWrites` and, for clustering, `numInserts`).
        size: the file's size in bytes (`totalWriteBytes` and `fileSizeInBytes`).
        input_files, input_bytes: what was read.
        create_ms: time spent (Hudi's `runtimeStats.totalCreateTime`).
        strategy: `rewrite` or `binary_copy`: how the file was made.
        fallback: why a group asked to be binary-copied was rewritten instead.
    """

    partition: str
    file_id: str
    path: str
    records: int
    size: int
    input_files: int
    input_bytes: int
    create_ms: int
    strategy: str = "rewrite"
    fallback: str | None = None


def spark_write_token() -> str:
    """Hudi's write token `<partitionId>-<stageId>-<taskAttemptId>` for the running Spark task.

    Outside a Spark task (a direct call) it is `0-0-0`. pyspark is imported here lazily, inside
    the executor, where it is always present; the driver never calls this.
    """
    try:
        from pyspark import TaskContext
    except ImportError:
        return write_token(0, 0, 0)
    ctx = TaskContext.get()
    return write_token(0, 0, 0) if ctx is None else write_token(ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId())


class RewriteTask:
    """Picklable Spark task: rewrites each group it is given and reports the new files.

    Args:
        storage: the table's storage; inputs are read and the output is created through it.
        instant: the clustering instant time; it names every file written.
        write_token: gives the write token of the running task attempt.
    """

    def __init__(self, storage: Storage, instant: str, write_token: Callable[[], str] = spark_write_token) -> None:
        self.storage = storage
        self.instant = instant
        self.write_token = write_token

    def __call__(self, groups: Iterable[GroupRewrite]) -> Iterator[RewrittenFile]:
        for group in groups:
            token = self.write_token()
            if group.binary_copy:
                from runner.execute.resize_copy import copy_group

                copied = copy_group(self.storage, group, self.instant, token)
                if not isinstance(copied, str):
                    yield copied
                    continue
                yield replace(rewrite_group(self.storage, group, self.instant, token), fallback=copied)
                continue
            yield rewrite_group(self.storage, group, self.instant, token)


def rewrite_group(storage: Storage, group: GroupRewrite, instant: str, token: str) -> RewrittenFile:
    """Read a group's input files, merge them and create the one new base file with `write_new`."""
    started = time.monotonic()
    inputs = _newest_first(group.inputs)
    raw = [storage.read(path) for path in inputs]
    files = [pq.ParquetFile(pa.BufferReader(data)) for data in raw]
    name = BaseFile(group.file_id, token, InstantTime(instant), "parquet").name
    table = _with_file_name(merge_tables([f.read() for f in files]), name)
    data = _encode(table, files, _footer(table, files), sum(len(d) for d in raw))
    path = relative_path(group.partition, name)
    storage.write_new(path, data)
    return RewrittenFile(
        partition=group.partition,
        file_id=group.file_id,
        path=path,
        records=table.num_rows,
        size=len(data),
        input_files=len(inputs),
        input_bytes=sum(len(d) for d in raw),
        create_ms=int((time.monotonic() - started) * 1000),
    )


def _newest_first(paths: Sequence[str]) -> list[str]:
    def instant(path: str) -> str:
        base = BaseFile.parse(path.rsplit("/", 1)[-1])
        return base.instant_time.normalized if base else ""

    return sorted(paths, key=lambda p: (instant(p), p), reverse=True)


def merge_tables(tables: Sequence[pa.Table]) -> pa.Table:
    """Concatenate tables, unifying their schemas when they differ (schema evolution).

    Raises:
        pyarrow.ArrowInvalid: two files disagree on a column's type in a way Arrow cannot promote.
    """
    plain = [t.replace_schema_metadata(None) for t in tables]
    target = plain[0].schema
    if any(not t.schema.equals(target) for t in plain[1:]):
        target = pa.unify_schemas([t.schema for t in plain], promote_options="permissive")
        plain = [_conform(t, target) for t in plain]
    return pa.concat_tables(plain)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            columns.append(column if column.type.equals(field.type) else column.cast(field.type))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _with_file_name(table: pa.Table, name: str) -> pa.Table:
    index = table.schema.get_field_index(FILE_NAME_COLUMN)
    if index < 0:
        return table
    field = table.schema.field(index)
    # One dictionary entry and all-zero indices: Parquet stores it as the same String column (the
    # writer dictionary-encodes it anyway), without building a million Python strings first.
    zeros = pa.Array.from_buffers(pa.int32(), table.num_rows, [None, pa.py_buffer(bytes(4 * table.num_rows))])
    column = pa.DictionaryArray.from_arrays(zeros, pa.array([name], type=field.type))
    return table.set_column(index, pa.field(field.name, column.type, field.nullable), column)


def _footer(table: pa.Table, files: Sequence[pq.ParquetFile]) -> dict[str, str]:
    """Hudi's record-key footer for the new file, from its record keys (`runner.hudi.footer`).

    A Hudi writer using the BLOOM index reads the filter of every candidate file without a null
    check, so a rewritten file must carry one. A table without meta columns
    (`hoodie.populate.meta.fields=false`) has no key column: the new range then covers the inputs'
    ranges when every input records one.
    """
    if RECORD_KEY_COLUMN in table.column_names and table.num_rows:
        return footer.record_key_footer(table.column(RECORD_KEY_COLUMN))
    ranges = [footer.range_of(f.metadata.metadata) for f in files]
    known = [r for r in ranges if r is not None]
    return footer.range_footer(footer.merged_range(known) if len(known) == len(ranges) else None)


def _encode(table: pa.Table, files: Sequence[pq.ParquetFile], entries: dict[str, str], input_bytes: int) -> bytes:
    """Write the table as one Parquet file in memory, in row groups of about `ROW_GROUP_BYTES`."""
    first = files[0].metadata
    codec = first.row_group(0).column(0).compression if first.num_row_groups and first.num_columns else "SNAPPY"
    int96 = any(f.schema.column(i).physical_type == "INT96" for f in files for i in range(len(f.schema)))
    per_row = max(1, input_bytes // max(1, table.num_rows))
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(
        sink,
        table.schema,
        compression=_CODECS.get(codec, "snappy"),
        use_compliant_nested_type=False,  # keep list element names as the inputs have them
        use_deprecated_int96_timestamps=int96,
        store_schema=False,  # no ARROW:schema: the file reads like the inputs, from Parquet types only
    ) as writer:
        writer.write_table(table, row_group_size=max(1, ROW_GROUP_BYTES // per_row))
        if entries:
            writer.add_key_value_metadata(entries)
    return bytes(sink.getvalue().to_pybytes())
