"""CRC32C (Castagnoli), the HFile block checksum Hudi 1.0 and HBase write (checksum type 2).

The standard library has no Castagnoli polynomial. `crc32c` is the plain table-driven reference;
`chunk_checksums` computes the same sums for many chunks at once with numpy, for the thousands of
16 KiB chunks of a large HFile (a clean's index tombstones), where the byte-at-a-time loop would
cost seconds. A numpy step costs microseconds whatever its width, so the count of steps is what
matters: every chunk is cut into sub-chunks of `_SUB` bytes, all sub-chunks advance together four
bytes a step (slicing-by-4 tables), and each chunk's sub-chunk sums are then folded into its sum,
all chunks together again. A call costs about `_SUB / 4 + 16384 / _SUB` steps, however few the
chunks; the earlier one-byte-a-step loop took as many steps as the longest chunk has bytes, 16,384
for a single block.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_POLY = 0x82F63B78  # reflected Castagnoli polynomial


def _table() -> tuple[int, ...]:
    rows = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        rows.append(crc)
    return tuple(rows)


_TABLE = _table()
_TABLE_ARRAY = np.array(_TABLE, np.uint32)


def crc32c(data: bytes | memoryview) -> int:
    crc = 0xFFFFFFFF
    for byte in bytes(data):
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def chunk_checksums(blocks: Sequence[bytes], chunk: int) -> list[bytes]:
    """For each block, the big-endian CRC32C of each of its `chunk`-byte pieces, concatenated.

    Pieces under four bytes take `crc32c`; the others `_crc32c_many`, a batch at a time.
    """
    pieces = [(b, block[i : i + chunk]) for b, block in enumerate(blocks) for i in range(0, len(block), chunk)]
    sums = [0] * len(pieces)
    long_ones = [i for i, (_, piece) in enumerate(pieces) if len(piece) >= 4]
    for i, (_, piece) in enumerate(pieces):
        if len(piece) < 4:
            sums[i] = crc32c(piece)
    for start in range(0, len(long_ones), _BATCH):
        batch = long_ones[start : start + _BATCH]
        for i, crc in zip(batch, _crc32c_many([pieces[i][1] for i in batch]), strict=True):
            sums[i] = crc
    out = [bytearray() for _ in blocks]
    for (b, _), crc in zip(pieces, sums, strict=True):
        out[b] += struct.pack(">I", crc)
    return [bytes(o) for o in out]


# Pieces per batch: 2,048 x 16 KiB is 32 MiB.
_BATCH = 2048
# Bytes per sub-chunk: 64 steps of four bytes, then up to 64 folding steps for a 16 KiB piece.
_SUB = 256


def _slicing_tables() -> tuple[npt.NDArray[np.uint32], ...]:
    """Slicing-by-4: T_k[b] is the register after byte b and k zero bytes, from a zero register."""
    tables = [_TABLE_ARRAY]
    for _ in range(3):
        last = tables[-1]
        tables.append((last >> 8) ^ _TABLE_ARRAY[last & 0xFF])
    return tuple(tables)


def _shift_tables() -> tuple[npt.NDArray[np.uint32], ...]:
    """Z_k[b]: the register (byte k of it b, the rest 0) after `_SUB` zero bytes. A CRC register is
    linear in its bits, so any register after `_SUB` zero bytes is the XOR of its four bytes' rows."""
    registers = (np.arange(256, dtype=np.uint32)[None, :] << (8 * np.arange(4, dtype=np.uint32))[:, None]).ravel()
    for _ in range(_SUB):
        registers = _TABLE_ARRAY[registers & 0xFF] ^ (registers >> 8)
    return tuple(registers.reshape(4, 256))


_T0, _T1, _T2, _T3 = _slicing_tables()
_Z0, _Z1, _Z2, _Z3 = _shift_tables()


def _crc32c_many(pieces: list[bytes]) -> list[int]:
    """CRC32C of each piece (four bytes or more).

    From a zero register, zero bytes leave it zero, and a register starting at 0xFFFFFFFF is the
    same as a zero one with the first four bytes inverted; so each piece, its first four bytes
    inverted, is padded in front with zeros to whole sub-chunks, and every sub-chunk's register
    is computed from zero. A piece's register is then folded from its sub-chunks': shift the
    register over one sub-chunk of zeros (`_Z*`), XOR in the next sub-chunk's.
    """
    lengths = np.fromiter(map(len, pieces), np.int64, len(pieces))
    counts = -(-lengths // _SUB)  # sub-chunks per piece
    pads = counts * _SUB - lengths
    flat = np.frombuffer(b"".join(bytes(int(pad)) + piece for pad, piece in zip(pads, pieces, strict=True)),
                         np.uint8).copy()
    firsts = np.cumsum(counts) - counts  # each piece's first sub-chunk
    flat[(firsts * _SUB + pads)[:, None] + np.arange(4)] ^= 0xFF
    words = np.ascontiguousarray(flat.view("<u4").reshape(-1, _SUB // 4).T)  # row j: word j of every sub-chunk
    register = np.zeros(words.shape[1], np.uint32)
    for row in words:
        x = register ^ row
        register = _T3[x & 0xFF] ^ _T2[(x >> 8) & 0xFF] ^ _T1[(x >> 16) & 0xFF] ^ _T0[x >> 24]
    most = int(counts.max())
    by_piece = np.zeros((most, len(pieces)), np.uint32)  # right-aligned: leading zero sub-chunks are no-ops
    owner = np.repeat(np.arange(len(pieces)), counts)
    position = most - counts[owner] + np.arange(len(owner)) - firsts[owner]
    by_piece[position, owner] = register
    crc = np.zeros(len(pieces), np.uint32)
    for sub in by_piece:
        crc = _Z0[crc & 0xFF] ^ _Z1[(crc >> 8) & 0xFF] ^ _Z2[(crc >> 16) & 0xFF] ^ _Z3[crc >> 24] ^ sub
    return [int(c) ^ 0xFFFFFFFF for c in crc]
