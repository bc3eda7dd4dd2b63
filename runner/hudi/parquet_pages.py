"""Parquet page headers read for their integer fields alone.

The writer's deflate step rewrites each page header Arrow encodes with its new compressed size, and
the merge's page copy walks an old chunk's headers for their sizes and value counts: both need a
few integers of headers whose statistics they never look at, so the headers are scanned
(`thrift_compact.scan_struct`) rather than decoded.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.hudi.parquet_ids import P_DATA_V1
from runner.hudi.thrift_compact import I16, I32, I64, STRUCT, scan_struct

_INTEGERS = (I16, I32, I64)


@dataclass(frozen=True, slots=True)
class ScannedPageHeader:
    """A page header's integer fields, read without decoding the rest (`scan_page_header`)."""

    fields: dict[int, int]  # PageHeader's integer fields by id
    spans: dict[int, tuple[int, int]]  # where each of them is encoded: [start, end) in the buffer
    end: int  # the offset after the header: its page's body starts there
    data: bytes | memoryview
    what: str
    v1_at: int | None  # where its DataPageHeader starts, if it has one

    def v1(self) -> dict[int, int]:
        """The DataPageHeader's integer fields (values, encodings); empty without one. Scanned only
        when asked: the deflate step needs none of them."""
        if self.v1_at is None:
            return {}
        scanned, _ = scan_struct(self.data, what=self.what, offset=self.v1_at)
        return {fid: value for fid, kind, value, _, _ in scanned if kind in _INTEGERS and isinstance(value, int)}


def scan_page_header(data: bytes | memoryview, offset: int, *, what: str) -> ScannedPageHeader:
    """The page header at `offset` (`thrift_compact.scan_struct`: its statistics are never built).

    Raises:
        CorruptMetadataError: the bytes are not a Thrift struct (`what` names the file).
    """
    scanned, end = scan_struct(data, what=what, offset=offset)
    fields: dict[int, int] = {}
    spans: dict[int, tuple[int, int]] = {}
    v1_at = None
    for fid, kind, value, start, stop in scanned:
        if kind in _INTEGERS and isinstance(value, int):
            fields[fid], spans[fid] = value, (start, stop)
        elif fid == P_DATA_V1 and kind == STRUCT:
            v1_at = start
    return ScannedPageHeader(fields, spans, end, data, what, v1_at)
