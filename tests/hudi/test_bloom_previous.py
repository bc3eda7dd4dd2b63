"""The bloom filter's hashing of the writer9 round gives the bytes the previous one gave, for any keys.

`tests/hudi/previous_bloom.py` is the previous implementation, verbatim (tests only). The key
sets are drawn to reach every path of the new code: keys of one length read as strided views
(with and without a tail, 1-3 byte keys whose tail is folded into the length), mixed lengths
(the tail folded into each key's last word), blocks past `_BLOCK_KEYS`, an array that starts
inside its buffers (a slice), the four Arrow types, and `extend` from any number of held keys.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runner.hudi import bloom, bloom_merge, footer
from tests.hudi import previous_bloom

ALPHABETS = ["0123456789", "abcdef-0123456789", "\x00\x7f\x80\xff", "éü✓ключ\U0001F600a"]


def _keys(rng: random.Random, count: int, shape: str, length: int, alphabet: str) -> list[bytes]:
    if shape == "one length":  # the same byte length for every key: one-byte characters only
        chars = [c for c in alphabet if len(c.encode()) == 1] or ["k"]
        return ["".join(rng.choice(chars) for _ in range(length)).encode() for _ in range(count)]
    if shape == "ids":
        start = rng.randrange(10 ** (length - 1), 10**length)
        return [str(start + i * rng.choice([1, 8])).encode() for i in range(count)]
    if shape == "bytes":
        return [bytes(rng.randrange(256) for _ in range(rng.randint(1, 2 * length))) for _ in range(count)]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, length))).encode() for _ in range(count)]


KEY_SETS = st.tuples(
    st.integers(0, 2**32 - 1),
    st.one_of(st.integers(1, 200), st.integers(bloom._BLOCK_KEYS - 3, bloom._BLOCK_KEYS + 300)),
    st.sampled_from(["one length", "ids", "bytes", "mixed text"]),
    st.integers(1, 40),
    st.sampled_from(ALPHABETS),
    st.sampled_from([pa.binary(), pa.large_binary(), pa.string(), pa.large_string()]),
    st.integers(0, 3),
)


def _column(rng_seed: int, count: int, shape: str, length: int, alphabet: str, kind: pa.DataType,
            skip: int) -> pa.Array:
    rng = random.Random(rng_seed)
    length = min(length, 9) if shape == "ids" else length
    keys = _keys(rng, count, shape, length, alphabet)
    if kind in (pa.string(), pa.large_string()):
        keys = [k.decode("utf-8", "replace").encode() for k in keys]  # valid UTF-8 for a string column
    leading = [b"x" * (i + 1) for i in range(skip)]
    return pa.array(leading + keys, kind).slice(skip)


@settings(max_examples=60, deadline=None)
@given(KEY_SETS, st.floats(0.0, 1.0))
@example((1, bloom._BLOCK_KEYS + 7, "ids", 6, ALPHABETS[0], pa.string(), 0), 0.8)  # the bench's keys
@example((2, bloom._BLOCK_KEYS + 70, "one length", 36, ALPHABETS[1], pa.large_string(), 2), 0.5)  # UUID-like
@example((3, bloom._BLOCK_KEYS + 1, "one length", 3, ALPHABETS[2], pa.binary(), 1), 0.3)  # no word, tail only
@example((4, bloom._BLOCK_KEYS + 300, "mixed text", 40, ALPHABETS[3], pa.string(), 3), 0.1)
@example((5, bloom._BLOCK_KEYS + 3, "bytes", 12, ALPHABETS[0], pa.large_binary(), 0), 0.99)
@example((6, 50, "one length", 8, ALPHABETS[1], pa.string(), 0), 0.5)  # words, no tail
def test_serialize_extend_and_bit_positions_give_the_previous_bytes(key_set: tuple, held_share: float) -> None:
    column = _column(*key_set)
    expected = previous_bloom.serialize(column)
    assert bloom.serialize(column) == expected
    held = max(1, int(len(column) * held_share))
    old = footer.input_filter("p/old.parquet", {footer.BLOOM_FILTER.encode(): previous_bloom.serialize(
        column.slice(0, held)).encode(), footer.BLOOM_FILTER_TYPE_CODE.encode(): bloom.TYPE_CODE.encode()}, held)
    assert bloom.extend(bloom_merge.dynamic_rows(old), held, column.slice(held)) == expected
    sample = column.slice(0, 300)
    assert np.array_equal(bloom.bit_positions(sample), previous_bloom.bit_positions(sample))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=20), min_size=1, max_size=30))
def test_short_keys_of_any_lengths_give_the_previous_bytes(keys: list[bytes]) -> None:
    """Keys of 1-3 bytes (tail folded into the length) beside longer ones, in small blocks."""
    column = pa.array(keys, pa.binary())
    assert bloom.serialize(column) == previous_bloom.serialize(column)
    assert np.array_equal(bloom.bit_positions(column), previous_bloom.bit_positions(column))


def test_extend_from_every_held_count_around_the_row_bounds_gives_the_row_members_of_all_keys() -> None:
    for n in [*range(1, 40), 59_999, 60_000, 60_001, 119_999, 120_000, 120_001, 120_002, 120_003, 125_000]:
        every = bloom._row_members(n)
        for held in sorted({0, 1, n // 2, n - 1, n, 60_000, 60_001, 119_999, 120_000, 120_001, 120_002, 120_003}):
            if held <= n:
                got = bloom._row_members(n, held)
                assert [m.tolist() for m in got] == [(m[m >= held] - held).tolist() for m in every], (n, held)
