"""The task of a resize: rewrite one clustering group's base files as one new base file. The same
function runs as a Spark task or on a thread of the driver (`runner.execute.resize_engine`).

What Hudi's clustering writes, and so what this writes (checked against a Hudi 1.1 clustering in
the `v9_txns_simple_nometa` fixture and `HoodieRowCreateHandle`):
- the rows of every input file, in input order, with the meta columns preserved
  (`preserveHoodieMetadata`, default of `hoodie.clustering.preserve.commit.metadata` since 0.11):
  `_hoodie_commit_time`, `_hoodie_commit_seqno`, `_hoodie_record_key` and `_hoodie_partition_path`
  keep their values, so incremental queries still see each row at the commit that wrote it; only
  `_hoodie_file_name` becomes the new file's name. A table written with
  `hoodie.populate.meta.fields=false` (virtual keys) keeps every meta column as the input has it,
  `_hoodie_file_name` included (the input file's name, as Hudi's create and merge handles and
  `runner.write` write it; null or absent from Hudi's row writer): Hudi's
  clustering writes such rows as they are (`HoodieRowCreateHandle.writeRowNoMetaFields`);
  some such tables (`v9_txns_simple_nometa`) have no meta columns at all, and are copied as they are;
- the footer keys `hoodie_min_record_key` / `hoodie_max_record_key`, which Hudi's bloom index
  requires to prune files by key range, and Hudi's bloom filter of the file's record keys
  (`org.apache.hudi.bloomfilter`, DYNAMIC_V0), which a writer using the BLOOM or GLOBAL_BLOOM
  index reads for every candidate file; all from `runner.hudi.footer`, with the range in Java's
  string order as the bloom index compares it. The new file holds exactly its inputs' keys, so the
  filter is the inputs' filters merged when they qualify (as Hudi's binary-copy clustering merges
  them; every key stays a member, `runner.hudi.bloom_merge`) and built from the keys otherwise.

Columns keep the Parquet physical types Arrow reads them as: decimals stay fixed-length, list
elements keep their names (`array` for parquet-avro's legacy lists), INT96 timestamps stay INT96,
and the codec is the input's. Files whose schemas differ (schema evolution) are unified with Arrow's
permissive promotion, newest file first, so the newest column order wins and missing columns are
null.

The rewrite streams: the inputs' footers fix the schema and codec first, then the rows pass through
in batches and are encoded in row groups of at most `ROW_GROUP_BUFFER_BYTES` decoded bytes, so a
task's memory does not grow with its group (only the record keys are kept to the end, for the key
range and the bloom filter check). The file is created with `Storage.create_new`: on local storage
it is written to a hidden temporary file beside its final name and linked into place when
complete, so a crash leaves only that temporary file, which the resize's leftover reconciliation
deletes (`runner.execute.resize`). On S3 `create_new` streams a multipart upload completed only if
the key is absent.

Decoding and encoding are nearly all of a task's time, so the rewrite decodes only what it writes:
the inputs' `_hoodie_file_name` is not read when every value is replaced (a table with meta
fields), and string columns whose inputs hold small dictionaries (`dictionary_columns`) are read
as Arrow dictionaries and written from one dictionary per row group, so their values are neither
materialised nor hashed again. The file is the same to a reader: same Parquet types, values,
statistics and dictionary encoding.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from runner import arrow_allocator
from runner.failpoints import failpoint
from runner.hudi import bloom_merge, footer, parquet_dictionary
from runner.hudi.files import BaseFile, relative_path, write_token
from runner.hudi.instant import InstantTime
from runner.hudi.parquet_deflate import TableWriter, parquet_writer
from runner.storage import Storage

FILE_NAME_COLUMN = "_hoodie_file_name"
RECORD_KEY_COLUMN = "_hoodie_record_key"

# Hudi's `hoodie.parquet.block.size`: a row group holds at most about this many bytes.
ROW_GROUP_BYTES = 120 * 1024 * 1024
# Rows decoded at a time from an input (pyarrow's own default batch size).
BATCH_ROWS = 64 * 1024
# Decoded (Arrow) bytes held before they are encoded as one row group. With the batch being
# decoded, one input's footer and the group's record keys, this is what a task holds, however large
# its group. The trade-off, measured on a 128 MiB group (bench/README.md, "resize: streaming"):
# row groups of about 40 MiB compressed instead of up to Hudi's 120 MiB, files about 1 % larger
# (each row group restarts its dictionaries) for about half the memory of unbounded row groups;
# 64 MiB would cost 4-5 % in size, 32 MiB 10 %.
ROW_GROUP_BUFFER_BYTES = 128 * 1024 * 1024
# Decode on the task's own thread: Spark already runs one task per core, and pyarrow's pool would
# put a second decoding thread on each core (bench/README.md, "resize: streaming").
DECODE_WITH_THREADS = False
# A string or binary column whose chunks, over all of a group's inputs, hold at most this many
# uncompressed bytes (dictionary page and indices) is decoded as an Arrow dictionary and written from
# it: no value is materialised and hashed again. The sum bounds the union of the inputs'
# dictionaries, so a row group's unified dictionary stays within the 1 MiB dictionary page at
# which Parquet writers fall back to plain pages (pyarrow's `dictionary_pagesize_limit`,
# parquet-mr's `parquet.dictionary.page.size`); the writer writes an Arrow dictionary as it is,
# whatever its size (bench/README.md, "resize: the rewrite's decode").
SMALL_DICTIONARY_BYTES = 1024 * 1024

# Arrow's allocator for the rewrite, in order of preference, when the process still has Arrow's
# default (mimalloc) and the environment chose none (`ARROW_DEFAULT_MEMORY_POOL`, which the `runner`
# command sets before pyarrow loads; see `runner.arrow_allocator` for why).
REWRITE_ALLOCATORS = ("jemalloc", "system")

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
        meta_fields: the table's `hoodie.populate.meta.fields`; when false, `_hoodie_file_name`
            keeps the inputs' values (each input file's own name, or null from Hudi's row writer) like
            the other meta columns, instead of taking the new file's name.
    """

    partition: str
    file_id: str
    inputs: tuple[str, ...]
    binary_copy: bool = False
    meta_fields: bool = True


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
    the executor, where it is always present; the driver engine gives its threads their own tokens.
    """
    try:
        from pyspark import TaskContext
    except ImportError:
        return write_token(0, 0, 0)
    ctx = TaskContext.get()
    return write_token(0, 0, 0) if ctx is None else write_token(ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId())


class RewriteTask:
    """Picklable task, run by Spark or on the driver's threads: rewrites each group it is given and
    reports the new files.

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


def rewrite_group(storage: Storage, group: GroupRewrite, instant: str, token: str, *,
                  batch_rows: int = BATCH_ROWS, buffer_bytes: int = ROW_GROUP_BUFFER_BYTES) -> RewrittenFile:
    """Stream a group's input files, newest first, into the one new base file (`create_new`).

    Memory stays bounded whatever the group's size: inputs are decoded `batch_rows` rows at a time,
    at most `buffer_bytes` of decoded rows wait to be encoded as one row group, and only the record
    keys of the whole group are kept (for the key range and the check of the merged bloom filter,
    or its rebuild; the footer is written when the file is closed). Locally the file is written to
    a hidden temporary name and published only when complete; on S3 `create_new` streams it as a
    multipart upload.
    """
    started = time.monotonic()
    use_rewrite_allocator()
    inputs = _newest_first(group.inputs)
    sources = [_read_source(storage, path) for path in inputs]
    name = BaseFile(group.file_id, token, InstantTime(instant), "parquet").name
    path = relative_path(group.partition, name)
    schema = merged_schema([s.schema for s in sources])
    new_name = name if group.meta_fields else None
    written = _written_schema(schema, dictionary_columns(schema, sources), file_name=new_name is not None)
    input_bytes = sum(s.size for s in sources)
    total_rows = sum(s.metadata.num_rows for s in sources)
    # Hudi's block size caps a row group's rows (estimated from the inputs' bytes per row); the
    # decoded buffer caps it too, and for typical rows (about 3 decoded bytes per stored byte) it is
    # the tighter bound.
    max_rows = max(1, ROW_GROUP_BYTES // max(1, input_bytes // max(1, total_rows)))
    keys: list[pa.ChunkedArray] = []
    parts = (part for source_path, source in zip(inputs, sources, strict=True)
             for part in _batches(storage, source_path, source.metadata, written, new_name, batch_rows))
    head = _first_page(parts)
    with storage.create_new(path) as out:
        with _open_writer(out, written, sources, _dictionary_choice(head, written)) as writer:
            row_groups = _RowGroups(writer, max_rows=max_rows, max_bytes=buffer_bytes)
            for part in itertools.chain(head, parts):
                if RECORD_KEY_COLUMN in part.column_names:
                    keys.append(part.column(RECORD_KEY_COLUMN))
                row_groups.add(part)
            row_groups.flush()
            entries = _footer(keys, schema, sources, inputs)
            if entries:
                writer.add_key_value_metadata(entries)
        size = out.tell()
    return RewrittenFile(
        partition=group.partition,
        file_id=group.file_id,
        path=path,
        records=row_groups.rows,
        size=size,
        input_files=len(inputs),
        input_bytes=input_bytes,
        create_ms=int((time.monotonic() - started) * 1000),
    )


_allocator_lock = threading.Lock()
_allocator_chosen = False


def use_rewrite_allocator() -> None:
    """Make the first of `REWRITE_ALLOCATORS` this pyarrow has the process's default memory pool,
    once per process, unless the environment or the process chose one: the pool is pyarrow's
    process-wide default (a Parquet reader takes no pool of its own), so the Spark task and the
    driver's threads alike get it, and so does what the process does with pyarrow afterwards."""
    global _allocator_chosen
    with _allocator_lock:
        if _allocator_chosen:
            return
        _allocator_chosen = True
        if os.environ.get(arrow_allocator.ENVIRONMENT_KEY) or pa.default_memory_pool().backend_name != "mimalloc":
            return
        supported = pa.supported_memory_backends()
        for name in REWRITE_ALLOCATORS:
            if name in supported:
                pa.set_memory_pool(pa.jemalloc_memory_pool() if name == "jemalloc" else pa.system_memory_pool())
                return


@dataclass(frozen=True, slots=True)
class _Source:
    """What the footer of one input says: read before any row, to fix the output's schema and codec."""

    metadata: pq.FileMetaData
    schema: pa.Schema
    size: int


def _read_source(storage: Storage, path: str) -> _Source:
    try:
        with storage.open_input(path) as f:
            parquet = pq.ParquetFile(f)
            size = f.seek(0, os.SEEK_END)
            return _Source(parquet.metadata, parquet.schema_arrow.remove_metadata(), size)
    except Exception as error:  # the error keeps its type; the resize's message names the file
        error.add_note(f"reading the footer of {path}")
        raise


def _batches(storage: Storage, path: str, metadata: pq.FileMetaData, schema: pa.Schema, name: str | None,
             batch_rows: int) -> Iterator[pa.Table]:
    """The rows of one input, `batch_rows` at a time, in the written schema `schema` and with the new
    file name `name`. The footer read first (`_read_source`) is passed in rather than parsed a second
    time (with Hudi's bloom filter it is about 0.4 MB). The input's own `_hoodie_file_name` is not
    decoded when every value is replaced; with `name` None (a table without meta fields) it is read
    and kept like any other column."""
    replaced = frozenset({FILE_NAME_COLUMN}) if name is not None else frozenset()
    dictionaries = [f.name for f in schema if pa.types.is_dictionary(f.type) and f.name not in replaced]
    with storage.open_input(path) as f:
        # No pre-buffering: with it each column chunk is read on Arrow's I/O thread, which must take
        # the GIL to call the Python file while this thread waits; the other group's thread holds
        # the GIL often, so each read was two thread hand-overs (bench/README.md, "resize: the
        # rewrite's GIL waits"). Read here, a chunk is one call on this thread.
        parquet = pq.ParquetFile(f, metadata=metadata, read_dictionary=dictionaries or None, pre_buffer=False)
        columns = [n for n in parquet.schema_arrow.names if n not in replaced]
        read = schema
        if replaced and FILE_NAME_COLUMN in schema.names:
            read = schema.remove(schema.get_field_index(FILE_NAME_COLUMN))
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns, use_threads=DECODE_WITH_THREADS):
            part = pa.Table.from_batches([batch]).replace_schema_metadata(None)
            if not part.schema.equals(read):
                part = _conform(part, read)
            yield part if name is None else _with_file_name(part, schema, name)


class _RowGroups:
    """Collects decoded rows and writes them as one row group once either bound is reached."""

    def __init__(self, writer: TableWriter, *, max_rows: int, max_bytes: int) -> None:
        self.writer = writer
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.rows = 0

    def add(self, part: pa.Table) -> None:
        while part.num_rows:
            room = self.max_rows - self.pending_rows
            piece = part.slice(0, room) if part.num_rows > room else part
            part = part.slice(piece.num_rows)
            self.pending.append(piece)
            self.pending_rows += piece.num_rows
            self.pending_bytes += piece.nbytes
            if self.pending_rows >= self.max_rows or self.pending_bytes >= self.max_bytes:
                self.flush()

    def flush(self) -> None:
        if not self.pending_rows:
            return
        rows = pa.concat_tables(self.pending)
        if any(pa.types.is_dictionary(t) for t in rows.schema.types):
            # One dictionary for the whole row group: the writer then writes it once and the
            # indices as they are; with a different dictionary per input it would fall back to plain.
            rows = rows.unify_dictionaries()
        # One `write_table` call is one row group (or more, were it above `row_group_size`).
        self.writer.write_table(rows, row_group_size=self.pending_rows)
        self.rows += self.pending_rows
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0
        failpoint("mid_rewrite")


def _newest_first(paths: Sequence[str]) -> list[str]:
    def instant(path: str) -> str:
        base = BaseFile.parse(path.rsplit("/", 1)[-1])
        return base.instant_time.normalized if base else ""

    return sorted(paths, key=lambda p: (instant(p), p), reverse=True)


def merged_schema(schemas: Sequence[pa.Schema]) -> pa.Schema:
    """The schema of the merged rows: the first (newest) file's, unified with the others' when they
    differ (schema evolution).

    Raises:
        pyarrow.ArrowInvalid: two files disagree on a column's type in a way Arrow cannot promote.
    """
    plain = [s.remove_metadata() for s in schemas]
    target = plain[0]
    if any(not s.equals(target) for s in plain[1:]):
        target = pa.unify_schemas(plain, promote_options="permissive")
    return target


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            columns.append(column if column.type.equals(field.type) else column.cast(field.type))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _with_file_name(table: pa.Table, schema: pa.Schema, name: str) -> pa.Table:
    """`table` (the input's columns but the file name) with `_hoodie_file_name` where `schema` has it."""
    index = schema.get_field_index(FILE_NAME_COLUMN)
    if index < 0:
        return table
    field = schema.field(index)
    # One dictionary entry and all-zero indices: Parquet stores it as the same String column (the
    # writer dictionary-encodes it anyway), without building a million Python strings first.
    zeros = pa.Array.from_buffers(pa.int32(), table.num_rows, [None, pa.py_buffer(bytes(4 * table.num_rows))])
    column = pa.DictionaryArray.from_arrays(zeros, pa.array([name], type=field.type.value_type))
    return table.add_column(index, field, column)


def dictionary_columns(schema: pa.Schema, sources: Sequence[_Source]) -> frozenset[str]:
    """Top-level string and binary columns to decode as Arrow dictionaries: every input stores them
    with the same type, dictionary-encoded in every row group, and their chunks are small in total
    (`SMALL_DICTIONARY_BYTES`, uncompressed), so the row groups' unified dictionaries stay small.

    The record key is left out: the footer reads it as plain strings; so is the file name, which is
    not decoded (or, without meta fields, is kept as the inputs have it).
    """
    candidates = {
        f.name for f in schema
        if f.name not in (RECORD_KEY_COLUMN, FILE_NAME_COLUMN)
        and (pa.types.is_string(f.type) or pa.types.is_binary(f.type))
    }
    budget = dict.fromkeys(candidates, SMALL_DICTIONARY_BYTES)
    for source in sources:
        for name in list(budget):
            if name not in source.schema.names or not source.schema.field(name).type.equals(schema.field(name).type):
                del budget[name]
        leaves = {source.metadata.schema.column(i).path: i for i in range(source.metadata.num_columns)}
        for rg in range(source.metadata.num_row_groups):
            group = source.metadata.row_group(rg)
            for name in list(budget):
                leaf = leaves.get(name)
                chunk = None if leaf is None else group.column(leaf)
                if chunk is None or not chunk.has_dictionary_page or not chunk.dictionary_page_offset:
                    del budget[name]
                    continue
                budget[name] -= chunk.total_uncompressed_size
                if budget[name] < 0:
                    del budget[name]
    return frozenset(budget)


def _written_schema(schema: pa.Schema, dictionaries: frozenset[str], *, file_name: bool = True) -> pa.Schema:
    """`schema` as the writer is given it: the file-name column (when `file_name`: it gets the new
    file's name) and `dictionaries` typed as Arrow dictionaries of their values (Parquet stores them
    as the same string or binary columns)."""
    for index, field in enumerate(schema):
        if (file_name and field.name == FILE_NAME_COLUMN) or field.name in dictionaries:
            schema = schema.set(index, pa.field(field.name, pa.dictionary(pa.int32(), field.type), field.nullable))
    return schema


def _footer(keys: Sequence[pa.ChunkedArray], schema: pa.Schema, sources: Sequence[_Source],
            paths: Sequence[str]) -> dict[str, str]:
    """Hudi's record-key footer for the new file, from its record keys (`runner.hudi.footer`).

    A Hudi writer using the BLOOM index reads the filter of every candidate file without a null
    check, so a rewritten file must carry one. The new file holds exactly its inputs' keys, so the
    inputs' filters are merged when they qualify, as binary copy does (no key hashed again; every
    key stays a member), and the filter is built from the keys otherwise. A table without meta
    columns (`hoodie.populate.meta.fields=false`) has no key column, or one that Hudi left null, and
    no key footer: the new range then covers the inputs' ranges when every input records one.
    """
    if RECORD_KEY_COLUMN in schema.names and any(len(k) > k.null_count for k in keys):
        field = schema.field(RECORD_KEY_COLUMN)
        filters = [_input_filter(path, s.metadata) for path, s in zip(paths, sources, strict=True)]
        all_keys = pa.chunked_array([c for k in keys for c in k.chunks], field.type)
        return footer.merged_record_key_footer(filters, all_keys)[0]
    ranges = [footer.range_of(s.metadata.metadata) for s in sources]
    known = [r for r in ranges if r is not None]
    return footer.range_footer(footer.merged_range(known) if len(known) == len(ranges) else None)


def _input_filter(path: str, metadata: pq.FileMetaData) -> bloom_merge.InputFilter:
    """An input's filter whose Base64 value is read again from its footer when the merge needs it:
    pyarrow gives the key-value footer only as a new dict of copies, and holding every input's
    value (431 KB each in the bench's files) until the merge took fresh pages for each."""
    found = footer.input_filter(path, metadata.metadata, metadata.num_rows)
    if found.value is None:
        return found
    return replace(found, value=None, load=functools.partial(_filter_value, metadata))


def _filter_value(metadata: pq.FileMetaData) -> bytes | None:
    return (metadata.metadata or {}).get(footer.BLOOM_FILTER.encode())


def _first_page(parts: Iterator[pa.Table]) -> list[pa.Table]:
    """The first batches of `parts`, taken until they hold a page's worth of rows (parquet-mr's row
    limit of a page, `parquet_dictionary.PAGE_ROWS`) or the rows end."""
    head: list[pa.Table] = []
    rows = 0
    while rows < parquet_dictionary.PAGE_ROWS:
        part = next(parts, None)
        if part is None:
            break
        head.append(part)
        rows += part.num_rows
    return head


def _dictionary_choice(head: Sequence[pa.Table], schema: pa.Schema) -> list[str] | bool:
    """The columns written with a dictionary: Hudi's choice (parquet-mr's first-page rule, as the
    writer makes it, `runner.hudi.parquet_dictionary`) on the file's first rows, and every column decoded
    as an Arrow dictionary (its values are few by construction, `dictionary_columns`).

    Arrow's default, a dictionary on every column until it outgrows its page, hashed every value of
    the distinct columns (record key, sequence number, ids) only to fall back to plain pages in
    every row group: about an eighth of the rewrite's CPU, with files a few percent larger
    (bench/README.md, "resize: Hudi's dictionary rule"). Decided once per file, as the writer does;
    parquet-mr decides per row group, whose first pages hold rows of the same inputs' kind."""
    if not head:
        return True
    rows = pa.concat_tables(head) if len(head) > 1 else head[0]
    arrow_dictionaries = [f.name for f in schema if pa.types.is_dictionary(f.type)]
    plain_typed = rows.drop_columns(arrow_dictionaries)
    return parquet_dictionary.dictionary_columns(plain_typed, compliant_nested=False) + arrow_dictionaries


def _open_writer(out: BinaryIO, schema: pa.Schema, sources: Sequence[_Source],
                 use_dictionary: list[str] | bool) -> TableWriter:
    """A Parquet writer for the merged rows (`schema`: the written one, `_written_schema`), in the
    codec and physical types of the inputs; gzip at Hudi's level 6, deflated by libdeflate
    (`runner.hudi.parquet_deflate`)."""
    first = sources[0].metadata
    codec = first.row_group(0).column(0).compression if first.num_row_groups and first.num_columns else "SNAPPY"
    int96 = any(s.metadata.schema.column(i).physical_type == "INT96"
                for s in sources for i in range(len(s.metadata.schema)))
    return parquet_writer(
        out,
        schema,
        compression=_CODECS.get(codec, "snappy"),
        use_dictionary=use_dictionary,
        use_compliant_nested_type=False,  # keep list element names as the inputs have them
        use_deprecated_int96_timestamps=int96,
        store_schema=False,  # no ARROW:schema: the file reads like the inputs, from Parquet types only
    )
