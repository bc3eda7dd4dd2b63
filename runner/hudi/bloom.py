"""Hudi's bloom filter footer: which record keys a base file holds, for Hudi's BLOOM index.

A Hudi writer using the BLOOM index (0.14's default for Spark) reads `org.apache.hudi.bloomfilter`
from every candidate base file's footer and fails if it is missing, so files this writer creates
carry one, built exactly as Hudi 0.14 builds its default filter:

- Type DYNAMIC_V0 (`HoodieDynamicBoundedBloomFilter`): rows of standard bloom filters of
  `bits = ceil(60000 * -ln(1e-9) / ln(2)^2)` = 2,587,966 bits and `ceil(ln(2) * bits / 60000)` = 30
  hash functions; a row holds 60,000 keys, a second row is added for more, and once rows × 60,000
  reach 100,000 (`hoodie.bloom.index.filter.dynamic.max.entries`) keys go round robin to the rows.
- Hash: Hudi's port of Hadoop's MurmurHash (32-bit murmur2, seed chaining: hash `i` is seeded with
  hash `i - 1`, the first with 0; a tail byte is sign-extended), bit `abs(h % bits)` with Java's `%`.
  Hudi's `HashFunction` rejects an empty key, and `InternalDynamicBloomFilter.add` a null one.
- Serialized as Hadoop's `Writable` (big endian): per filter `-1, nbHash, hashType (1 = murmur),
  vectorSize`; the dynamic filter adds `rows-capacity, records in the active row, row count` and
  then each row's header and bit vector (bit `i` is bit `i % 8` of byte `i / 8`), all Base64.

Keys are the UTF-8 bytes of `_hoodie_record_key`, in file order.

A resize (binary copy or rewrite) does not hash the keys again: it ORs its inputs' filters into one with the
rows and header a filter of all their keys would have (`runner.hudi.bloom_merge`). That is safe
because membership is tested against every row: an input's key has all its bits in one of that
input's rows, whose bits all land in some output row, and bits are only added; so no key is
missed (no false negative, no duplicate written by Hudi's BLOOM index), whichever output row an
input row joins. The row geometry (bits, hashes, rows for N keys) is Hudi's, so readers decode it
as a filter Hudi wrote; only which keys share a row differs, so the false-positive rate is close
to, not equal to, a rebuilt filter's once there is more than one row.

How it is computed fast without native code: 30 chained hashes per key are ~1,000 integer
operations, so the work is numpy uint32 arithmetic (it wraps as Java's `int` does) in place, over
blocks of 16,384 keys that stay in the CPU cache through all 30 hashes. A key's 32-bit words and
tail bytes do not depend on the seed, so they are read and pre-mixed once per block rather than
once per hash, and the tail's XOR is folded into the key's last word (or, for a key of 1-3 bytes,
into its length); keys of different lengths share a block, longest first, so the keys that have a
given word are a prefix of it. Keys of one length, consecutive in the column (the usual case), are
read through strided views of its bytes. The per-call cost of numpy (about 0.5 µs, against 1-2 µs
of work on the 6,250 new keys of a merged file) is kept down with 0-d constants, slices taken once
per block and positions computed in uint32. Each hash's bit positions are set in a boolean vector
per row (one byte per bit: random single-byte stores, no read-modify-write), packed to bits at the
end. (What did not pay: all 30 hashes of a block at once, and a packed vector set with
`np.bitwise_or.at`; bench/README.md, the writer9 round.)
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pybase64

from runner.errors import RefusedError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

TYPE_CODE = "DYNAMIC_V0"
ENTRIES = 60_000
MAX_ENTRIES = 100_000
ERROR_RATE = 1e-9
MURMUR = 1
VECTOR_SIZE = math.ceil(ENTRIES * (-math.log(ERROR_RATE) / (math.log(2) * math.log(2))))
NUM_HASHES = math.ceil(math.log(2) * VECTOR_SIZE / ENTRIES)
KEY_FIELD = "_hoodie_record_key"
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
# Keys hashed together: large enough that numpy's per-call cost (~1 µs) is small against the work
# on the block (8,192 measured up to 1.5x slower), small enough that a UUID block's words, hash and
# scratch arrays (~0.8 MB) stay in the 1 MB L2 cache of a core through all 30 hashes.
_BLOCK_KEYS = 16_384
# Offset width in bytes of the Arrow types whose buffers are read as they are (UTF-8 is its bytes).
_OFFSET_TYPES = {"string": 4, "binary": 4, "large_string": 8, "large_binary": 8}


def serialize(keys: pa.Array) -> str:
    """The Base64 `org.apache.hudi.bloomfilter` footer value for these record keys (in file order).

    Raises RefusedError for a null or empty key: Hudi cannot put one in a bloom filter, so no file
    Hudi wrote holds one, and a filter built anyway would differ from any Hudi could build.
    """
    return _serialized(_packed_rows(keys, _row_members(len(keys))), len(keys))


def extend(held_rows: Sequence[npt.NDArray[np.uint8]], held: int, keys: pa.Array) -> str:
    """`serialize` of a file whose first `held` keys a filter already holds and whose other keys are
    `keys` (in file order), given that filter's rows (packed bit vectors, as `bloom_merge` reads them):
    only `keys` are hashed. Keys are added one after another and a key's row depends only on its
    place (`_row_members`), so when `held_rows` is the filter `serialize` built of those `held` keys
    the result is byte for byte the filter `serialize` builds of all the keys; from any filter that
    holds them (one merged by a resize) it holds all the keys as well.

    Raises RefusedError for a null or empty key among `keys`, as `serialize` does.
    """
    import numpy as np

    total = held + len(keys)
    if len(held_rows) != row_count(held):
        raise ValueError(f"a filter of {held} keys has {row_count(held)} rows, not {len(held_rows)}")
    packed = _packed_rows(keys, _row_members(total, held))
    for row, bits in enumerate(held_rows):
        np.bitwise_or(packed[row], bits, out=packed[row])
    return _serialized(packed, total)


def _packed_rows(keys: pa.Array, row_members: Sequence[npt.NDArray[np.int64]]) -> npt.NDArray[np.uint8]:
    """The filter's rows as packed bit vectors, row `r` holding the keys at `row_members[r]`."""
    import numpy as np

    bits = np.zeros((len(row_members), VECTOR_SIZE), np.bool_)
    if not len(keys):
        return np.packbits(bits, axis=1, bitorder="little")
    offsets, data = _key_bytes(keys)
    lengths = offsets[1:] - offsets[:-1]
    words = _unaligned_words(data)
    for row, members in enumerate(row_members):
        ordered = _longest_first(lengths, members)
        for first in range(0, len(ordered), _BLOCK_KEYS):
            block = ordered[first : first + _BLOCK_KEYS]
            key_block = _KeyBlock.read(data, words, offsets[block], lengths[block])
            position, quotient = np.empty(key_block.size, np.uint32), np.empty(key_block.size, np.uint32)
            for hashed in _hash_rows(key_block):
                _positions(hashed, position, quotient)
                bits[row][position] = True
    return np.packbits(bits, axis=1, bitorder="little")


def _serialized(packed: npt.NDArray[np.uint8], keys: int) -> str:
    header = _filter_header()
    out = [header, struct.pack(">iii", ENTRIES, current_records(keys), len(packed))]
    for vector in packed:
        out += [header, vector.tobytes()]
    return base64_text(b"".join(out))


def base64_text(data: bytes) -> str:
    """Standard Base64 of `data`, as text. pybase64 writes the text directly: for a filter (323 KB,
    431 KB of text) about 0.01 ms, where `b64encode` and the ASCII decode of its bytes took 0.5 ms,
    once per file written (bench/README.md, the writer5 round)."""
    text: str = pybase64.b64encode_as_string(data)
    return text


def bit_positions(keys: pa.Array) -> npt.NDArray[np.intp]:
    """Each key's NUM_HASHES bit positions, shape (NUM_HASHES, keys), in key order: what Hudi's
    membership test looks up. Refuses null and empty keys as `serialize` does."""
    import numpy as np

    offsets, data = _key_bytes(keys)
    lengths = offsets[1:] - offsets[:-1]
    words = _unaligned_words(data)
    ordered = _longest_first(lengths, np.arange(len(keys), dtype=np.int64))
    out = np.empty((NUM_HASHES, len(keys)), np.intp)
    for first in range(0, len(ordered), _BLOCK_KEYS):
        block = ordered[first : first + _BLOCK_KEYS]
        key_block = _KeyBlock.read(data, words, offsets[block], lengths[block])
        position, quotient = np.empty(len(block), np.uint32), np.empty(len(block), np.uint32)
        for i, hashed in enumerate(_hash_rows(key_block)):
            _positions(hashed, position, quotient)
            out[i, block] = position
    return out


def _filter_header() -> bytes:
    return struct.pack(">iibi", -1, NUM_HASHES, MURMUR, VECTOR_SIZE)


def check_keys(keys: pa.Array) -> None:
    """Refuse a null or empty key (RefusedError) as `serialize` would, without hashing."""
    _key_bytes(keys)


def _key_bytes(keys: pa.Array) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """The keys' start offsets (one more than keys) into their concatenated bytes, without copying
    the bytes; refuses null and empty keys."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    binary = keys if _OFFSET_TYPES.get(str(keys.type)) else keys.cast(pa.large_binary())
    if binary.null_count:
        first = pc.index(pc.is_null(binary), True).as_py()
        raise RefusedError(f"{KEY_FIELD}: row {first} of {len(binary)} is null; Hudi's bloom filter cannot hold a "
                           "null record key (InternalDynamicBloomFilter.add), so no Hudi writer wrote this file")
    _, offset_buffer, data_buffer = binary.buffers()
    width = np.int64 if _OFFSET_TYPES.get(str(binary.type)) == 8 else np.int32
    offsets = np.frombuffer(offset_buffer, width)[binary.offset : binary.offset + len(binary) + 1].astype(np.int64)
    empty = np.flatnonzero(offsets[1:] == offsets[:-1])
    if len(empty):
        raise RefusedError(f"{KEY_FIELD}: row {int(empty[0])} of {len(binary)} is an empty string; Hudi's bloom "
                           "filter rejects an empty record key (HashFunction.hash: key length must be > 0), so no "
                           "Hudi writer wrote this file")
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    data.setflags(write=False)  # the caller's Arrow memory: a stray in-place operation must fail, not write
    return offsets, data


def row_count(n: int) -> int:
    """How many rows `InternalDynamicBloomFilter` has after `n` adds: it adds a row when the active
    one is full, until rows × ENTRIES reach MAX_ENTRIES."""
    rows = 1
    while n > rows * ENTRIES and rows * ENTRIES < MAX_ENTRIES:
        rows += 1
    return rows


def _row_members(n: int, held: int = 0) -> list[npt.NDArray[np.int64]]:
    """The key indices each row holds, following `InternalDynamicBloomFilter.getActiveStandardBF`:
    row `r` takes keys `r * ENTRIES` up to the bound (`row_count` rows full); the key arriving at
    the bound goes to row 0 (`reachedMax` is set, the round-robin cursor not advanced), then keys
    go round robin from row 0. With `held`, only the keys from `held` on, counted from `held`."""
    import numpy as np

    rows = row_count(n)
    bound = rows * ENTRIES
    members = []
    for row in range(rows):
        first = max(row * ENTRIES, held)
        parts = [np.arange(first - held, max(first, min(n, (row + 1) * ENTRIES)) - held, dtype=np.int64)]
        if row == 0 and n > bound >= held:
            parts.append(np.array([bound - held], np.int64))
        cycle = bound + 1 + row  # this row's first round-robin key, then every `rows` keys
        if cycle < held:
            cycle += -(-(held - cycle) // rows) * rows
        parts.append(np.arange(cycle - held, n - held, rows, dtype=np.int64))
        members.append(np.concatenate(parts))
    return members


def current_records(n: int) -> int:
    """`currentNbRecord`: keys added since the last row was added (round-robin adds count too)."""
    return n - (row_count(n) - 1) * ENTRIES


def _longest_first(lengths: npt.NDArray[np.int64], members: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The members by key length, longest first, in key order within a length: so a block's keys
    that have a `j`th word are a prefix of the block, and keys of one length stay consecutive."""
    import numpy as np

    if not len(members):
        return members
    chosen = lengths[members]
    shortest, longest = int(chosen.min()), int(chosen.max())
    if shortest == longest:
        return members
    shorter_by = longest - chosen
    # A stable sort of 16-bit values is numpy's radix sort: linear in the number of keys.
    order = np.argsort(shorter_by.astype(np.uint16) if longest - shortest < 2**16 else shorter_by, kind="stable")
    return members[order]


class _KeyBlock:
    """What MurmurHash needs of a block of keys, none of which depends on the seed: what the seed is
    XORed with first (the key's length), the keys' 32-bit words already mixed (`k *= m;
    k ^= k >>> 24; k *= m`), and the tail. Keys are longest first (`_longest_first`).

    The tail's XOR (its last 1-3 bytes) directly follows the last word's XOR, so it is folded into
    that word; a key of 1-3 bytes has no word, and its tail is folded into the length instead (both
    are XORed into the hash with nothing between). What is left of the tail is the multiply by m
    (`tail_factor`: m, or per key m for keys with a tail and 1 for the others; None when no key has
    a tail)."""

    def __init__(self, start: npt.NDArray[np.uint32], mixed: npt.NDArray[np.uint32], with_word: list[int],
                 tail_factor: npt.NDArray[np.uint32] | None) -> None:
        self.size = mixed.shape[1]
        self.start = start  # 0-d when the keys share it
        self.mixed = mixed  # (words of the longest key, keys)
        self.with_word = with_word  # with_word[j]: how many keys (a prefix) have a word j
        self.tail_factor = tail_factor

    @classmethod
    def read(cls, data: npt.NDArray[np.uint8], words: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64],
             lengths: npt.NDArray[np.int64]) -> _KeyBlock:
        import numpy as np

        m = np.array(_M, np.uint32)
        longest, count = int(lengths[0]), len(starts)
        mixed = _block_words(data, words, starts, lengths)
        np.multiply(mixed, m, out=mixed)
        np.bitwise_xor(mixed, mixed >> np.uint32(24), out=mixed)
        np.multiply(mixed, m, out=mixed)
        if int(lengths[-1]) == longest:
            with_word = [count] * (longest // 4)
            start = np.array(longest, np.uint32)
            if not longest % 4:
                return cls(start, mixed, with_word, None)
            tail = _tail(data, starts, longest, longest % 4)
            if longest >= 4:
                np.bitwise_xor(mixed[-1], tail, out=mixed[-1])
            else:
                start = start ^ tail
            return cls(start, mixed, with_word, m)
        word_counts = lengths >> 2
        keys_by_words = np.bincount(word_counts, minlength=longest // 4 + 1)
        with_word = [int(n) for n in (count - np.cumsum(keys_by_words))[: longest // 4]]
        left = lengths & 3
        tail = np.zeros(count, np.uint32)
        for back in range(1, 4):
            np.bitwise_xor(tail, _tail(data, starts, lengths, back, where=left >= back), out=tail)
        start = lengths.astype(np.uint32)
        # Keys are longest first, so those without a word (1-3 bytes, all with a tail) are the last.
        no_word = with_word[0] if with_word else 0
        np.bitwise_xor(start[no_word:], tail[no_word:], out=start[no_word:])
        folded = np.flatnonzero(left[:no_word])
        mixed[word_counts[folded] - 1, folded] ^= tail[folded]
        factor = np.where(left > 0, m, np.uint32(1)).astype(np.uint32) if len(folded) or no_word < count else None
        return cls(start, mixed, with_word, factor)


def _block_words(data: npt.NDArray[np.uint8], words: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64],
                 lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]:
    """A copy of the keys' 32-bit words, shape (words of the longest key, keys); a key's words past
    its own length are filler (never used: only the prefix of keys that has word `j` reads it)."""
    import numpy as np

    count, first, longest = len(starts), int(starts[0]), int(lengths[0])
    if int(lengths[-1]) == longest and int(starts[-1]) - first == (count - 1) * longest:
        # Consecutive keys of one length (the usual case): word `j` of every key is a strided view
        # of the one-byte-stride words, one copy each (two copies of the (keys, length) block cost
        # 9x as much for 6-byte keys).
        out = np.empty((longest // 4, count), np.uint32)
        for j, row in enumerate(out):
            np.copyto(row, words[first + 4 * j : first + 4 * j + (count - 1) * longest + 1 : longest])
        return out
    at = np.arange(0, longest // 4 * 4, 4, dtype=np.int64)[:, None] + starts[None, :]
    return words[np.minimum(at, len(words) - 1)]  # type: ignore[no-any-return]


def _tail(data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64] | int,
          back: int, where: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.uint32]:
    """Hadoop's MurmurHash takes the 1-3 bytes after the last whole word from the end of the key
    (`data[length - 3] << 16`, `data[length - 2] << 8`, `data[length - 1]`), each sign-extended
    from a Java byte. This is the term of byte `length - back` (all of them up to `back` when
    `lengths` is one length); zero where `where` is False."""
    import numpy as np

    total = np.zeros(len(starts), np.uint32)
    count = len(starts)
    # Consecutive keys of one length: byte `length - step` of every key is a strided view of `data`.
    consecutive = isinstance(lengths, int) and count and int(starts[-1]) - int(starts[0]) == (count - 1) * lengths
    for step in range(back, 0, -1) if where is None else (back,):
        if consecutive:
            at_first = int(starts[0]) + int(lengths) - step
            picked = data[at_first : at_first + (count - 1) * int(lengths) + 1 : int(lengths)]
        else:
            picked = data[np.maximum(starts + lengths - step, 0)]
        byte = picked.view(np.int8).astype(np.int32).view(np.uint32) << np.uint32(8 * (step - 1))
        np.bitwise_xor(total, byte if where is None else np.where(where, byte, np.uint32(0)), out=total)
    return total


def _unaligned_words(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint32]:
    """`words[p]` is the little-endian 32-bit word at byte `p` of `data`, for every `p`: a view with
    a one-byte stride, so reading a key's words is one gather, whatever its alignment."""
    import numpy as np

    count = max(len(data) - 3, 0)
    return np.ndarray((count,), np.dtype("<u4"), buffer=data if count else np.zeros(4, np.uint8), strides=(1,))


def _hash_rows(keys: _KeyBlock, count: int = NUM_HASHES,
               seed: npt.NDArray[np.uint32] | None = None) -> Iterator[npt.NDArray[np.uint32]]:
    """Hudi's chained MurmurHash of every key of the block, `count` times: hash `i` is seeded with
    hash `i - 1`, the first with `seed` (Hudi's: 0). Each is yielded in one buffer, valid until
    the next (the caller must not change it: it seeds the next hash).

    A hash is one numpy call per word and five for the finalisation, in place (its slices taken
    once per block); the constants are 0-d arrays, which numpy's ufuncs take faster than
    scalars (about 0.2 µs a call, a quarter of a call on 6,250 keys). One hash at a time keeps
    the working set to a few arrays of the block's size: all 30 hashes of a block at once (with
    their positions and the store's index array, 3 MB for 6,250 keys) cost more CPU than they
    saved once two writer threads ran them side by side (bench/README.md, the writer9 round)."""
    import numpy as np

    m, s13, s15 = np.array(_M, np.uint32), np.array(13, np.uint32), np.array(15, np.uint32)
    h, scratch = np.empty(keys.size, np.uint32), np.empty(keys.size, np.uint32)
    steps = [(h, word) if n == keys.size else (h[:n], word[:n]) for word, n in zip(keys.mixed, keys.with_word,
                                                                                   strict=True)]
    factor = keys.tail_factor
    np.bitwise_xor(np.zeros(keys.size, np.uint32) if seed is None else seed, keys.start, out=h)
    for i in range(count):
        if i:
            np.bitwise_xor(h, keys.start, out=h)
        for part, word in steps:
            np.multiply(part, m, out=part)
            np.bitwise_xor(part, word, out=part)
        if factor is not None:
            np.multiply(h, factor, out=h)
        np.right_shift(h, s13, out=scratch)
        np.bitwise_xor(h, scratch, out=h)
        np.multiply(h, m, out=h)
        np.right_shift(h, s15, out=scratch)
        np.bitwise_xor(h, scratch, out=h)
        yield h


def _positions(hashed: npt.NDArray[np.uint32], out: npt.NDArray[np.uint32], quotient: npt.NDArray[np.uint32]) -> None:
    """Each hash's bit, `Math.abs(h % VECTOR_SIZE)` of the Java int `h`, into `out`: it equals
    `|h| % VECTOR_SIZE`; |h| of Integer.MIN_VALUE overflows to itself as an int32 but reads 2**31
    as uint32, the true value. All in uint32 (a cast to intp here was a slow conversion loop)."""
    import numpy as np

    size = np.array(VECTOR_SIZE, np.uint32)
    np.abs(hashed.view(np.int32), out=out.view(np.int32))
    np.floor_divide(out, size, out=quotient)  # numpy divides by a scalar with multiply-and-shift (libdivide)
    np.multiply(quotient, size, out=quotient)
    np.subtract(out, quotient, out=out)
