"""HFile v3 as Hudi's native hudi-io writer produces it, for metadata-table log blocks.

The metadata table stores its records as HFiles: inside every HFILE_DATA log block, and as the
base files MDT compaction writes. An HFile is a run of blocks followed by a 4096-byte trailer:

    [DATABLK*]+ [METABLKc]* [IDXROOT2 data index] [IDXROOT2 meta index] [FILEINF2] [trailer]

Every block has a 33-byte header, its own gzip member as payload (codec 1) and checksum bytes after
it. Cells are `u32 keyLen, u32 valueLen, u16 rowLen, row, u8 0 (family), u64 LATEST_TIMESTAMP,
u8 4 (Put), value, u8 0 (MVCC)`, sorted by the unsigned bytes of the row. Facts checked against
apache/hudi `hudi-io/.../io/hfile/HFileWriterImpl.java`, `HFileBlock.java`, `HFileTrailer.java`
and the fixture tables (see README.md in this package).

`read_hfile` and `write_hfile` are pure: bytes in, bytes out.
"""

from __future__ import annotations

import abc
import operator
import os
import struct
import zlib
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice, pairwise
from operator import itemgetter

import numpy as np
import numpy.typing as npt
from isal import isal_zlib

from runner.errors import CorruptMetadataError
from runner.hudi.mdt.crc32c import chunk_checksums

TRAILER_SIZE = 4096
TRAILER_MAGIC = b'TRABLK"$'
DATA_MAGIC = b"DATABLK*"
ROOT_INDEX_MAGIC = b"IDXROOT2"
FILE_INFO_MAGIC = b"FILEINF2"
META_MAGIC = b"METABLKc"
HEADER_SIZE = 33
BYTES_PER_CHECKSUM = 16384
CHECKSUM_NULL = 0
CHECKSUM_CRC32C = 2
CODEC_GZ = 1
CODEC_NONE = 2
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
LATEST_TIMESTAMP = 0x7FFFFFFFFFFFFFFF
KEY_TYPE_PUT = 4
# Hudi's HFileContext default block size: a new data block starts once this many bytes are buffered.
DEFAULT_BLOCK_SIZE = 64 * 1024

# Java's default deflate level, which Hudi's HFile writers use (with zlib, so zlib gives their bytes).
GZIP_LEVEL = 6
# For a clean's millions of index tombstones (`fast`): ISA-L's deflate at its level 1. 1.6 M
# column-stats tombstones, 280 MB of cells, on one core: zlib level 6 1.62 s and 36.2 MB, zlib
# level 1 0.89 s and 37.3 MB, ISA-L level 1 0.18 s and 36.6 MB. Readers inflate any deflate stream
# alike; the bytes are then not those Hudi would write, only the records.
FAST_GZIP_LEVEL = 1
# The root index writes key lengths as protobuf varints and Hudi reads them as Hadoop vints; the
# two encodings agree only below 128, so longer first keys would be misread by Hudi.
MAX_INDEX_KEY = 125

EXPECTED = 'an HFile v3 (trailer magic TRABLK"$, major version 3)'


@dataclass(frozen=True, slots=True)
class HFile:
    """The decoded content of one HFile: cells in file order plus the file-info map."""

    cells: tuple[tuple[bytes, bytes], ...]
    file_info: dict[bytes, bytes]
    checksum_type: int
    codec: int


@dataclass(frozen=True, slots=True)
class _Trailer:
    minor_version: int
    file_info_offset: int
    load_on_open_offset: int
    data_index_count: int
    meta_index_count: int
    entry_count: int
    codec: int


# --- reading -------------------------------------------------------------------------------------


def read_hfile(data: bytes, *, where: str) -> HFile:
    """Decode an HFile; `where` names the file (and block) in error messages."""
    try:
        return _read_hfile(data, where)
    except (struct.error, IndexError) as error:
        raise _corrupt(where, "complete blocks", f"truncated data ({error})") from error


def read_hfile_info(data: bytes, *, where: str) -> dict[bytes, bytes]:
    """Only the file-info map of an HFile (trailer, then one block), without its data blocks."""
    try:
        trailer = _read_trailer(data, where)
        payload, _ = _read_block(data, trailer.file_info_offset, FILE_INFO_MAGIC, trailer.codec, where)
        return _parse_file_info(payload, where)
    except (struct.error, IndexError) as error:
        raise _corrupt(where, "complete blocks", f"truncated data ({error})") from error


def _read_hfile(data: bytes, where: str) -> HFile:
    trailer = _read_trailer(data, where)
    index_payload, checksum_type = _read_block(
        data, trailer.load_on_open_offset, ROOT_INDEX_MAGIC, trailer.codec, where
    )
    # HBase (minor version 3) writes index key lengths as Hadoop vints, hudi-io (minor 0) as
    # protobuf varints; the two agree below 128.
    hadoop = trailer.minor_version != 0
    data_offsets = [
        offset for offset, _ in _parse_root_index(index_payload, trailer.data_index_count, where, hadoop=hadoop)
    ]
    info_payload, _ = _read_block(data, trailer.file_info_offset, FILE_INFO_MAGIC, trailer.codec, where)
    cells: list[tuple[bytes, bytes]] = []
    for offset in data_offsets:
        payload, _ = _read_block(data, offset, DATA_MAGIC, trailer.codec, where)
        cells.extend(_parse_cells(payload, where))
    if len(cells) != trailer.entry_count:
        raise _corrupt(where, f"trailer entry_count {trailer.entry_count}", f"{len(cells)} cells")
    return HFile(tuple(cells), _parse_file_info(info_payload, where), checksum_type, trailer.codec)


def _read_trailer(data: bytes, where: str) -> _Trailer:
    if len(data) < TRAILER_SIZE or data[-TRAILER_SIZE:][:8] != TRAILER_MAGIC:
        raise _corrupt(where, EXPECTED, f"{len(data)} bytes without the trailer magic")
    version = struct.unpack(">I", data[-4:])[0]
    if version & 0x00FFFFFF != 3:
        raise _corrupt(where, EXPECTED, f"major version {version & 0x00FFFFFF}")
    body = data[-TRAILER_SIZE + 8 : -4]
    length, pos = _read_varint(body, 0, where)
    fields = _parse_proto(body[pos : pos + length], where)
    return _Trailer(
        minor_version=version >> 24,
        file_info_offset=_int_field(fields, 1),
        load_on_open_offset=_int_field(fields, 2),
        data_index_count=_int_field(fields, 5),
        meta_index_count=_int_field(fields, 6),
        entry_count=_int_field(fields, 7),
        codec=_int_field(fields, 12, default=CODEC_NONE),
    )


def _read_block(data: bytes, offset: int, magic: bytes, codec: int, where: str) -> tuple[bytes, int]:
    """Return (uncompressed payload, checksum type); checksums are not verified, as in hudi-rs."""
    header = data[offset : offset + HEADER_SIZE]
    if len(header) < HEADER_SIZE or header[:8] != magic:
        raise _corrupt(where, f"block {magic.decode()} at offset {offset}", repr(header[:8]))
    _on_disk, uncompressed, _prev, checksum_type, _per_checksum, data_with_header = struct.unpack(">IIqBII", header[8:])
    payload_end = offset + data_with_header
    raw = data[offset + HEADER_SIZE : payload_end]
    payload = _decompress(raw, codec, where) if uncompressed else b""
    if len(payload) != uncompressed:
        raise _corrupt(where, f"{uncompressed} uncompressed bytes in {magic.decode()} at {offset}", f"{len(payload)}")
    return payload, checksum_type


def _decompress(raw: bytes, codec: int, where: str) -> bytes:
    if codec == CODEC_NONE:
        return raw
    if codec != CODEC_GZ:
        raise _corrupt(where, "compression codec 1 (GZ) or 2 (NONE)", f"codec {codec}")
    try:
        return zlib.decompress(raw, wbits=31)
    except zlib.error as error:
        raise _corrupt(where, "a gzip-compressed block", str(error)) from error


def _parse_root_index(payload: bytes, count: int, where: str, *, hadoop: bool = False) -> list[tuple[int, int]]:
    entries: list[tuple[int, int]] = []
    pos = 0
    for _ in range(count):
        offset, size = struct.unpack_from(">qI", payload, pos)
        key_len, pos = _read_hadoop_vint(payload, pos + 12) if hadoop else _read_varint(payload, pos + 12, where)
        pos += key_len
        entries.append((offset, size))
    return entries


def _parse_cells(payload: bytes, where: str) -> Iterable[tuple[bytes, bytes]]:
    pos = 0
    while pos < len(payload):
        key_len, value_len, row_len = struct.unpack_from(">IIH", payload, pos)
        key_start = pos + 8
        row = payload[key_start + 2 : key_start + 2 + row_len]
        value = payload[key_start + key_len : key_start + key_len + value_len]
        if key_len != row_len + 12 or len(value) != value_len:
            raise _corrupt(
                where,
                "cells of (row, family 0, timestamp, type) keys",
                f"key length {key_len} for a {row_len}-byte row",
            )
        pos = key_start + key_len + value_len + 1  # the trailing MVCC vlong is always 0 here
        yield row, value


def _parse_file_info(payload: bytes, where: str) -> dict[bytes, bytes]:
    if payload[:4] != b"PBUF":
        raise _corrupt(where, "file info starting with PBUF", repr(payload[:4]))
    length, pos = _read_varint(payload, 4, where)
    info: dict[bytes, bytes] = {}
    for tag, value in _iter_proto(payload[pos : pos + length], where):
        if tag == 1 and isinstance(value, bytes):
            pair = dict(_iter_proto(value, where))
            first, second = pair.get(1, b""), pair.get(2, b"")
            if not isinstance(first, bytes) or not isinstance(second, bytes):
                raise _corrupt(where, "file-info entries of two byte strings", repr(pair))
            info[first] = second
    return info


# --- writing -------------------------------------------------------------------------------------


def write_hfile(
    cells: Sequence[tuple[bytes, bytes]] | Cells,
    file_info: Sequence[tuple[bytes, bytes]],
    *,
    checksum_type: int = CHECKSUM_NULL,
    block_size: int = DEFAULT_BLOCK_SIZE,
    hbase: bool = False,
    fast: bool = False,
) -> bytes:
    """Encode sorted, unique cells as a GZ-compressed HFile, laid out as hudi-io's writer does.

    `cells`: (row, value) pairs, or `Cells` that lay themselves out (a clean's millions of index
    tombstones, built as whole arrays). `file_info` comes after the entries hudi-io always writes
    (last key, average lengths, key-value version, memstore ts are derived here;
    `hfile.CREATE_TIME_TS` is the caller's, to keep this pure).

    `hbase=True` lays the file out as HBase's `HFileWriterImpl` (Hudi 0.x and 1.0) does, which is
    what HBase's reader in Hudi 0.14/0.15 needs: whole KeyValue keys in the root index and in
    `hfile.LASTKEY` (HBase's comparator reads family, qualifier and type from index keys), file
    info sorted by key, each block's offset of the previous block of its type, and HBase's trailer
    statistics. Pass `standard_file_info(..., hbase=True)` and checksum type CRC32C with it.

    `fast`: deflate the data blocks with ISA-L at `FAST_GZIP_LEVEL` rather than as Hudi's writers
    do (zlib at `GZIP_LEVEL`, their exact bytes); both read the same.
    """
    run = cells if isinstance(cells, Cells) else CellRun.from_pairs(cells)
    bodies: list[bytes] = []
    offset = 0
    index: list[tuple[int, int, bytes]] = []
    previous = -1
    data_size = 0
    for first, size, packed in _compressed_blocks(run, block_size, fast):
        body = _unchecked(DATA_MAGIC, packed, size, checksum_type, previous if hbase else -1)
        bodies.append(body)
        length = len(body) + _checksum_length(len(body))
        index.append((offset, length, _index_key(run.row(first), hbase=hbase)))
        previous = offset
        offset += length
        data_size += size
    parts = [piece for pair in zip(bodies, _checksums(bodies, checksum_type), strict=True) for piece in pair]
    out = bytearray()
    last_data_offset = index[-1][0] if index else 0
    index_offset = offset
    index_payload = b"".join(_index_entry(*entry, hbase=hbase) for entry in index)
    out += _block(ROOT_INDEX_MAGIC, index_payload, checksum_type)
    # meta index: present even when empty
    out += _block(ROOT_INDEX_MAGIC, b"", checksum_type, index_offset if hbase else -1)
    info_offset = offset + len(out)
    info_payload = _file_info_payload(sorted(file_info) if hbase else file_info)
    out += _block(FILE_INFO_MAGIC, info_payload, checksum_type)
    if hbase:
        # HBase sums the uncompressed size with header of the data blocks, the meta index and the
        # file info (not the data index), plus the trailer; field 3 is the data index's size.
        total = data_size + HEADER_SIZE * len(index) + HEADER_SIZE + HEADER_SIZE + len(info_payload) + TRAILER_SIZE
        statistics = [(3, len(index_payload)), (4, total)]
    else:
        statistics = [(3, data_size)]
    trailer = _proto(
        [
            (1, info_offset),
            (2, index_offset),
            *statistics,
            (5, len(index)),
            (6, 0),
            (7, len(run)),
            (8, 1),
            (9, 0),
            (10, last_data_offset),
            (11, COMPARATOR.encode()),
            (12, CODEC_GZ),
        ]
    )
    body = TRAILER_MAGIC + _varint(len(trailer)) + trailer
    # major version 3 in the low bytes; HBase also writes its minor version 3 in the top byte
    version = (3 << 24 | 3) if hbase else 3
    out += body + b"\x00" * (TRAILER_SIZE - 4 - len(body)) + struct.pack(">I", version)
    parts.append(bytes(out))
    return b"".join(parts)


def standard_file_info(
    cells: Sequence[tuple[bytes, bytes]] | Cells, *, created_ms: int, hbase: bool = False
) -> list[tuple[bytes, bytes]]:
    """The file-info entries hudi-io's writer adds to every HFile, in the order it writes them.

    With `hbase`, as HBase's writer has them: LASTKEY is the whole KeyValue key (absent when
    empty) and AVG_KEY_LEN averages whole key lengths.
    """
    if isinstance(cells, Cells):
        count, last = len(cells), cells.row(len(cells) - 1) if len(cells) else b""
        row_bytes, value_bytes = cells.row_and_value_bytes()
    else:
        count, last = len(cells), cells[-1][0] if cells else b""
        row_bytes = sum(map(len, map(itemgetter(0), cells)))
        value_bytes = sum(map(len, map(itemgetter(1), cells)))
    last_key = struct.pack(">H", len(last)) + last + (KEY_SUFFIX if hbase else b"")
    # HBase averages whole KeyValue key lengths (row length, row, family, timestamp, type)
    key_extra = (2 + len(KEY_SUFFIX)) * count if hbase else 0
    return [
        *([] if hbase and not count else [(b"hfile.LASTKEY", last_key)]),
        (b"hfile.AVG_VALUE_LEN", struct.pack(">i", value_bytes // max(count, 1))),
        (b"hfile.AVG_KEY_LEN", struct.pack(">i", (row_bytes + key_extra) // max(count, 1))),
        (b"KEY_VALUE_VERSION", struct.pack(">i", 1)),
        (b"MAX_MEMSTORE_TS_KEY", struct.pack(">q", 0)),
        (b"hfile.CREATE_TIME_TS", struct.pack(">q", created_ms)),
    ]


def _check_sorted(cells: Sequence[tuple[bytes, bytes]]) -> None:
    rows = list(map(itemgetter(0), cells))
    # map(lt) runs the comparisons in C; only a failure walks the rows again to name the culprit.
    if all(map(operator.lt, rows, islice(rows, 1, None))):
        return
    for previous, row in pairwise(rows):
        if not previous < row:
            raise ValueError(f"HFile cells must be strictly ascending by key; {previous!r} is followed by {row!r}")


# family length 0, LATEST_TIMESTAMP, key type Put: the same for every cell
KEY_SUFFIX = b"\x00" + struct.pack(">QB", LATEST_TIMESTAMP, KEY_TYPE_PUT)
# u32 keyLen, u32 valueLen, u16 rowLen + row + family/timestamp/type + value + MVCC 0
CELL_PREFIX = 4 + 4 + 2
CELL_OVERHEAD = CELL_PREFIX + len(KEY_SUFFIX) + 1
_CELL_LENGTHS = struct.Struct(">IIH")


class Cells(abc.ABC):
    """Sorted, unique cells that the HFile writer asks to lay out range by range, each cell as
    data blocks hold it: `u32 keyLen, u32 valueLen, u16 rowLen, row, KEY_SUFFIX, value, u8 0`.

    `ends[i]` is the end offset of cell i in that layout, so blocks are cut at cumulative offsets
    before anything is laid out. Whoever builds cells vouches for their order
    (`CellRun.from_pairs` checks it).
    """

    ends: npt.NDArray[np.int64]

    @abc.abstractmethod
    def row(self, i: int) -> bytes:
        """The row (key) of cell i."""

    @abc.abstractmethod
    def lay_out(self, first: int, end: int) -> bytes | memoryview:
        """Cells `first` up to (not including) `end`, back to back."""

    @abc.abstractmethod
    def row_and_value_bytes(self) -> tuple[int, int]:
        """Total row and value lengths, for the file info's averages."""

    def __len__(self) -> int:
        return len(self.ends)

    def start(self, i: int) -> int:
        return int(self.ends[i - 1]) if i else 0

    def block_bounds(self, block_size: int) -> list[tuple[int, int]]:
        """(first, end) cell indexes of each data block: like hudi-io, a block ends with the cell
        that brings it to `block_size` bytes or more."""
        bounds = []
        first, base, count = 0, 0, len(self.ends)
        while first < count:
            end = min(int(np.searchsorted(self.ends, base + block_size, side="left")) + 1, count)
            bounds.append((first, end))
            first, base = end, int(self.ends[end - 1])
        return bounds


class CellRun(Cells):
    """Cells already laid out in one buffer."""

    def __init__(self, data: bytes | memoryview, ends: npt.NDArray[np.int64]) -> None:
        self.data = data
        self.ends = ends

    @classmethod
    def from_pairs(cls, cells: Sequence[tuple[bytes, bytes]]) -> CellRun:
        _check_sorted(cells)
        prefixes: dict[tuple[int, int], bytes] = {}  # keys and values mostly share their lengths
        pieces: list[bytes] = []
        for row, value in cells:
            lengths = (len(row), len(value))
            prefix = prefixes.get(lengths)
            if prefix is None:
                prefix = prefixes[lengths] = _CELL_LENGTHS.pack(lengths[0] + 12, lengths[1], lengths[0])
            pieces += (prefix, row, KEY_SUFFIX, value, b"\x00")
        sizes = np.fromiter((CELL_OVERHEAD + len(r) + len(v) for r, v in cells), np.int64, len(cells))
        return cls(b"".join(pieces), np.cumsum(sizes))

    def row(self, i: int) -> bytes:
        start = self.start(i)
        (length,) = struct.unpack_from(">H", self.data, start + 8)
        return bytes(self.data[start + CELL_PREFIX : start + CELL_PREFIX + length])

    def lay_out(self, first: int, end: int) -> memoryview:
        return memoryview(self.data)[self.start(first) : self.start(end)]

    def row_and_value_bytes(self) -> tuple[int, int]:
        if not len(self.ends):
            return 0, 0
        starts = np.concatenate(([0], self.ends[:-1]))
        raw = np.frombuffer(self.data, np.uint8)
        rows = raw[starts + 8].astype(np.int64) << 8 | raw[starts + 9]
        return int(rows.sum()), int((self.ends - starts - CELL_OVERHEAD - rows).sum())


def _compressed_blocks(cells: Cells, block_size: int, fast: bool) -> Iterator[tuple[int, int, bytes]]:
    """(first cell, uncompressed size, gzip member) of each data block, in order.

    Blocks are laid out and compressed a few megabytes at a time: memory stays bounded, buffers are
    reused while hot, and large files compress on a thread per core (zlib and numpy's copies
    release the GIL) while this thread frames the blocks already done.
    """
    bounds = cells.block_bounds(block_size)
    chunks: list[list[tuple[int, int]]] = [[]]
    chunk_start = 0
    for first, end in bounds:
        if cells.start(first) - chunk_start >= _CHUNK_BYTES:
            chunks.append([])
            chunk_start = cells.start(first)
        chunks[-1].append((first, end))
    workers = min(os.cpu_count() or 1, len(chunks))
    if workers < 2:
        for chunk in chunks:
            yield from _compress_chunk(cells, chunk, fast)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future[list[tuple[int, int, bytes]]]] = deque()
        for chunk in chunks:
            pending.append(pool.submit(_compress_chunk, cells, chunk, fast))
            if len(pending) > 2 * workers:  # enough queued to keep every thread busy
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def _compress_chunk(cells: Cells, chunk: list[tuple[int, int]], fast: bool) -> list[tuple[int, int, bytes]]:
    if not chunk:
        return []
    base = cells.start(chunk[0][0])
    data = memoryview(cells.lay_out(chunk[0][0], chunk[-1][1]))
    out = []
    for first, end in chunk:
        payload = data[cells.start(first) - base : cells.start(end) - base]
        out.append((first, len(payload), gzip_member(payload, fast=fast)))
    return out


# A few megabytes of cells per task: large enough that threads pay off, small enough to stay in cache.
_CHUNK_BYTES = 4 << 20


def _index_key(row: bytes, *, hbase: bool) -> bytes:
    """A block's key in the root index: its first row (hudi-io), or that row's whole KeyValue key (HBase)."""
    key = struct.pack(">H", len(row)) + row + (KEY_SUFFIX if hbase else b"")
    if not hbase and len(key) > MAX_INDEX_KEY:
        raise ValueError(f"HFile block key of {len(row)} bytes is too long for Hudi's root index reader")
    return key


def _index_entry(offset: int, size: int, key: bytes, *, hbase: bool = False) -> bytes:
    length = _hadoop_vint(len(key)) if hbase else _varint(len(key))
    return struct.pack(">qI", offset, size) + length + key


def _file_info_payload(entries: Sequence[tuple[bytes, bytes]]) -> bytes:
    pairs = b"".join(_proto([(1, _proto([(1, key), (2, value)]))]) for key, value in entries)
    return b"PBUF" + _varint(len(pairs)) + pairs


def _block(magic: bytes, payload: bytes, checksum_type: int, previous: int = -1) -> bytes:
    return _frame(magic, gzip_member(payload), len(payload), checksum_type, previous)


def _frame(magic: bytes, compressed: bytes, uncompressed: int, checksum_type: int, previous: int) -> bytes:
    """Header + compressed payload + checksums of one block."""
    body = _unchecked(magic, compressed, uncompressed, checksum_type, previous)
    return body + _checksums([body], checksum_type)[0]


def _unchecked(magic: bytes, compressed: bytes, uncompressed: int, checksum_type: int, previous: int) -> bytes:
    """Header + compressed payload of one block; its checksums follow it."""
    with_header_len = HEADER_SIZE + len(compressed)
    header = magic + struct.pack(
        ">IIqBII",
        len(compressed) + _checksum_length(with_header_len),
        uncompressed,
        previous,
        checksum_type,
        BYTES_PER_CHECKSUM,
        with_header_len,
    )
    return header + compressed


def _checksum_length(with_header_len: int) -> int:
    return 4 * -(-with_header_len // BYTES_PER_CHECKSUM)


def _checksums(bodies: Sequence[bytes], checksum_type: int) -> list[bytes]:
    """The checksum bytes of each block (header + payload): a CRC32C per 16 KiB, or zeros."""
    if checksum_type == CHECKSUM_CRC32C:
        return chunk_checksums(bodies, BYTES_PER_CHECKSUM)
    return [b"\x00" * _checksum_length(len(body)) for body in bodies]


def gzip_member(payload: bytes | memoryview, *, fast: bool = False) -> bytes:
    """One gzip member with the header Java's GZIPOutputStream writes (mtime 0, OS 0); its deflate
    stream as Java's (zlib, `GZIP_LEVEL`), or with `fast` ISA-L's at `FAST_GZIP_LEVEL`."""
    deflate = (isal_zlib.compressobj(FAST_GZIP_LEVEL, isal_zlib.DEFLATED, -15) if fast
               else zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -15))
    body = deflate.compress(payload) + deflate.flush()
    # ISA-L's CRC32 is the same sum as zlib's, several times faster.
    return (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"
        + body
        + struct.pack("<II", isal_zlib.crc32(payload), len(payload) & 0xFFFFFFFF)
    )


# --- protobuf and varints (only what the trailer and file info use) ------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _hadoop_vint(value: int) -> bytes:
    """Hadoop's `WritableUtils.writeVInt` of a non-negative value (HBase's `Bytes.writeByteArray`)."""
    if value <= 127:
        return bytes([value])
    body = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([(-112 - len(body)) & 0xFF]) + body


def _read_hadoop_vint(data: bytes, pos: int) -> tuple[int, int]:
    first = struct.unpack_from(">b", data, pos)[0]
    if first >= -112:
        return first, pos + 1
    size = -(first + 120) if first < -120 else -(first + 112)
    value = int.from_bytes(data[pos + 1 : pos + 1 + size], "big")
    return (~value if first < -120 else value), pos + 1 + size


def _read_varint(data: bytes, pos: int, where: str) -> tuple[int, int]:
    result, shift = 0, 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise _corrupt(where, "a complete varint", "end of data")


def _proto(fields: Sequence[tuple[int, int | bytes]]) -> bytes:
    out = bytearray()
    for tag, value in fields:
        if isinstance(value, bytes):
            out += _varint(tag << 3 | 2) + _varint(len(value)) + value
        else:
            out += _varint(tag << 3) + _varint(value)
    return bytes(out)


def _iter_proto(data: bytes, where: str) -> Iterable[tuple[int, int | bytes]]:
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos, where)
        wire = key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos, where)
            yield key >> 3, value
        elif wire == 2:
            length, pos = _read_varint(data, pos, where)
            yield key >> 3, data[pos : pos + length]
            pos += length
        else:
            raise _corrupt(where, "protobuf wire types 0 or 2", f"wire type {wire}")


def _parse_proto(data: bytes, where: str) -> dict[int, int | bytes]:
    return dict(_iter_proto(data, where))


def _int_field(fields: dict[int, int | bytes], tag: int, default: int = 0) -> int:
    value = fields.get(tag, default)
    return value if isinstance(value, int) else default


def _corrupt(where: str, expected: str, found: str) -> CorruptMetadataError:
    return CorruptMetadataError(f"{where}: not a readable HFile: expected {expected}, found {found}", path=where)
