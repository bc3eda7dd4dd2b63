"""CRC32C of HFile checksum chunks (google-crc32c) equals a bit-at-a-time reference of the polynomial."""

from __future__ import annotations

import random
import struct

import google_crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.hudi.mdt.crc32c import chunk_checksums, crc32c


def _reference(data: bytes) -> int:
    """CRC-32C straight from its definition: reflected polynomial 0x82F63B78, init and final XOR all ones."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def _expected(blocks: list[bytes], chunk: int) -> list[bytes]:
    return [b"".join(struct.pack(">I", _reference(block[i : i + chunk])) for i in range(0, len(block), chunk))
            for block in blocks]


def test_reference_vector() -> None:
    assert crc32c(b"123456789") == _reference(b"123456789") == 0xE3069283  # the check value (RFC 3720)
    assert crc32c(b"") == 0


def test_the_c_library_is_used() -> None:
    # Its pure-Python fallback would take minutes over a large clean's 280 MB of HFile blocks.
    assert google_crc32c.implementation == "c"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=12), st.integers(min_value=1, max_value=64))
def test_chunk_checksums_equal_the_reference(blocks: list[bytes], chunk: int) -> None:
    # Small chunks make every piece length occur, including the under-four-byte tails.
    assert chunk_checksums(blocks, chunk) == _expected(blocks, chunk)


def test_hfile_sized_blocks() -> None:
    chance = random.Random(13)
    blocks = [chance.randbytes(n) for n in (16384, 16385, 40000, 65536 + 33, 7, 300, 0)]
    assert chunk_checksums(blocks, 16384) == _expected(blocks, 16384)
