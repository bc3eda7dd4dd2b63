"""The bloom filter's hashing as it stood before the writer9 round (at f4c38df), kept only as a
reference for tests/hudi/test_bloom_previous.py: the current code must give the same bytes.

Copied verbatim from runner/hudi/bloom.py of that commit (`serialize`, `extend`, `_packed_rows`,
`bit_positions`, `_KeyBlock`, `_block_words`, `_tail`, `_set_bits`, `_murmur_in_place`,
`_bit_position`), the helpers that did not change taken from `runner.hudi.bloom`. Not used by
the runner.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from runner.hudi import bloom
from runner.hudi.bloom import _BLOCK_KEYS, _M, NUM_HASHES, VECTOR_SIZE


def serialize(keys: pa.Array) -> str:
    """The Base64 `org.apache.hudi.bloomfilter` footer value for these record keys (in file order).

    Raises RefusedError for a null or empty key: Hudi cannot put one in a bloom filter, so no file
    Hudi wrote holds one, and a filter built anyway would differ from any Hudi could build.
    """
    return bloom._serialized(_packed_rows(keys, bloom._row_members(len(keys))), len(keys))


def extend(held_rows: Sequence[npt.NDArray[np.uint8]], held: int, keys: pa.Array) -> str:
    """`serialize` of a file whose first `held` keys a filter already holds and whose other keys are
    `keys` (in file order), given that filter's rows (packed bit vectors, as `bloom_merge` reads them):
    only `keys` are hashed. Keys are added one after another and a key's row depends only on its
    place (`_row_members`), so when `held_rows` is the filter `serialize` built of those `held` keys
    the result is byte for byte the filter `serialize` builds of all the keys; from any filter that
    holds them (one merged by a resize) it holds all the keys as well.

    Raises RefusedError for a null or empty key among `keys`, as `serialize` does.
    """
    total = held + len(keys)
    if len(held_rows) != bloom.row_count(held):
        raise ValueError(f"a filter of {held} keys has {bloom.row_count(held)} rows, not {len(held_rows)}")
    packed = _packed_rows(keys, [members[members >= held] - held for members in bloom._row_members(total)])
    for row, bits in enumerate(held_rows):
        np.bitwise_or(packed[row], bits, out=packed[row])
    return bloom._serialized(packed, total)


def _packed_rows(keys: pa.Array, row_members: Sequence[npt.NDArray[np.int64]]) -> npt.NDArray[np.uint8]:
    """The filter's rows as packed bit vectors, row `r` holding the keys at `row_members[r]`."""

    bits = np.zeros((len(row_members), VECTOR_SIZE), np.bool_)
    if not len(keys):
        return np.packbits(bits, axis=1, bitorder="little")
    offsets, data = bloom._key_bytes(keys)
    lengths = offsets[1:] - offsets[:-1]
    words = bloom._unaligned_words(data)
    for row, members in enumerate(row_members):
        ordered = bloom._longest_first(lengths, members)
        for first in range(0, len(ordered), _BLOCK_KEYS):
            block = ordered[first : first + _BLOCK_KEYS]
            _set_bits(bits[row], _KeyBlock.read(data, words, offsets[block], lengths[block]))
    return np.packbits(bits, axis=1, bitorder="little")


def bit_positions(keys: pa.Array) -> npt.NDArray[np.intp]:
    """Each key's NUM_HASHES bit positions, shape (NUM_HASHES, keys), in key order: what Hudi's
    membership test looks up. Refuses null and empty keys as `serialize` does."""

    offsets, data = bloom._key_bytes(keys)
    lengths = offsets[1:] - offsets[:-1]
    words = bloom._unaligned_words(data)
    ordered = bloom._longest_first(lengths, np.arange(len(keys), dtype=np.int64))
    out = np.empty((NUM_HASHES, len(keys)), np.intp)
    for first in range(0, len(ordered), _BLOCK_KEYS):
        block = ordered[first : first + _BLOCK_KEYS]
        key_block = _KeyBlock.read(data, words, offsets[block], lengths[block])
        hashed = np.zeros(len(block), np.uint32)
        scratch, position = np.empty_like(hashed), np.empty(len(block), np.intp)
        for i in range(NUM_HASHES):
            _murmur_in_place(hashed, scratch, key_block)
            _bit_position(hashed, scratch, position)
            out[i, block] = position
    return out


class _KeyBlock:
    """What MurmurHash needs of a block of keys, none of which depends on the seed: the keys'
    lengths, their 32-bit words already mixed (`k *= m; k ^= k >>> 24; k *= m`), and what their
    last 1-3 bytes XOR into the hash. Keys are longest first (`_longest_first`)."""

    def __init__(self, lengths: npt.NDArray[np.uint32] | np.uint32, mixed: npt.NDArray[np.uint32],
                 with_word: list[int], tail: npt.NDArray[np.uint32] | None,
                 tail_factor: npt.NDArray[np.uint32] | np.uint32) -> None:
        self.size = mixed.shape[1]
        self.lengths = lengths  # one scalar when every key has the same length
        self.mixed = mixed  # (words of the longest key, keys)
        self.with_word = with_word  # with_word[j]: how many keys (a prefix) have a word j
        self.tail = tail  # None when no key has a tail
        self.tail_factor = tail_factor  # m for keys with a tail, 1 for the others

    @classmethod
    def read(cls, data: npt.NDArray[np.uint8], words: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64],
             lengths: npt.NDArray[np.int64]) -> _KeyBlock:

        m = np.uint32(_M)
        longest, count = int(lengths[0]), len(starts)
        mixed = _block_words(data, words, starts, lengths)
        np.multiply(mixed, m, out=mixed)
        np.bitwise_xor(mixed, mixed >> np.uint32(24), out=mixed)
        np.multiply(mixed, m, out=mixed)
        word_counts = lengths >> 2
        keys_by_words = np.bincount(word_counts, minlength=longest // 4 + 1)
        with_word = [int(n) for n in (count - np.cumsum(keys_by_words))[: longest // 4]]
        left = lengths & 3
        if int(lengths[-1]) == longest:
            tail = _tail(data, starts, longest, longest % 4) if longest % 4 else None
            return cls(np.uint32(longest), mixed, with_word, tail, m)
        tail = np.zeros(count, np.uint32)
        for back in range(1, 4):
            np.bitwise_xor(tail, _tail(data, starts, lengths, back, where=left >= back), out=tail)
        factor = np.where(left > 0, m, np.uint32(1)).astype(np.uint32)
        return cls(lengths.astype(np.uint32), mixed, with_word, tail, factor)


def _block_words(data: npt.NDArray[np.uint8], words: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64],
                 lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]:
    """A copy of the keys' 32-bit words, shape (words of the longest key, keys); a key's words past
    its own length are filler (never used: only the prefix of keys that has word `j` reads it)."""

    count, first, longest = len(starts), int(starts[0]), int(lengths[0])
    if int(lengths[-1]) == longest and int(starts[-1]) - first == (count - 1) * longest:
        # Consecutive keys of one length (the usual case): their bytes are one (keys, length) block.
        block = data[first : first + count * longest].reshape(count, longest)
        return block[:, : longest // 4 * 4].copy().view("<u4").T.copy()
    at = np.arange(0, longest // 4 * 4, 4, dtype=np.int64)[:, None] + starts[None, :]
    return words[np.minimum(at, len(words) - 1)]  # type: ignore[no-any-return]


def _tail(data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64] | int,
          back: int, where: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.uint32]:
    """Hadoop's MurmurHash takes the 1-3 bytes after the last whole word from the end of the key
    (`data[length - 3] << 16`, `data[length - 2] << 8`, `data[length - 1]`), each sign-extended
    from a Java byte. This is the term of byte `length - back` (all of them up to `back` when
    `lengths` is one length); zero where `where` is False."""

    total = np.zeros(len(starts), np.uint32)
    for step in range(back, 0, -1) if where is None else (back,):
        at = starts + lengths - step
        byte = data[np.maximum(at, 0)].view(np.int8).astype(np.int32).view(np.uint32) << np.uint32(8 * (step - 1))
        np.bitwise_xor(total, byte if where is None else np.where(where, byte, np.uint32(0)), out=total)
    return total


def _set_bits(bits: npt.NDArray[np.bool_], keys: _KeyBlock) -> None:
    """Set the NUM_HASHES bit positions of every key of the block."""

    hashed = np.zeros(keys.size, np.uint32)
    scratch = np.empty_like(hashed)
    position = np.empty(keys.size, np.intp)
    for _ in range(NUM_HASHES):
        _murmur_in_place(hashed, scratch, keys)
        _bit_position(hashed, scratch, position)
        bits[position] = True


def _murmur_in_place(h: npt.NDArray[np.uint32], scratch: npt.NDArray[np.uint32], keys: _KeyBlock) -> None:
    """Hudi's MurmurHash of every key of the block, seeded with `h` (the previous hash), into `h`."""

    m = np.uint32(_M)
    np.bitwise_xor(h, keys.lengths, out=h)
    for k, count in zip(keys.mixed, keys.with_word, strict=True):
        part = h[:count]
        np.multiply(part, m, out=part)
        np.bitwise_xor(part, k[:count], out=part)
    if keys.tail is not None:
        np.bitwise_xor(h, keys.tail, out=h)
        np.multiply(h, keys.tail_factor, out=h)
    np.right_shift(h, np.uint32(13), out=scratch)
    np.bitwise_xor(h, scratch, out=h)
    np.multiply(h, m, out=h)
    np.right_shift(h, np.uint32(15), out=scratch)
    np.bitwise_xor(h, scratch, out=h)


def _bit_position(h: npt.NDArray[np.uint32], scratch: npt.NDArray[np.uint32], position: npt.NDArray[np.intp]) -> None:
    """`Math.abs(h % VECTOR_SIZE)` of the Java int `h`, which equals `|h| % VECTOR_SIZE`; |h| of
    Integer.MIN_VALUE overflows to itself as an int32 but reads 2**31 as uint32, the true value."""

    size = np.uint32(VECTOR_SIZE)
    np.abs(h.view(np.int32), out=scratch.view(np.int32))
    quotient = scratch // size  # numpy divides by a scalar with multiply-and-shift (libdivide)
    np.multiply(quotient, size, out=quotient)
    np.subtract(scratch, quotient, out=position, casting="unsafe")
