"""Writing base files inside a Spark task: Hudi's create and merge handles, with pyarrow, through `Storage`.

A base file holds the five meta columns, then the data columns. Per record Hudi sets
`_hoodie_commit_time` (the writing instant), `_hoodie_commit_seqno` (`<instant>_<task partition
id>_<n>`, `n` counting the records this handle wrote), the record key, the partition path, and the
file's own name. Its footer carries the Avro schema (`parquet.avro.schema`) and the record-key
entries built by `runner.hudi.footer` (the one builder resize uses too): Hudi's bloom filter of the
keys and `hoodie_min_record_key` / `hoodie_max_record_key` in Java's string order. Parquet columns
are gzip-compressed, Hudi 0.14's default codec, at zlib's default level 6 as Hadoop's GzipCodec
uses it (pyarrow's own default, 9, is six times slower), unless the write's
`hoodie.parquet.compression.codec` option picks another (`runner.writer.options`).

- Create handle (new file group): writes the records in order; when the file reaches
  `max_file_size` it rolls over to the next file id of the same prefix (`<uuid>-1`, `-2`, ...).
- Merge handle (copy-on-write update): rewrites the group's latest base file into a new file of the
  same file id. Old records keep their meta values (only `_hoodie_file_name` changes); an old record
  whose key arrives in this write is replaced by the new one, in place, and counts as an update; the
  remaining new records follow as inserts. As in Hudi's `HoodieMergeHandle`, new records of one key
  collapse to the last one first. The old file's pages before a row group's first replaced record
  are copied as they are where they qualify (`runner.hudi.page_prefix`); the rest is encoded.

A table without meta fields (`hoodie.populate.meta.fields=false`, `runner.writer.virtual_keys`)
gets its meta columns null but `_hoodie_file_name`, and no record-key footer, as Hudi writes it;
old records' keys for the merge's match are computed from the key fields.

Before a data file is opened, its marker `.hoodie/.temp/<instant>/<partition>/<file>.marker.<CREATE|MERGE>`
is created (Hudi's direct markers, created by the write handle's constructor as Hudi's are), so a
failed write's files can always be found and removed. The file then streams to storage row group by
row group (`Storage.create_new`) and is published only when complete.
A partition gets its `.hoodie_partition_metadata` (`commitTime`, `partitionDepth`) when the first
file is written there.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from runner.errors import RefusedError
from runner.failpoints import failpoint
from runner.hudi.files import BaseFile, relative_path
from runner.hudi.footer import extended_record_key_footer, input_filter, record_key_footer
from runner.hudi.page_prefix import OldPages
from runner.hudi.parquet_copy import Source
from runner.hudi.parquet_deflate import DeflatingWriter, TableWriter, parquet_writer
from runner.hudi.parquet_dictionary import PAGE_ROWS, dictionary_columns, old_file_plain_columns
from runner.hudi.properties import format_properties
from runner.storage import AlreadyExists, Storage
from runner.writer.markers import marker_path
from runner.writer.options import GZIP, ParquetCodec
from runner.writer.schema import (
    COMMIT_SEQNO,
    FILE_NAME,
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
)
from runner.writer.virtual_keys import stored_keys

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from runner.hudi.bloom_merge import InputFilter
    from runner.hudi.page_prefix import PagePrefix
    from runner.writer.index import OldFile
    from runner.writer.virtual_keys import VirtualKeys

    _Keys: TypeAlias = pa.Array | pa.ChunkedArray  # a batch's record keys

log = logging.getLogger(__name__)

PARTITION_METADATA = ".hoodie_partition_metadata"
ROW_GROUP_ROWS = 131_072


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """What one handle wrote: the file and its counts, for the commit's write stat."""

    partition: str
    file_id: str
    name: str
    prev_commit: str | None
    num_writes: int
    num_inserts: int
    num_update_writes: int
    size: int


@dataclass(frozen=True, slots=True)
class FileContext:
    """Everything a task needs to write files of one instant.

    Args:
        storage: the table's storage.
        instant: the writing commit's instant time.
        write_token: `<task partition id>-<stage id>-<task attempt id>`.
        partition_id: the Spark task's partition id (in `_hoodie_commit_seqno`).
        schema: the file's Arrow schema (meta columns first).
        avro_schema: the `parquet.avro.schema` footer value.
        max_file_size: bytes at which a create handle rolls over.
        avg_record_size: bytes per record to expect before the first row group is written.
        codec: the Parquet codec of the files written (`hoodie.parquet.compression.codec`).
        keys_distinct: no key is given twice among a merge's new records (`WriteTask.keys_distinct`).
        virtual_keys: set for a table without meta fields (`runner.writer.virtual_keys`): its files'
            meta columns are null and carry no record-key footer; old records' keys are computed.
        deflate_pool: gzip pages may be deflated by a pool of threads; off when the caller writes
            several files side by side, which keeps the cores busy without it.
    """

    storage: Storage
    instant: str
    write_token: str
    partition_id: int
    schema: pa.Schema
    avro_schema: str
    max_file_size: int
    avg_record_size: int
    codec: ParquetCodec = GZIP
    keys_distinct: bool = False
    virtual_keys: VirtualKeys | None = None
    deflate_pool: bool = True

    def distinct_columns(self) -> frozenset[str]:
        """Columns known to hold distinct values in the files written here (`dictionary_columns`):
        the commit sequence numbers (instant, task and a counter: no two records share one) and,
        after a de-duplicated upsert, the record keys (a merge replaces the old record of each key
        given). An old file holding a key twice (only Hudi's insert makes one) keeps both; its
        group's new file then has a plain key column where parquet-mr might keep a dictionary.
        A table without meta fields has null meta columns, plain anyway."""
        if self.virtual_keys is not None:
            return frozenset()
        return frozenset({COMMIT_SEQNO, RECORD_KEY} if self.keys_distinct else {COMMIT_SEQNO})

    def file_name(self, file_id: str) -> str:
        return BaseFile(file_id, self.write_token, self.instant, "parquet").name  # type: ignore[arg-type]


def stamp(ctx: FileContext, rows: pa.Table, file_name: str | None, first_seq: int) -> pa.Table:
    """New records in file layout: meta columns for this instant and file (in a table without meta
    fields only the file name, the others null), data cast to the schema. With `file_name` None the
    file name column is left out: `_OpenFile.write` adds it to the rows it writes (a merge's rows
    carry none until then)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = rows.num_rows
    data_fields = [f for f in ctx.schema if f.name not in META_COLUMNS]
    data = rows.select([f.name for f in data_fields]).cast(pa.schema(data_fields))
    schema = ctx.schema if file_name is not None else _without_file_name(ctx.schema)
    if ctx.virtual_keys is not None:
        nulls = [pa.nulls(n, pa.string()) for name in META_COLUMNS if name != FILE_NAME]
        named = [] if file_name is None else [pa.repeat(pa.scalar(file_name), n)]
        return pa.Table.from_arrays([*nulls, *named, *data.columns], schema=schema)
    numbers = pa.array(np.arange(first_seq, first_seq + n, dtype=np.int64)).cast(pa.string())
    seq = pc.binary_join_element_wise(f"{ctx.instant}_{ctx.partition_id}", numbers, "_")
    columns = [
        pa.repeat(pa.scalar(ctx.instant), n),
        seq,
        rows.column(RECORD_KEY).cast(pa.string()),
        rows.column(PARTITION_PATH).cast(pa.string()),
    ]
    if file_name is not None:
        columns.append(pa.repeat(pa.scalar(file_name), n))
    return pa.Table.from_arrays(columns + list(data.columns), schema=schema)


def _without_file_name(schema: pa.Schema) -> pa.Schema:
    """The layout of a merge's rows until they are written: the file's, without `_hoodie_file_name`."""
    return schema.remove(schema.get_field_index(FILE_NAME))


class CreateHandle:
    """Writes new records into a new file group, rolling over to `<prefix>-<n+1>` at the size limit."""

    def __init__(self, ctx: FileContext, partition: str, file_id: str) -> None:
        self.ctx = ctx
        self.partition = partition
        prefix, _, index = file_id.rpartition("-")
        self._prefix, self._index = prefix, int(index)
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._file: _OpenFile | None = None
        self.written: list[WrittenFile] = []

    def write(self, rows: pa.Table) -> None:
        self._pending.append(rows)
        self._pending_rows += rows.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            with self._aborting():
                self._flush()

    def close(self) -> list[WrittenFile]:
        with self._aborting():
            self._flush()
            if self._file is not None:
                current, self._file = self._file, None
                self.written.append(current.close(num_inserts=current.rows, num_updates=0))
        return self.written

    @contextlib.contextmanager
    def _aborting(self) -> Iterator[None]:
        """On any error, give up the file being written (its temporary file goes, its marker stays)."""
        try:
            yield
        except BaseException:
            if self._file is not None:
                self._file.abort()
                self._file = None
            raise

    def _flush(self) -> None:
        import pyarrow as pa

        if not self._pending:
            return
        rows = pa.concat_tables(self._pending)
        self._pending, self._pending_rows = [], 0
        offset = 0
        while offset < rows.num_rows:
            current = self._open()
            take = min(rows.num_rows - offset, current.rows_that_fit())
            current.write(stamp(self.ctx, rows.slice(offset, take), current.name, current.rows))
            offset += take
            if current.size >= self.ctx.max_file_size:
                self._file = None
                self.written.append(current.close(num_inserts=current.rows, num_updates=0))
                self._index += 1

    def _open(self) -> _OpenFile:
        if self._file is None:
            file_id = f"{self._prefix}-{self._index}"
            self._file = _OpenFile(self.ctx, self.partition, file_id, prev_commit=None, io_type="CREATE")
        return self._file


def merge(ctx: FileContext, partition: str, base: BaseFile, incoming: pa.Table,
          old_file: OldFile | None = None) -> WrittenFile:
    """Rewrite `base` with `incoming` applied: the next version of its file group (see module doc).

    The old file is decoded a batch at a time: each batch's updated records are replaced in place,
    and the output is written in row groups of at most `ROW_GROUP_ROWS` rows, so decoded memory is
    bounded by a row group rather than the whole old and new file. A file of up to `ROW_GROUP_ROWS`
    rows is one row group, as before streaming. `old_file` is `base` as the driver's index already
    read it (bytes and record keys), used instead of reading the file again.
    """
    import numpy as np
    import pyarrow as pa

    newest = incoming if ctx.keys_distinct else _newest_per_key(incoming)
    new_keys = newest.column(RECORD_KEY).combine_chunks().cast(pa.string())
    match = _matcher(newest, new_keys, old_file)
    replaced = np.zeros(newest.num_rows, dtype=bool)
    # Refuses a differing schema before anything is written.
    parquet, old_batches = (_read_base(ctx, partition, base) if old_file is None
                            else _reread(ctx, partition, base, old_file))
    out = _OpenFile(ctx, partition, base.file_id, prev_commit=str(base.instant_time), io_type="MERGE")
    # The old records come first, in place and under their keys, so the old file's bloom filter
    # already holds the first keys of the new one: only the inserts need hashing.
    if ctx.virtual_keys is None:
        out.prior_filter = input_filter(relative_path(partition, base.name), parquet.metadata.metadata,
                                        parquet.metadata.num_rows)
    try:
        with _old_pages(ctx, partition, base, old_file, parquet.metadata) as old_pages:
            inserts, updates = _merge_into(ctx, out, old_batches, newest, match, replaced,
                                           _Unchanged(old_pages, parquet.metadata.num_rows) if old_pages else None,
                                           _old_plain_columns(ctx, parquet))
    except BaseException:
        out.abort()
        raise
    return out.close(num_inserts=inserts, num_updates=updates)


@contextlib.contextmanager
def _old_pages(ctx: FileContext, partition: str, base: BaseFile, old_file: OldFile | None,
               decoded: pq.FileMetaData) -> Iterator[OldPages | None]:
    """The old file's pages for the merge to copy from (a GZIP write only): the bytes the driver's
    index read, else byte ranges of the file through a reader of its own, whose footer must lay the
    file out as `decoded` does (the footer of the reader the merge's batches come from)."""
    path = relative_path(partition, base.name)
    if ctx.codec.name != GZIP.name:
        yield None
    elif old_file is not None:
        yield OldPages.of_bytes(path, old_file.data)
    else:
        with ctx.storage.open_input(path) as reader:
            size = reader.seek(0, io.SEEK_END)

            def read(start: int, length: int) -> bytes:
                reader.seek(start)
                return reader.read(length)

            pages = OldPages(Source(path, size, read))
            yield pages if pages.laid_out_as(decoded) else None


def _merge_into(ctx: FileContext, out: _OpenFile, old_batches: Iterator[tuple[pa.Table, _Keys]],
                newest: pa.Table, match: _Matcher, replaced: np.ndarray[Any, Any],
                unchanged: _Unchanged | None = None, old_plain: frozenset[str] = frozenset()) -> tuple[int, int]:
    """Write the old records with updates in place, then the inserts; (inserts, updates) written.
    The rows carry no file name until `_OpenFile.write` adds the new one (`_without_file_name`).
    `unchanged`: the old file's pages, told which old rows are replaced, for the copy of the rest.
    `old_plain`: the columns the old file wrote plain (`old_file_plain_columns`), passed on to the
    new file when no update replaces a row of its first page."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = _RowGroups(out, unchanged)
    updates = 0
    offset = 0
    for old, old_keys in old_batches:
        hit, taken = match(old_keys, offset)
        if offset == 0 and old_plain and old.num_rows >= PAGE_ROWS and not hit[:PAGE_ROWS].any():
            out.plain_columns = old_plain
        offset += old.num_rows
        if not hit.any():
            rows.add(old)
            continue
        if unchanged is not None:
            unchanged.replaced(np.flatnonzero(hit) + (offset - old.num_rows))
        replaced[taken] = True
        fresh = stamp(ctx, newest.take(pa.array(taken, pa.int64())), None, updates)
        updates += len(taken)
        # The rows before the first update go on as they are (a slice, no copy): updates often
        # hit the newest records, at the end of the file. From there, old rows keep their position
        # and an updated row's slot takes its new record instead.
        first = int(np.argmax(hit))
        rows.add(old.slice(0, first))
        tail = old.slice(first)
        positions = np.arange(tail.num_rows, dtype=np.int64)
        positions[hit[first:]] = tail.num_rows + np.arange(len(taken), dtype=np.int64)
        rows.add(pa.concat_tables([tail, fresh]).take(pa.array(positions)))
    inserts = newest.filter(pa.array(~replaced))
    if updates != int(replaced.sum()) and inserts.num_rows:
        # An old file holding a key twice (an insert without de-duplication wrote it) has two index
        # rows of it, so the tagging's join brought its record here once per row, and with
        # `keys_distinct` nothing collapsed them: the copy no old row took is that update, not an insert.
        updated = newest.filter(pa.array(replaced)).column(RECORD_KEY)
        inserts = inserts.filter(pc.invert(pc.is_in(inserts.column(RECORD_KEY), value_set=updated)))
    rows.add(stamp(ctx, inserts, None, updates))
    rows.flush_all()
    return inserts.num_rows, updates


# Given an old batch's record keys and its first row's place in the file: which of its rows an
# incoming record replaces, and those records (positions in the incoming records), in the order of
# the old rows.
_Matcher = Callable[["_Keys", int], "tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]"]


def _matcher(newest: pa.Table, new_keys: pa.Array, old_file: OldFile | None) -> _Matcher:
    """How the merge finds the old records its incoming records replace: by the rows the driver's
    tagging found for them (`index.OLD_ROW`) when it found them in this very file read, else by
    looking each old key up among the new ones."""
    import numpy as np
    import pyarrow.compute as pc

    known = _known_rows(newest, new_keys, old_file)
    if known is None:
        def by_key(old_keys: _Keys, offset: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
            found = pc.index_in(old_keys, value_set=new_keys)
            return found.is_valid().to_numpy(zero_copy_only=False), found.drop_null().to_numpy()
        return by_key
    at, records = known

    def by_row(old_keys: _Keys, offset: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        n = len(old_keys)
        first, last = np.searchsorted(at, [offset, offset + n])
        hit = np.zeros(n, dtype=bool)
        hit[at[first:last] - offset] = True
        return hit, records[first:last]
    return by_row


def _known_rows(newest: pa.Table, new_keys: pa.Array,
                old_file: OldFile | None) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """The old rows the tagging matched, ascending, and the incoming record of each; None when
    there are none to trust. They are trusted only for the file the index read (their rows count
    in `old_file.keys`), when no row is claimed twice and every claimed row holds its record's
    key, so a wrong hint costs the lookup, never a record."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from runner.writer.index import OLD_ROW

    if old_file is None or OLD_ROW not in newest.column_names:
        return None
    rows = newest.column(OLD_ROW).combine_chunks()
    records = np.flatnonzero(rows.is_valid().to_numpy(zero_copy_only=False))
    at = rows.drop_null().to_numpy()
    order = np.argsort(at, kind="stable")
    at, records = at[order], records[order]
    if not len(at):
        return at, records
    if at[0] < 0 or at[-1] >= len(old_file.keys) or bool((at[1:] == at[:-1]).any()):
        return None
    same = pc.equal(old_file.keys.take(pa.array(at)), new_keys.take(pa.array(records)))
    return (at, records) if same.null_count == 0 and pc.all(same).as_py() else None


def _old_plain_columns(ctx: FileContext, parquet: pq.ParquetFile) -> frozenset[str]:
    """The columns the old file wrote plain (`old_file_plain_columns`) that it stores in the written
    type (another width could tip the rule the other way)."""
    stored = parquet.schema_arrow
    return frozenset(name for name in old_file_plain_columns(parquet.metadata)
                     if name in ctx.schema.names and name in stored.names
                     and stored.field(name).type == ctx.schema.field(name).type)


def _newest_per_key(incoming: pa.Table) -> pa.Table:
    """One record per key, the last one given (Hudi's merge handle collapses new records of a key
    first), in the order of those last records."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = incoming.column(RECORD_KEY)
    if pc.count_distinct(keys, mode="all").as_py() == incoming.num_rows:
        return incoming  # already unique: upsert input is de-duplicated before routing
    positions = pa.table({"key": keys, "pos": pa.array(np.arange(incoming.num_rows, dtype=np.int64))})
    last = positions.group_by("key", use_threads=False).aggregate([("pos", "max")]).column("pos_max")
    return incoming.take(pa.array(np.sort(last.to_numpy()), pa.int64()))


class _Unchanged:
    """An old file's pages and which of its rows a merge replaces (in ascending order, as the merge
    goes): a new row group's first rows are copied as the old file's pages up to the first replaced
    row, or its last old row (the inserts follow), `runner.hudi.page_prefix`."""

    def __init__(self, pages: OldPages, old_rows: int) -> None:
        self.pages, self.old_rows = pages, old_rows
        self._replaced: list[np.ndarray[Any, Any]] = []

    def replaced(self, rows: np.ndarray[Any, Any]) -> None:
        self._replaced.append(rows)

    def rows_from(self, start: int, count: int) -> int:
        """How many rows from `start` (at most `count`) are old rows left as they were."""
        import numpy as np

        end = min(start + count, self.old_rows)
        for rows in self._replaced:
            at = int(np.searchsorted(rows, start))
            if at < len(rows):
                end = min(end, int(rows[at]))
                break
        return max(0, end - start)


class _RowGroups:
    """Buffers output rows and writes them in row groups of exactly `ROW_GROUP_ROWS` (the last one
    shorter), so the layout does not depend on how the input was batched."""

    def __init__(self, out: _OpenFile, unchanged: _Unchanged | None = None) -> None:
        self._out, self._unchanged = out, unchanged
        self._pending: list[pa.Table] = []
        self._rows = 0

    def add(self, rows: pa.Table) -> None:
        import pyarrow as pa

        if rows.num_rows == 0:
            return
        self._pending.append(rows)
        self._rows += rows.num_rows
        while self._rows >= ROW_GROUP_ROWS:
            buffered = pa.concat_tables(self._pending)
            self._write(buffered.slice(0, ROW_GROUP_ROWS).combine_chunks())
            rest = buffered.slice(ROW_GROUP_ROWS)
            self._pending, self._rows = [rest], rest.num_rows

    def flush_all(self) -> None:
        import pyarrow as pa

        if self._rows:
            self._write(pa.concat_tables(self._pending).combine_chunks())
        self._pending, self._rows = [], 0

    def _write(self, rows: pa.Table) -> None:
        unchanged = self._unchanged
        if unchanged is None:
            self._out.write(rows)
        else:
            self._out.write(rows, copy_from=(unchanged.pages, unchanged.rows_from(self._out.rows, rows.num_rows)))


def _read_base(ctx: FileContext, partition: str,
               base: BaseFile) -> tuple[pq.ParquetFile, Iterator[tuple[pa.Table, _Keys]]]:
    """The base file (its footer) and its records a batch at a time, each with its record keys, in
    the written column order and types without `_hoodie_file_name` (`_batches`).

    The columns are checked here, before the caller writes anything; the file is read through
    `Storage.open_input` (ranges of it, not the whole object in memory) and closed when the batches
    are exhausted or abandoned.
    """
    import pyarrow.parquet as pq

    path = relative_path(partition, base.name)
    source = ctx.storage.open_input(path)
    try:
        parquet = pq.ParquetFile(source)
        _checked_columns(ctx, path, parquet)
    except BaseException:
        source.close()
        raise
    return parquet, _batches(ctx, path, source, parquet)


def _reread(ctx: FileContext, partition: str, base: BaseFile,
            old_file: OldFile) -> tuple[pq.ParquetFile, Iterator[tuple[pa.Table, _Keys]]]:
    """`_read_base` over the file the index read: its other columns decoded, its keys reused."""
    path = relative_path(partition, base.name)
    _checked_columns(ctx, path, old_file.parquet)
    return old_file.parquet, _batches(ctx, path, contextlib.nullcontext(), old_file.parquet, old_file.keys)


def _checked_columns(ctx: FileContext, path: str, parquet: pq.ParquetFile) -> None:
    """Refuse an old file whose columns are not the written ones, before the merge writes anything."""
    found = parquet.schema_arrow.names
    names = [f.name for f in ctx.schema]
    if sorted(found) != sorted(names):
        raise RefusedError(
            f"Cannot merge into {path}: its columns {found} differ from the written "
            f"columns {names}; schema evolution is not supported by the writer.",
            hint="write the same columns as the table already has.",
        )


def _batches(ctx: FileContext, path: str, source: contextlib.AbstractContextManager[object],
             parquet: pq.ParquetFile, keys: pa.Array | None = None) -> Iterator[tuple[pa.Table, _Keys]]:
    """The file's records a batch at a time, with their record keys, in the file's layout without
    `_hoodie_file_name` (`_without_file_name`: every merged record takes the new file's name, which
    `_OpenFile.write` adds, so the old names are not decoded and no name is carried through the
    merge's takes); with `keys` (its record keys, decoded already) the key column is taken from them
    instead of decoded again. A table without meta fields stores them null, so they are not read:
    its rows carry null meta columns, its keys are computed from the key fields (or given)."""
    import pyarrow as pa

    virtual = ctx.virtual_keys
    schema = _without_file_name(ctx.schema)
    names = schema.names
    if virtual is not None:
        skipped = set(META_COLUMNS)
    else:
        skipped = {FILE_NAME} if keys is None else {FILE_NAME, RECORD_KEY}
    columns = [n for n in names if n not in skipped]
    offset = 0
    with source:
        for batch in parquet.iter_batches(batch_size=ROW_GROUP_ROWS, columns=columns):
            table = pa.Table.from_batches([batch])
            n = batch.num_rows
            batch_keys: pa.Array | pa.ChunkedArray | None = None
            if keys is not None:
                batch_keys = keys.slice(offset, n)
                offset += n
            elif virtual is not None:  # null in the file: the merge matches old records by computed keys
                batch_keys = virtual.keys(table, path)
            if virtual is not None:  # what `_OpenFile.write` stores of them: nulls (the name comes there)
                for meta in META_COLUMNS:
                    if meta != FILE_NAME:
                        table = table.append_column(meta, pa.nulls(n, pa.string()))
            elif batch_keys is not None:
                table = table.append_column(RECORD_KEY, batch_keys)
            try:
                table = table.select(names).cast(schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                raise RefusedError(
                    f"Cannot merge into {path}: its column types differ from the written ones ({error}).",
                    hint="cast the records' columns to the table's types.",
                ) from error
            yield table, (stored_keys(table.column(RECORD_KEY), path) if batch_keys is None else batch_keys)


class _OpenFile:
    """A base file streamed to storage as it is written; `close` publishes it and reports it.

    The partition metadata and the file's marker are created first, then the file is opened with
    `Storage.create_new`: on local storage every row group goes straight to a hidden temporary file
    (`.<name>.<hex>.tmp`) that becomes the file only when `close` completes, so a failed or killed
    write never leaves a truncated base file, and what it leaves is found by its marker and removed
    by the next write's rollback. The footer's record-key entries need every key of the file, so
    only the key column is kept until `close`. On S3 `create_new` streams a multipart upload (one part
    in memory) that completes only if the object is still absent.
    """

    def __init__(self, ctx: FileContext, partition: str, file_id: str, *, prev_commit: str | None,
                 io_type: str) -> None:
        self.ctx, self.partition, self.file_id = ctx, partition, file_id
        self.prev_commit, self.io_type = prev_commit, io_type
        self.name = ctx.file_name(file_id)
        self.rows = 0
        self._all_keys: list[pa.ChunkedArray] = []
        # Set by a merge: the old file's bloom filter, which holds this file's first keys.
        self.prior_filter: InputFilter | None = None
        # Set by a merge that keeps the old file's first page of rows: the columns it wrote plain.
        self.plain_columns: frozenset[str] = frozenset()
        ensure_partition_metadata(ctx.storage, partition, ctx.instant)
        ctx.storage.write_new(marker_path(ctx.instant, partition, self.name, io_type), b"")
        self._stream = contextlib.ExitStack()
        self._sink = self._stream.enter_context(ctx.storage.create_new(relative_path(partition, self.name)))
        # Opened on the first rows: which columns get a dictionary depends on them (`encoding`).
        self._writer: TableWriter | None = None

    @property
    def size(self) -> int:
        return int(self._sink.tell())

    def rows_that_fit(self) -> int:
        per_row = self.size // self.rows if self.rows and self.size else self.ctx.avg_record_size
        return max(1, (self.ctx.max_file_size - self.size) // max(per_row, 1))

    def write(self, table: pa.Table, *, copy_from: tuple[OldPages, int] | None = None) -> None:
        """Write `table`'s rows, in the file's layout; rows without `_hoodie_file_name` (a merge's)
        get this file's name, with or without meta fields (see `_meta_nulled`). `copy_from`: an old
        file whose row group starting at this one's first row holds the table's first rows (the
        given number) as they are; its pages of those rows are copied where they qualify."""
        import pyarrow as pa

        if table.num_rows == 0:
            return
        if FILE_NAME not in table.column_names:
            at = self.ctx.schema.get_field_index(FILE_NAME)
            field = self.ctx.schema.field(at)
            table = table.add_column(at, field, pa.repeat(pa.scalar(self.name, field.type), table.num_rows))
        if self.ctx.virtual_keys is None:
            self._all_keys.append(table.column(RECORD_KEY))
        else:
            table = _meta_nulled(table)
        writer = self._opened(table)
        prefixes = self._prefixes(writer, *copy_from) if copy_from is not None else None
        if prefixes:
            assert isinstance(writer, DeflatingWriter)
            writer.write_table(table, row_group_size=max(table.num_rows, 1), prefixes=prefixes)
        else:
            writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.rows += table.num_rows
        failpoint("mid_file")

    def close(self, *, num_inserts: int, num_updates: int) -> WrittenFile:
        import pyarrow as pa

        try:
            keys = pa.chunked_array([c for chunked in self._all_keys for c in chunked.chunks], pa.string())
            footer = {"parquet.avro.schema": self.ctx.avro_schema, "writer.model.name": "avro"}
            writer = self._opened(self.ctx.schema.empty_table())
            if self.ctx.virtual_keys is not None:
                key_footer = {}  # Hudi writes no bloom filter or key range without meta fields
            elif self.prior_filter is None:
                key_footer = record_key_footer(keys)
            else:
                key_footer, origin = extended_record_key_footer(self.prior_filter, keys)
                log.debug("%s: bloom filter %s", self.name, origin)
            writer.add_key_value_metadata(footer | key_footer)
            writer.close()
            size = self.size
        except BaseException:
            self.abort()
            raise
        self._stream.close()  # publishes the file: fsync and link (local), the conditional completion (S3)
        return WrittenFile(self.partition, self.file_id, self.name, self.prev_commit, self.rows,
                           num_inserts, num_updates, size)

    def _prefixes(self, writer: TableWriter, old: OldPages, unchanged_rows: int) -> dict[int, PagePrefix]:
        """The columns whose first pages are copied from `old`: every column but the file name
        (each row takes the new one) that this file encodes plain, where `old` qualifies."""
        if not isinstance(writer, DeflatingWriter) or not unchanged_rows or not writer.can_copy_from(old):
            return {}
        found = {}
        for i, name in enumerate(self.ctx.schema.names):
            if name != FILE_NAME and writer.plain(name):
                prefix = old.prefix(self.rows, i, unchanged_rows)
                if prefix is not None:
                    found[i] = prefix
        return found

    def _opened(self, first_rows: pa.Table) -> TableWriter:
        if self._writer is None:
            self._writer = parquet_writer(
                self._sink, self.ctx.schema, compression=self.ctx.codec.name,
                compression_level=self.ctx.codec.level,
                use_dictionary=dictionary_columns(first_rows, distinct=self.ctx.distinct_columns(),
                                                  plain=self.plain_columns),
                store_schema=False, deflate_pool=self.ctx.deflate_pool,
            )
        return self._writer

    def abort(self) -> None:
        """Give up the file: nothing is published and the temporary file is removed (the marker stays,
        for the rollback)."""
        writer = getattr(self, "_writer", None)
        if writer is not None:
            # Closed here, into the doomed temporary file, rather than by its finalizer after the
            # file is gone; an error of that close is beside the one being handled.
            with contextlib.suppress(Exception):
                writer.close()
        self._stream.__exit__(RuntimeError, RuntimeError("write abandoned"), None)


def _meta_nulled(table: pa.Table) -> pa.Table:
    """`table` with its meta columns null but the file name, as a table without meta fields stores
    every record. Stamped and merged rows already come so; this is the guard at the one place rows
    reach a file. Hudi's create and merge handles set `_hoodie_file_name` whatever
    `populateMetaFields` says (`MetadataValues.setFileName` before `prependMetaFields`); the other
    four only with meta fields."""
    import pyarrow as pa

    for name in META_COLUMNS:
        if name == FILE_NAME:
            continue
        at = table.schema.get_field_index(name)
        if table.column(at).null_count != table.num_rows:
            table = table.set_column(at, table.schema.field(at), pa.nulls(table.num_rows, table.schema.field(at).type))
    return table


def ensure_partition_metadata(storage: Storage, partition: str, instant: str) -> None:
    """Create the partition's `.hoodie_partition_metadata` unless it exists (Hudi's `trySave`)."""
    path = relative_path(partition, PARTITION_METADATA)
    if storage.stat(path) is not None:
        return
    depth = len([s for s in partition.split("/") if s]) if partition else 0
    text = "#partition metadata\n" + format_properties({"commitTime": instant, "partitionDepth": str(depth)})
    try:
        storage.write_new(path, text.encode("iso-8859-1"))
    except AlreadyExists:
        pass  # another task of this write created it first


def stat_rows(files: Sequence[WrittenFile]) -> dict[str, list[object]]:
    """Written files as columns, the shape the Spark job returns to the driver."""
    return {
        "partition": [f.partition for f in files],
        "file_id": [f.file_id for f in files],
        "name": [f.name for f in files],
        "prev_commit": [f.prev_commit for f in files],
        "num_writes": [f.num_writes for f in files],
        "num_inserts": [f.num_inserts for f in files],
        "num_update_writes": [f.num_update_writes for f in files],
        "size": [f.size for f in files],
    }
