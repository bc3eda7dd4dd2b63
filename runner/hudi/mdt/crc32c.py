"""CRC32C (Castagnoli), the HFile block checksum Hudi 1.0 writes (checksum type 2).

Pure Python and table-driven: the metadata table's log blocks are a few kilobytes, so speed does
not matter here, and the standard library has no Castagnoli polynomial.
"""

from __future__ import annotations

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


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
