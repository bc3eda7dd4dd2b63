"""Binary-copy resize: one Parquet file made of other files' row groups, copied without decoding.

Hudi 1.1's `SparkBinaryCopyClusteringExecutionStrategy` (with `HoodieParquetFileBinaryCopier`)
merges a clustering group's base files row group by row group: every column chunk is copied byte
for byte except `_hoodie_file_name`, which is written again holding the new file's name; the other
meta columns keep their values. For a table without meta fields (`hoodie.populate.meta.fields=false`)
the caller passes no name and that column's chunks are copied as they are too, so the copy holds
the rows a rewrite writes: Hudi's default (row-writer) clustering keeps every meta column of such a
table as the input has it (`runner.execute.resize_job`), though Hudi's copier masks the column
whatever the table. Rows stay in input order and in the inputs' row groups (nothing is
re-encoded, so small inputs stay small row groups). This module does the same for one group,
streaming (`copy_into`): the inputs' footers are read and checked first, then each input's chunks
are copied to the output in turn, and the footer is written last:

- the inputs must agree on everything the copied bytes depend on, or the group is rewritten the
  normal way (`NotCopyable` says why): one Parquet schema, one codec for every chunk, one
  `created_by` (readers decide which statistics to trust by the writer that made them), no
  encryption, no chunk stored in another file, and every chunk exactly the pages its metadata
  claims (checked by walking the page headers);
- `_hoodie_file_name`, given a new name, is encoded by pyarrow as a one-column file with the inputs'
  row counts per row group and their codec, and its chunks are spliced in;
- the footer is the first input's with offsets shifted, row groups and row count summed. Page
  indexes and Parquet bloom filters of the inputs are left behind (their offsets are dropped;
  both are optional). Key-value metadata: the inputs' entries, minus the writer schemas Hudi's
  copier drops too (`parquet.avro.schema`, Spark's row metadata, and Arrow's schema, so the file
  reads from its Parquet types like a rewritten one), plus Hudi's record-key footer for the new
  file: the key range over all of its keys in Java order (`runner.hudi.footer`; only the
  `_hoodie_record_key` column is decoded), and the inputs' bloom filters merged as Hudi's copier
  merges them, with the rows and header of a filter of all the keys (`runner.hudi.bloom_merge`),
  or rebuilt from the keys when the inputs' filters do not qualify.

Field ids are those of `parquet.thrift` (FileMetaData, RowGroup, ColumnChunk, ColumnMetaData,
SchemaElement, PageHeader).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, BinaryIO

from runner.errors import CorruptMetadataError
from runner.hudi import footer, parquet_footer
from runner.hudi.parquet_deflate import parquet_writer
from runner.hudi.parquet_ids import (
    C_CRYPTO,
    C_FILE_PATH,
    C_META,
    DATA_PAGE,
    DATA_PAGE_V2,
    DICTIONARY_PAGE,
    F_COLUMN_ORDERS,
    F_CREATED_BY,
    F_ENCRYPTION,
    F_KEY_VALUE,
    F_NUM_ROWS,
    F_ROW_GROUPS,
    F_SCHEMA,
    F_SIGNING_KEY,
    M_CODEC,
    M_COMPRESSED,
    M_DATA_PAGE,
    M_DICTIONARY_PAGE,
    M_NUM_VALUES,
    M_PATH,
    M_UNCOMPRESSED,
    MAGIC,
    P_COMPRESSED_SIZE,
    P_DATA_V1,
    P_DATA_V2,
    P_TYPE,
    R_COLUMNS,
    R_NUM_ROWS,
    R_SORTING_COLUMNS,
    R_TOTAL_BYTE_SIZE,
    S_CHILDREN,
    S_NAME,
    S_REPETITION,
    S_TYPE,
)
from runner.hudi.thrift_compact import (
    I32,
    LIST,
    STRUCT,
    Struct,
    ThriftList,
    decode_struct,
    encode_struct,
)

if TYPE_CHECKING:
    import pyarrow as pa

FILE_NAME_COLUMN = "_hoodie_file_name"
RECORD_KEY_COLUMN = "_hoodie_record_key"

_BYTE_ARRAY = 6
_REPEATED = 2
# Parquet codec ids pyarrow can write, by pyarrow's name; LZO and Hadoop's framed LZ4 it cannot.
_CODECS = {0: "none", 1: "snappy", 2: "gzip", 4: "brotli", 6: "zstd", 7: "lz4"}
# Writer schemas that describe a file as its writer saw it; Hudi's copier drops the first two.
_DROPPED_KEYS = frozenset({"parquet.avro.schema", "org.apache.spark.sql.parquet.row.metadata", "ARROW:schema"})
_HUDI_KEYS = frozenset({footer.BLOOM_FILTER, footer.BLOOM_FILTER_TYPE_CODE, footer.MIN_RECORD_KEY,
                        footer.MAX_RECORD_KEY})


class NotCopyable(Exception):
    """The inputs do not qualify for a binary copy; the message says why (for the report)."""


@dataclass(frozen=True, slots=True)
class ParsedChunk:
    """One column chunk of an input: its metadata and where its bytes are."""

    meta: Struct  # the ColumnChunk
    start: int
    length: int


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """An input's parsed footer; its column chunks all lie in bytes [4, data_end)."""

    path: str
    meta: Struct  # the FileMetaData
    row_groups: tuple[tuple[Struct, tuple[ParsedChunk, ...]], ...]
    data_end: int  # where the footer starts


@dataclass(frozen=True, slots=True)
class Source:
    """One input file: its path, size and a reader of byte ranges (`read(start, length)`).

    The footer is read first (two small reads from the end), then the column chunks in one read
    of everything before the footer, one input at a time, so at most one input's data is held.
    """

    path: str
    size: int
    read: Callable[[int, int], bytes]

    @classmethod
    def of_bytes(cls, path: str, data: bytes) -> Source:
        return cls(path, len(data), lambda start, length: data[start:start + length])


@dataclass(frozen=True, slots=True)
class Copied:
    """What a binary copy wrote: the file's size and what it holds."""

    size: int
    records: int
    row_groups: int
    bloom_filter: str = "none"  # "merged" from the inputs' filters, "rebuilt: <why>", or "none"


@dataclass(frozen=True, slots=True)
class CopiedFile:
    """The new base file's bytes and what it holds (`binary_copy`, in memory)."""

    data: bytes
    records: int
    row_groups: int
    bloom_filter: str = "none"


def binary_copy(inputs: Sequence[tuple[str, bytes]], *, file_name: str | None) -> CopiedFile:
    """Concatenate the inputs' row groups into one file whose `_hoodie_file_name` is `file_name`,
    in memory (`copy_into` a buffer).

    Args:
        inputs: (path, content) of each input base file, in the order their rows go.
        file_name: the new base file's name; None keeps the inputs' `_hoodie_file_name` chunks as
            they are (a table without meta fields).

    Raises:
        NotCopyable: the inputs do not qualify (nothing was produced; rewrite them instead).
    """
    out = io.BytesIO()
    copied = copy_into([Source.of_bytes(path, data) for path, data in inputs], out, file_name=file_name)
    return CopiedFile(out.getvalue(), copied.records, copied.row_groups, copied.bloom_filter)


def copy_into(sources: Sequence[Source], out: BinaryIO, *, file_name: str | None,
              after_input: Callable[[], None] = lambda: None) -> Copied:
    """Write the inputs' row groups, input by input, to `out` as one file whose `_hoodie_file_name`
    is `file_name` (None: the inputs' chunks of it, copied like the others); the footer goes last.

    Every check that needs only the footers runs before the first byte is written; the page walk of
    each input runs when that input is read, so `NotCopyable` can also come part way through, with
    some bytes written: the caller then discards `out` (`Storage.create_new` publishes nothing
    when its block raises). Held at once: the inputs' footers, one input's data, and the record
    key column's chunks (for the key range and the bloom filter check). `after_input` is called
    once each input's row groups are written (a crash point for tests).

    Raises:
        NotCopyable: the inputs do not qualify (rewrite them instead).
    """
    parsed = [parse_footer(source) for source in sources]
    schema = _check_alike(parsed)
    codec = _single_codec(parsed)
    column = _file_name_column(schema) if file_name is not None else None
    name_leaf = column[0] if column else None
    _check_column_order(parsed, name_leaf)
    key_leaf = _key_leaf(schema)
    names: Iterator[tuple[ParsedChunk, bytes | memoryview]] | None = None
    if column is not None and file_name is not None:
        counts = [_int(rg, R_NUM_ROWS) for f in parsed for rg, _ in f.row_groups]
        names = _file_name_chunks(file_name, counts, codec, optional=column[1])
    writer = _Writer(out)
    keys: list[list[tuple[Struct, ParsedChunk, bytes]]] = []
    for source, f in zip(sources, parsed, strict=True):
        data = source.read(0, f.data_end)
        if len(data) != f.data_end or data[:4] != MAGIC:
            raise NotCopyable(f"{f.path} is not a plain Parquet file (it does not start with {MAGIC!r})")
        view = memoryview(data)
        kept: list[tuple[Struct, ParsedChunk, bytes]] = []
        for rg, chunks in f.row_groups:
            for chunk in chunks:
                _check_pages(f.path, data, chunk)
            pieces: list[tuple[ParsedChunk, bytes | memoryview]] = [(c, view[c.start:c.start + c.length])
                                                                    for c in chunks]
            byte_size = _int(rg, R_TOTAL_BYTE_SIZE)
            if names is not None and name_leaf is not None:
                spliced = next(names)
                byte_size += _uncompressed(spliced[0]) - _uncompressed(chunks[name_leaf])
                pieces[name_leaf] = spliced
            writer.row_group(rg, pieces, byte_size)
            if key_leaf is not None:
                kept.append((rg, chunks[key_leaf], bytes(pieces[key_leaf][1])))
        keys.append(kept)
        del view, data
        after_input()
    key_footer, origin = _record_key_footer(parsed, keys if key_leaf is not None else None)
    size = writer.finish(parsed[0].meta, _key_values(parsed) | key_footer)
    return Copied(size, writer.records, len(writer.row_groups), origin)


def _parse(path: str, data: bytes) -> tuple[ParsedFile, bytes]:
    """An input held in memory: its footer parsed and every chunk's pages checked."""
    parsed = parse_footer(Source.of_bytes(path, data))
    if data[:4] != MAGIC:
        raise NotCopyable(f"{path} is not a plain Parquet file (it does not start with {MAGIC!r})")
    for _, chunks in parsed.row_groups:
        for chunk in chunks:
            _check_pages(path, data, chunk)
    return parsed, data


def parse_footer(source: Source) -> ParsedFile:
    path, size = source.path, source.size
    tail = source.read(size - 8, 8) if size >= 12 else b""
    if tail[4:] != MAGIC:  # the leading PAR1 is checked when the data is read
        raise NotCopyable(f"{path} is not a plain Parquet file (encrypted files end in PARE)")
    length = int.from_bytes(tail[:4], "little")
    start = size - 8 - length
    if start < 4:
        raise NotCopyable(f"{path}: footer length {length} does not fit a file of {size} bytes")
    encoded = bytes(source.read(start, length))
    try:
        meta, end = decode_struct(encoded, what=path)
    except CorruptMetadataError as error:
        raise NotCopyable(str(error)) from error
    if end != length:
        raise NotCopyable(f"{path}: the footer takes {end} of its {length} bytes")
    if meta.has(F_ENCRYPTION) or meta.has(F_SIGNING_KEY):
        raise NotCopyable(f"{path} is encrypted")
    row_groups = []
    ranges: list[tuple[int, int]] = []
    for rg in meta.get_list(F_ROW_GROUPS):
        assert isinstance(rg, Struct)
        chunks = tuple(_chunk(path, c) for c in rg.get_list(R_COLUMNS))
        if _int(rg, R_NUM_ROWS) <= 0:
            raise NotCopyable(f"{path} has an empty row group")
        row_groups.append((rg, chunks))
        ranges += [(c.start, c.start + c.length) for c in chunks]
    ranges.sort()
    if ranges and (ranges[0][0] < 4 or ranges[-1][1] > start
                   or any(a[1] > b[0] for a, b in pairwise(ranges))):
        raise NotCopyable(f"{path}: column chunks overlap or lie outside the data")
    if not row_groups:
        raise NotCopyable(f"{path} holds no rows")
    return ParsedFile(path, meta, tuple(row_groups), start)


def _chunk(path: str, chunk: object) -> ParsedChunk:
    assert isinstance(chunk, Struct)
    meta = chunk.get_struct(C_META)
    if meta is None or chunk.has(C_FILE_PATH) or any(chunk.has(f) for f in C_CRYPTO):
        raise NotCopyable(f"{path}: a column chunk is stored elsewhere or encrypted")
    start = _int(meta, M_DATA_PAGE)
    dictionary = meta.get_int(M_DICTIONARY_PAGE)
    if dictionary is not None and 0 < dictionary < start:
        start = dictionary
    return ParsedChunk(chunk, start, _int(meta, M_COMPRESSED))


def _uncompressed(chunk: ParsedChunk) -> int:
    return _int(chunk.meta.get_struct(C_META), M_UNCOMPRESSED)


def _check_pages(path: str, data: bytes, chunk: ParsedChunk) -> None:
    """Walk the chunk's page headers: they must fill exactly its length and hold its values.

    Some old writers recorded chunk sizes that leave out a page header; copying such a chunk by its
    recorded size would cut a page, so anything but an exact fit is not copied.
    """
    start, length = chunk.start, chunk.length
    values = _int(chunk.meta.get_struct(C_META), M_NUM_VALUES)
    pos, end, seen = start, start + length, 0
    while pos < end:
        try:
            header, after = decode_struct(data, what=path, offset=pos)
        except CorruptMetadataError as error:
            raise NotCopyable(f"{path}: unreadable page header at byte {pos}") from error
        kind = header.get_int(P_TYPE)
        if kind in (DATA_PAGE, DATA_PAGE_V2):
            seen += _int(header.get_struct(P_DATA_V1 if kind == DATA_PAGE else P_DATA_V2), 1)
        elif kind != DICTIONARY_PAGE:
            raise NotCopyable(f"{path}: page of type {kind} at byte {pos}")
        pos = after + _int(header, P_COMPRESSED_SIZE)
    if pos != end or seen != values:
        raise NotCopyable(f"{path}: a column chunk's pages do not match its metadata "
                          f"({pos - start} of {length} bytes, {seen} of {values} values)")


def _check_alike(files: Sequence[ParsedFile]) -> Struct:
    """The common schema; the files must also agree on the writer and the column orders."""
    first = files[0]
    for other in files[1:]:
        for fid, what in ((F_SCHEMA, "Parquet schemas"), (F_CREATED_BY, "writers (created_by)"),
                          (F_COLUMN_ORDERS, "column orders")):
            if footer_field(first.meta, fid) != footer_field(other.meta, fid):
                raise NotCopyable(f"{what} differ: {first.path} and {other.path}")
    return first.meta


def footer_field(meta: Struct, field_id: int) -> bytes | None:
    """A footer field's bytes, for comparing; the schema's root name is left out (Hudi's Avro writer
    names it after the record, Spark's row writer `spark_schema`; no reader looks at it)."""
    if not meta.has(field_id):
        return None
    value = meta.get(field_id)
    if field_id == F_SCHEMA and isinstance(value, ThriftList) and value.values:
        root = value.values[0]
        assert isinstance(root, Struct)
        value = ThriftList(value.element_type, [Struct([f for f in root.fields if f[0] != S_NAME]),
                                                *value.values[1:]])
    assert value is not None
    return encode_struct(Struct([(1, _kind(meta, field_id), value)]))


def _kind(meta: Struct, field_id: int) -> int:
    return next(kind for fid, kind, _ in meta.fields if fid == field_id)


def _single_codec(files: Sequence[ParsedFile]) -> int:
    codecs = {_int(c.meta.get_struct(C_META), M_CODEC) for f in files for _, chunks in f.row_groups for c in chunks}
    if len(codecs) != 1:
        raise NotCopyable(f"column chunks use {len(codecs)} codecs ({sorted(codecs)}), not one")
    codec = codecs.pop()
    if codec not in _CODECS:
        raise NotCopyable(f"codec {codec} cannot be written here (LZO or Hadoop LZ4)")
    return codec


def _file_name_column(meta: Struct) -> tuple[int, bool] | None:
    """(leaf index, optional) of a top-level `_hoodie_file_name` string column; None without one."""
    found = _string_column(meta, FILE_NAME_COLUMN)
    return None if found is None else (found[0], found[2])


def _string_column(meta: Struct, name: str) -> tuple[int, int, bool] | None:
    """(leaf index, schema element index, optional) of a top-level string column `name`; None
    without one. Raises NotCopyable when `name` is there but not a plain string column."""
    elements = meta.get_list(F_SCHEMA)
    leaf, i = 0, 1
    found = None
    root = elements[0]
    assert isinstance(root, Struct)
    for _ in range(_int(root, S_CHILDREN)):
        top = elements[i]
        assert isinstance(top, Struct)
        leaves, after = _leaves(elements, i)
        if top.get(S_NAME) == name.encode():
            if leaves != 1 or top.get_int(S_TYPE) != _BYTE_ARRAY or top.get_int(S_REPETITION) == _REPEATED:
                raise NotCopyable(f"{name} is not a plain string column")
            found = (leaf, i, top.get_int(S_REPETITION) != 0)
        leaf, i = leaf + leaves, after
    return found


def _check_column_order(files: Sequence[ParsedFile], name_leaf: int | None) -> None:
    """Every row group has one chunk per leaf column, in schema order (the spec's rule, relied on
    to find the `_hoodie_file_name` chunk by its position)."""
    leaves = _leaves(files[0].meta.get_list(F_SCHEMA), 0)[0]
    for f in files:
        for _, chunks in f.row_groups:
            if len(chunks) != leaves:
                raise NotCopyable(f"{f.path}: a row group has {len(chunks)} column chunks for {leaves} columns")
            if name_leaf is not None:
                meta = chunks[name_leaf].meta.get_struct(C_META)
                path = meta.get_list(M_PATH) if meta is not None else []
                if path != [FILE_NAME_COLUMN.encode()]:
                    raise NotCopyable(f"{f.path}: column chunks are not in schema order")


def _leaves(elements: Sequence[object], i: int) -> tuple[int, int]:
    """Leaves under the schema element at `i`, and the index after its subtree."""
    element = elements[i]
    assert isinstance(element, Struct)
    children = element.get_int(S_CHILDREN)
    if not children:
        return 1, i + 1
    total, i = 0, i + 1
    for _ in range(children):
        leaves, i = _leaves(elements, i)
        total += leaves
    return total, i


def _file_name_chunks(name: str, counts: Sequence[int], codec: int, *,
                      optional: bool) -> Iterator[tuple[ParsedChunk, bytes | memoryview]]:
    """A `_hoodie_file_name` chunk holding `name` for each entry of `counts` (rows per row group),
    with its bytes. Row groups of equal row counts get the same chunk, so one pyarrow file of one
    row group per distinct count is written (inputs of a bulk insert mostly share their counts)."""
    import pyarrow as pa

    distinct = sorted(set(counts))
    longest = distinct[-1]
    zeros = pa.Array.from_buffers(pa.int32(), longest, [None, pa.py_buffer(bytes(4 * longest))])
    column = pa.DictionaryArray.from_arrays(zeros, pa.array([name], type=pa.string()))
    schema = pa.schema([pa.field(FILE_NAME_COLUMN, column.type, nullable=optional)])
    sink = pa.BufferOutputStream()
    # No page index (pyarrow's default): the copy drops the inputs' too. gzip as the writer writes it.
    with parquet_writer(sink, schema, compression=_CODECS[codec], store_schema=False,
                        write_statistics=True) as writer:
        for count in distinct:
            writer.write_table(pa.table([column.slice(0, count)], schema=schema), row_group_size=count)
    written, data = _parse("<_hoodie_file_name>", bytes(sink.getvalue().to_pybytes()))
    got = [_int(rg, R_NUM_ROWS) for rg, _ in written.row_groups]
    if got != distinct:  # pyarrow caps row groups at 64 Mi rows
        raise NotCopyable(f"{FILE_NAME_COLUMN} could not be written in the inputs' row groups")
    view = memoryview(data)
    by_count = {count: (c, view[c.start:c.start + c.length]) for count, (_, (c,)) in zip(
        distinct, written.row_groups, strict=True)}
    return iter([by_count[count] for count in counts])


def _key_values(files: Sequence[ParsedFile]) -> dict[str, str | None]:
    """The inputs' key-value metadata, the first file's value winning, minus writer schemas and
    Hudi's record-key footer (computed afresh for the new file by the caller)."""
    merged: dict[str, str | None] = {}
    for f in files:
        for text, value in parquet_footer.key_values(f.meta).items():
            if text in _DROPPED_KEYS or text in _HUDI_KEYS or text in merged:
                continue
            merged[text] = value
    return merged


class _Writer:
    """Writes a Parquet file's column chunks as they come, and its footer at the end."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        out.write(MAGIC)
        self.pos = len(MAGIC)
        self.row_groups: list[Struct] = []
        self.records = 0

    def row_group(self, rg: Struct, pieces: Sequence[tuple[ParsedChunk, bytes | memoryview]], byte_size: int) -> None:
        """Append one row group: `rg` as its input had it, and each chunk with its bytes."""
        columns: list[Struct] = []
        for chunk, data in pieces:
            self.out.write(data)
            columns.append(parquet_footer.moved_chunk(chunk.meta, chunk.start, chunk.length, self.pos))
            self.pos += chunk.length
        self.row_groups.append(parquet_footer.row_group(rg, columns, byte_size, len(self.row_groups)))
        self.records += _int(rg, R_NUM_ROWS)

    def finish(self, first: Struct, key_values: Mapping[str, str | None]) -> int:
        """Write the footer (`first`'s, with these row groups and key-value metadata); the file's size."""
        tail = parquet_footer.footer(first, self.records, self.row_groups, key_values)
        self.out.write(tail)
        return self.pos + len(tail)


def _int(struct: Struct | None, field_id: int) -> int:
    value = struct.get_int(field_id) if struct is not None else None
    if value is None:
        raise NotCopyable(f"a required Parquet footer field ({field_id}) is missing")
    return value


def hudi_footer(inputs: Sequence[tuple[str, bytes]]) -> dict[str, str]:
    """Hudi's record-key footer for the concatenation of the inputs, in their order."""
    parsed = [_parse(path, data) for path, data in inputs]
    return _record_key_footer([f for f, _ in parsed], key_chunks(parsed))[0]


KeyChunks = list[list[tuple[Struct, ParsedChunk, bytes]]]  # per input, per row group: (row group, chunk, bytes)


def key_chunks(inputs: Sequence[tuple[ParsedFile, bytes]]) -> KeyChunks | None:
    """Each input's `_hoodie_record_key` chunks with their bytes; None without that column."""
    if not inputs:
        return None
    leaf = _key_leaf(inputs[0][0].meta)
    if leaf is None:
        return None
    return [[(rg, chunks[leaf], data[chunks[leaf].start:chunks[leaf].start + chunks[leaf].length])
             for rg, chunks in f.row_groups] for f, data in inputs]


def _key_leaf(meta: Struct) -> int | None:
    found = _string_column(meta, RECORD_KEY_COLUMN)
    return None if found is None else found[0]


def _record_key_footer(files: Sequence[ParsedFile], keys_chunks: KeyChunks | None) -> tuple[dict[str, str], str]:
    """The footer, and where its bloom filter came from ("merged", "rebuilt: <why>" or "none").

    The key range is computed from the decoded `_hoodie_record_key` column (inputs' recorded
    ranges may be in UTF-8 rather than Java order, and only a sample of keys could check them,
    `runner.hudi.footer`); the bloom filter is the inputs' filters merged (`runner.hudi.bloom_merge`)
    when they qualify, else rebuilt from the keys. A table without meta columns has no key column:
    the range then covers the inputs' recorded ranges when every input records one, and there is no
    filter.
    """
    entries = [_footer_entries(f.meta) for f in files]
    keys = _key_column(files, keys_chunks) if keys_chunks is not None else None
    # Hudi leaves the key column null when `hoodie.populate.meta.fields` is false.
    if keys is not None and len(keys) > keys.null_count:
        filters = [footer.input_filter(f.path, e, _int(f.meta, F_NUM_ROWS))
                   for f, e in zip(files, entries, strict=True)]
        return footer.merged_record_key_footer(filters, keys)
    ranges = [footer.range_of(e) for e in entries]
    known = [r for r in ranges if r is not None]
    return footer.range_footer(footer.merged_range(known) if len(known) == len(ranges) else None), "none"


def _footer_entries(meta: Struct) -> dict[bytes, bytes]:
    """A footer's key-value metadata as pyarrow gives it (a key without a value is left out)."""
    entries: dict[bytes, bytes] = {}
    for entry in meta.get_list(F_KEY_VALUE):
        assert isinstance(entry, Struct)
        key, value = entry.get(1), entry.get(2)
        if isinstance(key, bytes) and isinstance(value, bytes):
            entries.setdefault(key, value)
    return entries


def _key_column(files: Sequence[ParsedFile], keys_chunks: KeyChunks) -> pa.ChunkedArray | None:
    """Every input's `_hoodie_record_key` values in order; None without that column.

    Decoded from one Parquet file made of the key column's chunks alone, with a footer that
    describes only them: pyarrow opening each input would parse its whole footer, whose bloom
    filter alone is about 0.4 MB, and that cost as much as decoding the keys.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    found = _string_column(files[0].meta, RECORD_KEY_COLUMN)
    if found is None:
        return None
    leaf, element, _ = found
    schema = files[0].meta.get_list(F_SCHEMA)
    root = Struct(list(_struct(schema[0]).fields))
    root.put(S_CHILDREN, I32, 1)
    meta = Struct(list(files[0].meta.fields))
    meta.put(F_SCHEMA, LIST, ThriftList(STRUCT, [root, schema[element]]))
    orders = meta.get(F_COLUMN_ORDERS)
    if isinstance(orders, ThriftList):
        meta.put(F_COLUMN_ORDERS, LIST, ThriftList(orders.element_type, [orders.values[leaf]]))
    out = io.BytesIO()
    writer = _Writer(out)
    for f, chunks in zip(files, keys_chunks, strict=True):
        for rg, chunk, data in chunks:
            chunk_meta = chunk.meta.get_struct(C_META)
            if chunk_meta is None or chunk_meta.get_list(M_PATH) != [RECORD_KEY_COLUMN.encode()]:
                raise NotCopyable(f"{f.path}: column chunks are not in schema order")
            trimmed = Struct(list(rg.fields))
            trimmed.drop(R_SORTING_COLUMNS)  # their column indexes are the whole schema's
            writer.row_group(trimmed, [(chunk, data)], _int(rg, R_TOTAL_BYTE_SIZE))
    writer.finish(meta, {})
    return pq.read_table(pa.BufferReader(out.getvalue()), use_threads=False).column(0)


def _struct(value: object) -> Struct:
    assert isinstance(value, Struct)
    return value
