"""GZIP Parquet whose pages are deflated by libdeflate rather than Arrow's zlib.

Hudi's default codec is gzip at zlib's level 6 (parquet-mr through Hadoop's zlib). Arrow's GZIP
codec spends most of a Hudi file's encode in zlib's `deflate_slow`. libdeflate writes the same
format (RFC 1952 members, what every Parquet reader inflates) at the same levels in a third to
a half of zlib's CPU, and its output at a level is no larger than zlib's at that level on the data
we measured (bench/README.md, "writer: gzip pages deflated by libdeflate"). Readers see only valid gzip
pages, so nothing about the file changes but the compressed bytes.

Arrow has no hook for another compressor, so `DeflatingWriter` lets Arrow do everything else:
each row group is encoded by `pyarrow.parquet.ParquetWriter` with no compression into memory, as
a one-row-group Parquet file (or, for a row group of more than `BATCH_BYTES` of Arrow data, one
such file per run of columns, since column chunks are encoded independently); its footer tells
where every column chunk is; each chunk's pages are then deflated (the new compressed size
spliced into each page header's bytes, which are scanned, not decoded; a header with a page CRC is
re-encoded with the CRC recomputed), by a few
threads at once when there are enough bytes (libdeflate releases the GIL), and appended to the
output in their order; the footer, written on `close`, is the one Arrow writes for the schema,
with the row groups' chunks in GZIP and their sizes and offsets moved. Held at once, besides the
rows: one run of columns' uncompressed encoding and the row group's deflated pages (Arrow's own
writer holds a dictionary-encoded chunk's pages until the chunk ends).

A merge may hand over, per column, the first pages of the old file's chunk (`runner.hudi.page_prefix`):
they are written as they are, and only the column's later rows are encoded and deflated.

Only what the writers here ask Arrow for is accepted: data pages v1 and dictionary pages, no page
index, no Parquet bloom filter, no encryption; anything else is a bug here and raises.
"""

from __future__ import annotations

import itertools
import os
import zlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, cast

import deflate

from runner.hudi import parquet_footer
from runner.hudi.parquet_ids import (
    C_FILE_OFFSET,
    C_META,
    C_PAGE_INDEX,
    DATA_PAGE,
    DICTIONARY_PAGE,
    F_ROW_GROUPS,
    GZIP,
    M_BLOOM,
    M_CODEC,
    M_COMPRESSED,
    M_DATA_PAGE,
    M_DICTIONARY_PAGE,
    M_ENCODING_STATS,
    M_ENCODINGS,
    M_INDEX_PAGE,
    M_NUM_VALUES,
    M_SIZE_STATISTICS,
    M_STATISTICS,
    M_UNCOMPRESSED,
    MAGIC,
    P_COMPRESSED_SIZE,
    P_CRC,
    P_TYPE,
    P_UNCOMPRESSED_SIZE,
    R_COLUMNS,
    R_NUM_ROWS,
    R_TOTAL_COMPRESSED,
    ST_NULL_COUNT,
)
from runner.hudi.parquet_pages import scan_page_header
from runner.hudi.thrift_compact import (
    I32,
    I64,
    LIST,
    STRUCT,
    Struct,
    ThriftList,
    Value,
    decode_struct,
    encode_struct,
    zigzag_varint,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from runner.hudi.page_prefix import OldPages, PagePrefix

HUDI_GZIP_LEVEL = 6  # zlib's default, what parquet-mr's gzip writes through Hadoop unless told otherwise
_WHAT = "<a row group encoded for deflating>"
# Arrow bytes of a row group's columns encoded at once, at most (a larger column alone): what is
# held uncompressed besides the rows themselves. 64 MiB keeps a writer's file in one piece.
BATCH_BYTES = 64 << 20
# pyarrow's writer splits a row group above this many rows (`max_row_group_length`'s default).
ARROW_MAX_ROW_GROUP_ROWS = 64 * 1024 * 1024


class DeflatingWriter:
    """A `pyarrow.parquet.ParquetWriter` look-alike for GZIP files: `write_table`,
    `add_key_value_metadata` and `close`; `pos` is the bytes written to the sink.

    `options` are `ParquetWriter`'s (dictionary columns, statistics, nested naming, ...), except the
    compression, which is GZIP at `level` (1-12, libdeflate's; 1-9 mean what zlib's do).
    """

    def __init__(self, sink: BinaryIO, schema: pa.Schema, *, level: int = 6, deflate_pool: bool = True,
                 **options: Any) -> None:
        if not 1 <= level <= 12:
            raise ValueError(f"gzip level {level}: expected 1 to 12")
        for refused in ("compression", "compression_level", "write_page_index", "data_page_version",
                        "encryption_properties", "write_page_checksum"):
            if refused in options:
                raise TypeError(f"DeflatingWriter sets {refused} itself")
        if "sorting_columns" in options:  # numbered in the whole schema; a run of columns would renumber them
            raise TypeError("DeflatingWriter does not write sorting_columns")
        self.sink, self.schema, self.level, self.options = sink, schema, level, options
        self.deflate_pool = deflate_pool
        sink.write(MAGIC)
        self.pos = len(MAGIC)
        self.row_groups: list[Struct] = []
        self.rows = 0
        self.key_values: dict[str, str] = {}
        self._template: Struct | None = None  # a footer Arrow wrote for the whole schema
        self._closed = False

    def write_table(self, table: pa.Table, row_group_size: int | None = None, *,
                    prefixes: Mapping[int, PagePrefix] | None = None) -> None:
        """Append `table` as row groups of at most `row_group_size` rows (all of it by default;
        never more than pyarrow's cap, 64 Mi rows, as its writer splits them).

        `prefixes`: for a table written as one row group, the columns (by index) whose first pages
        are copied from an old file as they are (`runner.hudi.page_prefix`); only the rest of each
        such column is encoded. They must be columns this writer encodes plain (`plain`), from a
        file `can_copy_from` accepts."""
        self._open()
        if not table.schema.equals(self.schema, check_metadata=False):
            raise ValueError(f"Table schema does not match schema used to create file: "
                             f"\ntable:\n{table.schema!s} vs. \nfile:\n{self.schema!s}")
        import pyarrow as pa

        # The writer's schema, metadata included, as pyarrow's writer stores it (no copy of the data).
        table = pa.Table.from_arrays(table.columns, schema=self.schema)
        size = min(max(row_group_size or table.num_rows, 1), ARROW_MAX_ROW_GROUP_ROWS)
        if prefixes:
            if size < table.num_rows:
                raise ValueError("pages are copied into a table written as one row group")
            if not all(self.plain(self.schema.names[i]) for i in prefixes):
                raise ValueError("pages are copied only into columns encoded without a dictionary")
        for start in range(0, table.num_rows, size):
            self._row_group(table.slice(start, size), prefixes or {})

    def plain(self, column: str) -> bool:
        """Whether `column` is encoded without a dictionary here (`use_dictionary`)."""
        chosen = self.options.get("use_dictionary", True)
        return not chosen if isinstance(chosen, bool) else column not in chosen

    def can_copy_from(self, old: OldPages) -> bool:
        """Whether pages of `old` may be copied into this file: the same writer and schema."""
        return old.matches(self._footer_template())

    def add_key_value_metadata(self, key_values: Mapping[str, str]) -> None:
        self._open()
        self.key_values.update(key_values)

    def close(self) -> None:
        """Write the footer. The sink is left open (as `ParquetWriter` leaves a file object)."""
        if self._closed:
            return
        self._closed = True
        template = self._footer_template()
        # Arrow's order: the entries added, then its own (the Arrow schema, when stored).
        entries = dict(self.key_values) | {k: v for k, v in parquet_footer.key_values(template).items()
                                           if k not in self.key_values}
        tail = parquet_footer.footer(template, self.rows, self.row_groups, entries)
        self.sink.write(tail)
        self.pos += len(tail)

    def _open(self) -> None:
        if self._closed:  # as pyarrow's writer refuses: bytes after the footer would make no Parquet file
            raise ValueError("the Parquet writer is closed")

    def __enter__(self) -> DeflatingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _encoded(self, table: pa.Table) -> memoryview:
        """`table` as an uncompressed Parquet file of one row group, as Arrow writes it (a view of
        Arrow's buffer, not a copy)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        with pq.ParquetWriter(sink, table.schema, compression="none", write_page_index=False,
                              data_page_version="1.0", **self.options) as writer:
            if table.num_rows:
                writer.write_table(table, row_group_size=table.num_rows)
        return memoryview(sink.getvalue()).cast("B")  # Arrow exports signed bytes

    def _footer_template(self) -> Struct:
        if self._template is None:  # the schema's footer, from an empty file
            self._template = _footer(self._encoded(self.schema.empty_table()))
        return self._template

    def _row_group(self, table: pa.Table, prefixes: Mapping[int, PagePrefix]) -> None:
        """Write one row group. Columns are encoded from the row their copied prefix ends at (row 0
        without one), those starting at one row together, in runs of at most `BATCH_BYTES`; each
        run's pages are deflated; then every column's prefix and pages are written in schema order."""
        rows = table.num_rows
        prefixes = {i: p for i, p in prefixes.items() if p.rows < rows or (p.rows == rows and p.whole_chunk)}
        statistics = self._statistics(table, [i for i, p in prefixes.items() if p.rows < rows])
        prefixes = {i: p for i, p in prefixes.items() if p.rows == rows or i in statistics}
        by_start: dict[int, list[int]] = {}
        for i in range(table.num_columns):
            start = prefixes[i].rows if i in prefixes else 0
            if start < rows:
                by_start.setdefault(start, []).append(i)
        encoded: dict[int, list[tuple[_ChunkPages, list[bytearray]]]] = {}  # per column, its leaves
        first: Struct | None = None
        for start, indices in sorted(by_start.items()):
            part = table.select(indices).slice(start)
            for fields in _column_batches(part, BATCH_BYTES):
                data = self._encoded(part if len(fields) == part.num_columns else part.select(fields))
                meta = _footer(data)
                if start == 0 and len(fields) == table.num_columns and self._template is None:
                    self._template = meta
                row_groups = meta.get_list(F_ROW_GROUPS)
                if len(row_groups) != 1 or not isinstance(rg := row_groups[0], Struct):
                    raise AssertionError(f"Arrow wrote {len(row_groups)} row groups for one")
                first = first or rg
                chunks = [_chunk_pages(data, chunk) for chunk in rg.get_list(R_COLUMNS) if isinstance(chunk, Struct)]
                packed = iter(_deflate_all([data[at:at + size] for pages in chunks for _, at, size in pages.pages],
                                           self.level, pool=self.deflate_pool))
                leaves = iter(chunks)
                for field in fields:
                    mine = itertools.islice(leaves, _leaf_count(part.field(field).type))
                    encoded[indices[field]] = [(pages, [next(packed) for _ in pages.pages]) for pages in mine]
                del data
        columns = [chunk for i in range(table.num_columns)
                   for chunk in self._column(encoded.get(i, []), prefixes.get(i), statistics.get(i))]
        # With every column copied whole no encode gave a RowGroup: start from the fields Arrow's carry.
        template = Struct(list(first.fields)) if first is not None else Struct([(R_TOTAL_COMPRESSED, I64, 0)])
        template.put(R_NUM_ROWS, I64, rows)
        byte_size = sum(_int(c.get_struct(C_META), M_UNCOMPRESSED) for c in columns)
        self.row_groups.append(parquet_footer.row_group(template, columns, byte_size, len(self.row_groups)))
        self.rows += rows

    def _column(self, encoded: list[tuple[_ChunkPages, list[bytearray]]], prefix: PagePrefix | None,
                statistics: Struct | None) -> list[Struct]:
        """Write one column of the row group: its copied prefix, then its encoded pages (one chunk
        per leaf of a nested column, which never has a prefix); its ColumnChunks."""
        at = self.pos
        if prefix is not None:
            self.sink.write(prefix.data)
            self.pos += len(prefix.data)
            if not encoded:  # the whole old chunk, rows and statistics alike
                chunk = prefix.chunk
                moved = parquet_footer.moved_chunk(chunk.meta, chunk.start, chunk.length, at)
                if not chunk.meta.get_int(C_FILE_OFFSET):
                    moved.put(C_FILE_OFFSET, I64, 0)  # as Arrow writes it (deprecated, unread)
                return [moved]
            if len(encoded) != 1:
                raise AssertionError("copied pages into a column of several leaves")
        columns = []
        for pages, packed in encoded:
            pieces, column = pages.deflated(packed, self.pos)
            for piece in pieces:
                self.sink.write(piece)
                self.pos += len(piece)
            columns.append(column)
        return columns if prefix is None else [_with_prefix(columns[0], prefix, at, statistics)]

    def _statistics(self, table: pa.Table, indices: Sequence[int]) -> dict[int, Struct]:
        """The chunk statistics of these columns over all the row group's rows, as Arrow writes them:
        Arrow encodes each column's least and greatest value (so its rules for NaN, signed zeros and
        long values apply as to the whole column), and the null count is the column's. A column
        whose bounds Arrow cannot compute is left out (it is then encoded whole)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        bounds: dict[int, pa.Array] = {}
        for i in indices:
            column = table.column(i)
            try:
                low_high = pc.min_max(column)
                bounds[i] = pa.array([low_high["min"], low_high["max"]], column.type)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
                continue
        if not bounds:
            return {}
        names = [self.schema.names[i] for i in bounds]
        meta = _footer(self._encoded(pa.Table.from_arrays(list(bounds.values()),
                                                          schema=pa.schema([self.schema.field(n) for n in names]))))
        found: dict[int, Struct] = {}
        rg = meta.get_list(F_ROW_GROUPS)[0]
        assert isinstance(rg, Struct)
        for i, chunk in zip(bounds, rg.get_list(R_COLUMNS), strict=True):
            assert isinstance(chunk, Struct)
            stats = chunk.get_struct(C_META).get_struct(M_STATISTICS)  # type: ignore[union-attr]
            if stats is None:
                continue  # no statistics written (`write_statistics`): none for the column either
            stats = Struct(list(stats.fields))
            if stats.has(ST_NULL_COUNT):
                stats.put(ST_NULL_COUNT, I64, table.column(i).null_count)
            found[i] = stats
        return found


def _with_prefix(column: Struct, prefix: PagePrefix, at: int, statistics: Struct | None) -> Struct:
    """`column`, a chunk's encoded pages, as the chunk starting at `at` with `prefix`'s copied pages
    before them: values, sizes, encodings and page counts add up; statistics are the whole chunk's."""
    meta = column.get_struct(C_META)
    assert meta is not None
    if meta.get_int(M_DICTIONARY_PAGE):
        raise AssertionError("a dictionary page after copied pages")
    new_meta = Struct(list(meta.fields))
    new_meta.put(M_NUM_VALUES, I64, _int(meta, M_NUM_VALUES) + prefix.rows)
    new_meta.put(M_COMPRESSED, I64, _int(meta, M_COMPRESSED) + len(prefix.data))
    new_meta.put(M_UNCOMPRESSED, I64, _int(meta, M_UNCOMPRESSED) + prefix.uncompressed)
    new_meta.put(M_DATA_PAGE, I64, at)
    encodings = [e for e in meta.get_list(M_ENCODINGS) if isinstance(e, int)]
    new_meta.put(M_ENCODINGS, LIST, ThriftList(I32, [*encodings, *sorted(prefix.encodings - set(encodings))]))
    if meta.has(M_ENCODING_STATS):
        new_meta.put(M_ENCODING_STATS, LIST, ThriftList(STRUCT, _added_page_counts(
            meta.get_list(M_ENCODING_STATS), prefix.page_encodings)))
    if statistics is not None:
        new_meta.put(M_STATISTICS, STRUCT, statistics)
    else:
        new_meta.drop(M_STATISTICS)
    new_meta.drop(M_SIZE_STATISTICS)  # optional; the encoded pages' alone would understate the chunk
    new = Struct(list(column.fields))
    new.put(C_META, STRUCT, new_meta)
    if new.get_int(C_FILE_OFFSET):
        new.put(C_FILE_OFFSET, I64, at)
    return new


def _added_page_counts(stats: Sequence[object], pages: Sequence[tuple[int, int]]) -> list[Value]:
    """PageEncodingStats (page type, encoding, count) with the copied data pages counted in."""
    entries = [Struct(list(s.fields)) for s in stats if isinstance(s, Struct)]
    for encoding, count in pages:
        for entry in entries:
            if entry.get_int(1) == DATA_PAGE and entry.get_int(2) == encoding:
                entry.put(3, I32, (entry.get_int(3) or 0) + count)
                break
        else:
            entries.append(Struct([(1, I32, DATA_PAGE), (2, I32, encoding), (3, I32, count)]))
    return list(entries)


def _leaf_count(arrow_type: pa.DataType) -> int:
    """How many Parquet leaf columns (column chunks) a column of this Arrow type has."""
    import pyarrow as pa

    if pa.types.is_struct(arrow_type):
        return sum(_leaf_count(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if pa.types.is_map(arrow_type):
        return _leaf_count(arrow_type.key_type) + _leaf_count(arrow_type.item_type)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return _leaf_count(arrow_type.value_type)
    return 1


def _column_batches(table: pa.Table, limit: int) -> list[list[int]]:
    """The table's top-level columns in order, in runs of at most `limit` Arrow bytes (a larger
    column alone): each run is encoded as one file, so only its uncompressed encoding is held."""
    batches: list[list[int]] = [[]]
    held = 0
    for i, column in enumerate(table.columns):
        size = column.nbytes
        if batches[-1] and held + size > limit:
            batches.append([])
            held = 0
        batches[-1].append(i)
        held += size
    return batches


def _footer(data: memoryview) -> Struct:
    """The FileMetaData of a file Arrow just wrote."""
    length = int.from_bytes(data[-8:-4], "little")
    meta, end = decode_struct(data, what=_WHAT, offset=len(data) - 8 - length)
    if end != len(data) - 8 or data[-4:] != MAGIC:
        raise AssertionError("Arrow wrote a footer this module cannot find")
    return meta


# Deflates pages for every writer of the process; made on first use (and again in a forked child,
# which has the variable but not the threads).
_POOL: ThreadPoolExecutor | None = None
_WORKERS = min(4, os.cpu_count() or 1)
# A row group's pages are shared out only from this many bytes: below it, handing them to the pool
# costs more than deflating them here.
_PARALLEL_BYTES = 256 * 1024


def _deflate_all(bodies: Sequence[memoryview], level: int, *, pool: bool = True) -> list[bytearray]:
    """The pages deflated, in order. libdeflate releases the GIL, so a row group's pages are
    deflated by a small pool of threads, largest first (no thread left with a large page at the
    end), while the calling thread waits; a one-core machine, one page, few bytes, or a writer whose
    caller runs several side by side (`pool=False`: they keep the cores busy already), here."""
    global _POOL
    if not pool or _WORKERS < 2 or len(bodies) < 2 or sum(len(b) for b in bodies) < _PARALLEL_BYTES:
        return [deflate.gzip_compress(body, level) for body in bodies]
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="deflate")
    order = sorted(range(len(bodies)), key=lambda i: -len(bodies[i]))
    done = dict(zip(order, _POOL.map(lambda i: deflate.gzip_compress(bodies[i], level), order), strict=True))
    return [done[i] for i in range(len(bodies))]


def _forget_pool() -> None:
    global _POOL
    _POOL = None


os.register_at_fork(after_in_child=_forget_pool)


class _PageHeader:
    """A page header of the uncompressed row group, as its bytes: rewritten for a compressed body by
    splicing the new `compressed_page_size` into them, not by decoding and encoding the header (its
    statistics and all); a header with a CRC is re-encoded whole, its CRC recomputed."""

    __slots__ = ("_crc", "_size_span", "kind", "raw", "size")

    def __init__(self, raw: memoryview, kind: int, size: int, size_span: tuple[int, int], crc: bool) -> None:
        self.raw, self.kind, self.size, self._size_span, self._crc = raw, kind, size, size_span, crc

    def for_body(self, body: bytes | bytearray) -> bytes:
        """The header of this page with `body` as its stored bytes."""
        if self._crc:  # the CRC32 of the page as stored, a signed i32
            header, _ = decode_struct(self.raw, what=_WHAT)
            header.put(P_COMPRESSED_SIZE, I32, len(body))
            crc = zlib.crc32(body)
            header.put(P_CRC, I32, crc - (1 << 32) if crc >= 1 << 31 else crc)
            return encode_struct(header)
        start, end = self._size_span
        return b"".join((self.raw[:start], zigzag_varint(len(body)), self.raw[end:]))


class _ChunkPages:
    """A column chunk of the uncompressed row group: its ColumnChunk and its pages (header, body
    offset, body size)."""

    def __init__(self, chunk: Struct, meta: Struct, pages: list[tuple[_PageHeader, int, int]]) -> None:
        self.chunk, self.meta, self.pages = chunk, meta, pages

    def deflated(self, packed: Sequence[bytearray], at: int) -> tuple[list[bytes | bytearray], Struct]:
        """The chunk's pages with `packed` as their bodies (header and body of each, in order) and
        its ColumnChunk for its new place at byte `at`."""
        pieces: list[bytes | bytearray] = []
        written = uncompressed = 0
        dictionary_at = data_at = None
        for (header, _, size), body in zip(self.pages, packed, strict=True):
            if header.kind == DICTIONARY_PAGE:
                dictionary_at = at
            elif data_at is None:
                data_at = at + written
            head = header.for_body(body)
            pieces += (head, body)
            written += len(head) + len(body)
            uncompressed += len(head) + size
        assert data_at is not None
        new_meta = Struct(list(self.meta.fields))
        new_meta.put(M_CODEC, I32, GZIP)
        new_meta.put(M_COMPRESSED, I64, written)
        new_meta.put(M_UNCOMPRESSED, I64, uncompressed)
        new_meta.put(M_DATA_PAGE, I64, data_at)
        if dictionary_at is not None:
            new_meta.put(M_DICTIONARY_PAGE, I64, dictionary_at)
        column = Struct(list(self.chunk.fields))
        column.put(C_META, STRUCT, new_meta)
        if column.get_int(C_FILE_OFFSET):  # deprecated; Arrow writes 0, older writers the chunk's start
            column.put(C_FILE_OFFSET, I64, at)
        return pieces, column


def _chunk_pages(data: memoryview, chunk: Struct) -> _ChunkPages:
    """The pages of one column chunk of `data`, checked to be what was asked of Arrow."""
    meta = chunk.get_struct(C_META)
    assert meta is not None
    if meta.get_int(M_INDEX_PAGE) or any(meta.has(f) for f in M_BLOOM) or any(chunk.has(f) for f in C_PAGE_INDEX):
        raise AssertionError("a page index or bloom filter where none was asked for")
    pos = meta.get_int(M_DICTIONARY_PAGE) or _int(meta, M_DATA_PAGE)
    end = pos + _int(meta, M_COMPRESSED)
    pages: list[tuple[_PageHeader, int, int]] = []
    seen_data = False
    while pos < end:
        header = _page_header(data, pos)
        if header.kind == DATA_PAGE:
            seen_data = True
        elif header.kind != DICTIONARY_PAGE or pages:
            raise AssertionError(f"Arrow wrote a page of type {header.kind} where data pages v1 were asked for")
        body_at = pos + len(header.raw)
        pages.append((header, body_at, header.size))
        pos = body_at + header.size
    if pos != end or not seen_data:
        raise AssertionError("a column chunk's pages do not fill it")
    return _ChunkPages(chunk, meta, pages)


def _page_header(data: memoryview, pos: int) -> _PageHeader:
    """The page header at `pos`: its type, body size (uncompressed, so both sizes are one) and where
    its compressed size is encoded."""
    scanned = scan_page_header(data, pos, what=_WHAT)
    values = [scanned.fields.get(f) for f in (P_TYPE, P_UNCOMPRESSED_SIZE, P_COMPRESSED_SIZE)]
    if any(v is None for v in values):
        raise AssertionError("Arrow left out a required page header field")
    kind, raw_size, size = cast(list[int], values)
    if raw_size != size or size < 0:
        raise AssertionError(f"an uncompressed page of sizes {raw_size} and {size}")
    start, stop = scanned.spans[P_COMPRESSED_SIZE]
    return _PageHeader(data[pos:scanned.end], kind, size, (start - pos, stop - pos), P_CRC in scanned.fields)


def _int(struct: Struct | None, field_id: int) -> int:
    value = struct.get_int(field_id) if struct is not None else None
    if value is None:
        raise AssertionError(f"Arrow left out a required Parquet footer field ({field_id})")
    return value


class TableWriter(Protocol):
    """What the writers here use of a Parquet writer: `ParquetWriter`'s or `DeflatingWriter`'s."""

    def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None: ...

    def add_key_value_metadata(self, key_values: Mapping[str, str]) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> TableWriter: ...

    def __exit__(self, *exc: object) -> None: ...


def parquet_writer(sink: BinaryIO, schema: pa.Schema, *, compression: str, compression_level: int | None = None,
                   deflate_pool: bool = True, **options: Any) -> TableWriter:
    """A Parquet writer for `compression` (pyarrow's codec names): gzip pages deflated by libdeflate
    at `compression_level` (Hudi's 6 when not given; Arrow's own default would be 9), any other codec
    by pyarrow's `ParquetWriter`. `deflate_pool`: gzip pages may be shared out to a pool of threads
    (`DeflatingWriter`); the other codecs ignore it."""
    import pyarrow.parquet as pq

    if compression == "gzip":
        return DeflatingWriter(sink, schema, level=HUDI_GZIP_LEVEL if compression_level is None else compression_level,
                               deflate_pool=deflate_pool, **options)
    return cast(TableWriter, pq.ParquetWriter(sink, schema, compression=compression,
                                              compression_level=compression_level, **options))
