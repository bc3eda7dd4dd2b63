"""CRC32C (Castagnoli), the HFile block checksum Hudi 1.0 and HBase write (checksum type 2).

The standard library has no Castagnoli polynomial. `crc32c` is the plain table-driven reference;
`chunk_checksums` runs the same table over many chunks at once with numpy, for the thousands of
16 KiB chunks of a large HFile (a clean's index tombstones), where the byte-at-a-time loop would
cost seconds.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

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

    All pieces advance together, one byte position per step, as columns of a matrix. Pieces are
    right-aligned behind zero bytes: from a zero register a zero byte leaves the register zero,
    and a register starting at 0xFFFFFFFF is the same as a zero one with the first four bytes
    inverted, so every piece may start at its own column. Pieces under four bytes take `crc32c`.
    """
    pieces = [(b, block[i : i + chunk]) for b, block in enumerate(blocks) for i in range(0, len(block), chunk)]
    sums = [0] * len(pieces)
    long_ones = [i for i, (_, piece) in enumerate(pieces) if len(piece) >= 4]
    for i, (_, piece) in enumerate(pieces):
        if len(piece) < 4:
            sums[i] = crc32c(piece)
    for start in range(0, len(long_ones), _BATCH):
        batch = long_ones[start : start + _BATCH]
        for i, crc in zip(batch, _crc32c_columns([pieces[i][1] for i in batch]), strict=True):
            sums[i] = crc
    out = [bytearray() for _ in blocks]
    for (b, _), crc in zip(pieces, sums, strict=True):
        out[b] += struct.pack(">I", crc)
    return [bytes(o) for o in out]


# Pieces per matrix: 2,048 x 16 KiB is 32 MiB.
_BATCH = 2048


def _crc32c_columns(pieces: list[bytes]) -> list[int]:
    width = max(map(len, pieces))
    matrix = np.zeros((width, len(pieces)), np.uint8)  # step j is row j: one contiguous row per step
    for i, piece in enumerate(pieces):
        column = np.frombuffer(piece, np.uint8).copy()
        column[:4] ^= 0xFF
        matrix[width - len(piece) :, i] = column
    register = np.zeros(len(pieces), np.uint32)
    for row in matrix:
        register = _TABLE_ARRAY[(register ^ row) & 0xFF] ^ (register >> 8)
    return [int(crc) ^ 0xFFFFFFFF for crc in register]
