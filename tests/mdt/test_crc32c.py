"""CRC32C over many chunks at once (numpy) equals the byte-at-a-time reference."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from runner.hudi.mdt.crc32c import chunk_checksums, crc32c


def test_reference_vector() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)
    assert crc32c(b"") == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=12), st.integers(min_value=1, max_value=64))
def test_chunk_checksums_equal_the_reference(blocks: list[bytes], chunk: int) -> None:
    # Small chunks make every piece length occur, including the under-four-byte tails.
    expected = [
        b"".join(struct.pack(">I", crc32c(block[i : i + chunk])) for i in range(0, len(block), chunk))
        for block in blocks
    ]
    assert chunk_checksums(blocks, chunk) == expected


def test_batches_of_many_pieces() -> None:
    blocks = [bytes((i * 7 + j) % 256 for j in range(300 + i % 50)) for i in range(5000)]
    expected = [struct.pack(">I", crc32c(block)) for block in blocks]
    assert chunk_checksums(blocks, 16384) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=3000), max_size=8), st.integers(min_value=4, max_value=2048))
def test_chunk_checksums_of_pieces_longer_than_a_sub_chunk(blocks: list[bytes], chunk: int) -> None:
    # Pieces of many sub-chunks (256 bytes), of any length, so the folding sees every alignment.
    expected = [
        b"".join(struct.pack(">I", crc32c(block[i : i + chunk])) for i in range(0, len(block), chunk))
        for block in blocks
    ]
    assert chunk_checksums(blocks, chunk) == expected


def test_hfile_sized_blocks() -> None:
    import random

    chance = random.Random(13)
    blocks = [chance.randbytes(n) for n in (16384, 16385, 40000, 65536 + 33, 7, 300)]
    expected = [
        b"".join(struct.pack(">I", crc32c(block[i : i + 16384])) for i in range(0, len(block), 16384))
        for block in blocks
    ]
    assert chunk_checksums(blocks, 16384) == expected
