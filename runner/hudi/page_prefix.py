"""The untouched leading pages of an old base file's column chunks, for a merge to copy as they are.

A copy-on-write merge rewrites a file group's base file with some old records replaced in place and
the inserts after them (`runner.writer.files.merge`), and cuts its row groups every `ROW_GROUP_ROWS`
rows. Where an old row group starts at the same row (every one, when the old file came from a merge;
the first, at least, when a create handle wrote it) and no record of its first rows is replaced,
the old chunk's first data pages hold exactly the values the new file has there.
Those pages are copied byte for byte, and only the rest of the column is encoded and deflated
(`parquet_deflate.DeflatingWriter`): an upsert's cost then follows the pages it changes, not the
size of the files it touches.

A page is copied only where the copy cannot differ from what encoding it again would give readers:

- the old file was written by the same Parquet writer (`created_by`) with the same schema elements
  as the new file (so the same physical types, logical types and repetitions), and the schema is
  flat (every column a top-level leaf, none repeated: a page's values are then its rows);
- the chunk is GZIP, has no dictionary page (a column chunk holds at most one dictionary, so the
  pages after a copied prefix are plain, as the new file's encoding of that column is), and its
  pages are data pages v1 that fill the chunk exactly;
- the page ends at or before the first replaced row.

Anything else gives no prefix, and the column is encoded whole as before. The chunk's statistics are
not taken from the old file (they cover the replaced rows too); the writer computes them over the
whole new column. The merge still decodes the whole old file, so a corrupt page fails the write
rather than being carried over.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runner.errors import CorruptMetadataError
from runner.hudi.parquet_copy import NotCopyable, ParsedChunk, ParsedFile, Source, footer_field, parse_footer
from runner.hudi.parquet_ids import (
    C_META,
    DATA_PAGE,
    F_CREATED_BY,
    F_SCHEMA,
    GZIP,
    M_CODEC,
    M_DICTIONARY_PAGE,
    M_NUM_VALUES,
    P_COMPRESSED_SIZE,
    P_TYPE,
    P_UNCOMPRESSED_SIZE,
    R_NUM_ROWS,
    S_CHILDREN,
    S_REPETITION,
)
from runner.hudi.parquet_pages import scan_page_header
from runner.hudi.thrift_compact import Struct

if TYPE_CHECKING:
    import pyarrow.parquet as pq

_REPEATED = 2
# DataPageHeader: the values' encoding, then those of the definition and repetition levels.
_DATA_ENCODINGS = (2, 3, 4)


@dataclass(frozen=True, slots=True)
class PagePrefix:
    """A column chunk's first `pages` data pages as stored (headers included): its first `rows` values."""

    data: memoryview
    rows: int
    pages: int
    uncompressed: int  # headers plus uncompressed bodies, as ColumnMetaData counts them
    encodings: frozenset[int]  # of the values and levels in these pages
    page_encodings: tuple[tuple[int, int], ...]  # (values' encoding, data pages), for `encoding_stats`
    chunk: ParsedChunk  # the old chunk, whose metadata holds when `whole_chunk`
    whole_chunk: bool  # every page of the old chunk


@dataclass(slots=True)
class _Page:
    end: int  # offset after its body, in the chunk's bytes
    rows: int  # values up to and including this page
    uncompressed: int  # bytes up to and including this page, ColumnMetaData's way
    encodings: frozenset[int]
    value_encoding: int


@dataclass(slots=True)
class _Chunk:
    data: bytes  # the chunk's bytes, from its first page on
    pages: list[_Page] | None  # None: it does not qualify


@dataclass(slots=True)
class OldPages:
    """An old base file, read for the pages a merge may copy (see module doc): its footer first, then
    each column chunk asked about, whole, when a row group is reached (`Source.read`: in memory, or
    byte ranges of storage). Only the current row group's chunks are held."""

    source: Source
    _parsed: ParsedFile | None = None
    _chunks: dict[tuple[int, int], _Chunk] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            self._parsed = parse_footer(self.source)
        except (NotCopyable, CorruptMetadataError):
            self._parsed = None  # nothing of it is copied; the merge encodes every column

    @classmethod
    def of_bytes(cls, path: str, data: bytes) -> OldPages:
        return cls(Source.of_bytes(path, data))

    def matches(self, template: Struct) -> bool:
        """Whether this file's pages may go into a file whose footer (schema, writer) is `template`."""
        if self._parsed is None:
            return False
        meta = self._parsed.meta
        return (footer_field(meta, F_CREATED_BY) == footer_field(template, F_CREATED_BY)
                and footer_field(meta, F_SCHEMA) == footer_field(template, F_SCHEMA)
                and _flat(meta))

    def laid_out_as(self, metadata: pq.FileMetaData) -> bool:
        """Whether this file's row groups and chunks are where `metadata` (the footer the merge's
        other reader decoded) says: two readers of one path must have read one file, or the pages
        copied would not be the records decoded (a base file replaced in between breaks Hudi's
        rules, but must not mix two files into one)."""
        if self._parsed is None or len(self._parsed.row_groups) != metadata.num_row_groups:
            return False
        for i, (rg, chunks) in enumerate(self._parsed.row_groups):
            decoded = metadata.row_group(i)
            if rg.get_int(R_NUM_ROWS) != decoded.num_rows or len(chunks) != decoded.num_columns:
                return False
            for c, chunk in enumerate(chunks):
                other = decoded.column(c)
                meta = chunk.meta.get_struct(C_META)
                start = other.dictionary_page_offset or other.data_page_offset
                if (meta is None or chunk.start != start or chunk.length != other.total_compressed_size
                        or meta.get_int(M_NUM_VALUES) != other.num_values):
                    return False
        return True

    def prefix(self, row_start: int, column: int, untouched: int) -> PagePrefix | None:
        """The leading pages of `column` in the row group starting at row `row_start` that lie within
        its first `untouched` rows; None when there are none to copy."""
        found = self._row_group(row_start)
        if found is None or untouched <= 0:
            return None
        chunk = self._chunk(found, column)
        pages = chunk.pages if chunk is not None else None
        if not pages:
            return None
        taken = 0
        while taken < len(pages) and pages[taken].rows <= untouched:
            taken += 1
        if taken == 0:
            return None
        assert self._parsed is not None and chunk is not None
        last, copied = pages[taken - 1], pages[:taken]
        counts = Counter(p.value_encoding for p in copied)
        return PagePrefix(memoryview(chunk.data)[:last.end], last.rows, taken, last.uncompressed,
                          frozenset().union(*(p.encodings for p in copied)), tuple(sorted(counts.items())),
                          self._parsed.row_groups[found][1][column], taken == len(pages))

    def _row_group(self, row_start: int) -> int | None:
        if self._parsed is None:
            return None
        start = 0
        for i, (rg, _) in enumerate(self._parsed.row_groups):
            if start == row_start:
                return i
            start += rg.get_int(R_NUM_ROWS) or 0
        return None

    def _chunk(self, row_group: int, column: int) -> _Chunk | None:
        """The chunk, read and walked once; the chunks of earlier row groups are let go (a merge
        asks about row groups in order)."""
        assert self._parsed is not None
        chunks = self._parsed.row_groups[row_group][1]
        if column >= len(chunks):
            return None
        key = (row_group, column)
        if key not in self._chunks:
            for held in [k for k in self._chunks if k[0] < row_group]:
                del self._chunks[held]
            where = chunks[column]
            data = bytes(self.source.read(where.start, where.length))
            self._chunks[key] = _Chunk(data, _data_pages(data, where) if len(data) == where.length else None)
        return self._chunks[key]


def _flat(meta: Struct) -> bool:
    elements = meta.get_list(F_SCHEMA)
    return all(isinstance(e, Struct) and not e.get_int(S_CHILDREN) and e.get_int(S_REPETITION) != _REPEATED
               for e in elements[1:])


def _data_pages(data: bytes, chunk: ParsedChunk) -> list[_Page] | None:
    """A GZIP chunk's data pages v1 (`data` is the chunk's bytes; page ends are offsets into them),
    when it has no dictionary and its pages fill it exactly."""
    meta = chunk.meta.get_struct(C_META)
    if meta is None or meta.get_int(M_CODEC) != GZIP or (meta.get_int(M_DICTIONARY_PAGE) or 0) > 0:
        return None
    pos, end = 0, len(data)
    pages: list[_Page] = []
    rows = uncompressed = 0
    try:
        while pos < end:
            scanned = scan_page_header(data, pos, what="a page header")
            header, v1, body = scanned.fields, scanned.v1(), scanned.end
            values, encoding = v1.get(1), v1.get(2)
            stored, raw = header.get(P_COMPRESSED_SIZE), header.get(P_UNCOMPRESSED_SIZE)
            if (header.get(P_TYPE) != DATA_PAGE or not values or values < 0 or encoding is None
                    or stored is None or stored < 0 or raw is None or raw < 0):
                return None  # a negative size would also walk back: never a page to copy
            uncompressed += body - pos + raw  # the header, then the body before compression
            rows += values
            pos = body + stored
            pages.append(_Page(pos, rows, uncompressed,
                               frozenset(e for f in _DATA_ENCODINGS if (e := v1.get(f)) is not None), encoding))
    except CorruptMetadataError:
        return None
    if pos != end or rows != meta.get_int(M_NUM_VALUES):
        return None
    return pages
