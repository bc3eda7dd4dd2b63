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
- Serialized as Hadoop's `Writable` (big endian): per filter `-1, nbHash, hashType (1 = murmur),
  vectorSize`; the dynamic filter adds `rows-capacity, records in the active row, row count` and
  then each row's header and bit vector (bit `i` is bit `i % 8` of byte `i / 8`), all Base64.

Keys are the UTF-8 bytes of `_hoodie_record_key`, in file order. The hashing runs vectorized with
pyarrow compute (unsigned 32-bit arithmetic wraps as Java's `int` does), one pass per key length.
"""

from __future__ import annotations

import base64
import functools
import math
import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

TYPE_CODE = "DYNAMIC_V0"
ENTRIES = 60_000
MAX_ENTRIES = 100_000
ERROR_RATE = 1e-9
MURMUR = 1
VECTOR_SIZE = math.ceil(ENTRIES * (-math.log(ERROR_RATE) / (math.log(2) * math.log(2))))
NUM_HASHES = math.ceil(math.log(2) * VECTOR_SIZE / ENTRIES)
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def serialize(keys: pa.Array) -> str:
    """The Base64 `org.apache.hudi.bloomfilter` footer value for these record keys (in file order)."""
    import pyarrow as pa

    keys = keys.cast(pa.binary())
    rows = _row_assignment(len(keys))
    header = _filter_header()
    out = [header, struct.pack(">iii", ENTRIES, _current_records(len(keys)), len(rows))]
    for indices in rows:
        out.append(header)
        out.append(_bit_vector(keys.take(pa.array(indices, pa.int64())) if indices else keys.slice(0, 0)))
    return base64.b64encode(b"".join(out)).decode("ascii")


def _filter_header() -> bytes:
    return struct.pack(">iibi", -1, NUM_HASHES, MURMUR, VECTOR_SIZE)


def _row_assignment(n: int) -> list[list[int]]:
    """Which keys each row holds, following `InternalDynamicBloomFilter.add` step by step."""
    rows: list[list[int]] = [[]]
    current, reached_max, cursor = 0, False, 0
    for i in range(n):
        if reached_max:
            row = cursor % len(rows)
            cursor += 1
        elif current >= ENTRIES and len(rows) * ENTRIES < MAX_ENTRIES:
            rows.append([])
            current, row = 0, len(rows) - 1
        elif current >= ENTRIES:
            reached_max, row = True, 0
        else:
            row = len(rows) - 1
        rows[row].append(i)
        current += 1
    return rows


def _current_records(n: int) -> int:
    return n if n <= ENTRIES else n - ENTRIES


def _bit_vector(keys: pa.Array) -> bytes:
    import pyarrow as pa
    import pyarrow.compute as pc

    size = (VECTOR_SIZE + 7) // 8
    positions = [_positions(group) for group in _by_length(keys)]
    if not positions:
        return bytes(size)
    bits = pc.unique(pa.concat_arrays(positions))
    three, seven, one = (pa.scalar(v, pa.uint32()) for v in (3, 7, 1))
    table = pa.table({"byte": pc.shift_right(bits, three), "value": pc.shift_left(one, pc.bit_wise_and(bits, seven))})
    sums = table.group_by("byte").aggregate([("value", "sum")]).sort_by("byte")
    mask = pc.is_in(_byte_indices(), value_set=sums.column("byte").combine_chunks())
    values = sums.column("value_sum").combine_chunks().cast(pa.uint8())
    vector = pc.replace_with_mask(pa.repeat(pa.scalar(0, pa.uint8()), size), mask, values)
    return bytes(vector.buffers()[1].to_pybytes()[:size])


@functools.cache
def _byte_indices() -> pa.Array:
    import pyarrow as pa

    return pa.array(range((VECTOR_SIZE + 7) // 8), pa.uint32())


def _by_length(keys: pa.Array) -> list[pa.Array]:
    import pyarrow.compute as pc

    lengths = pc.binary_length(keys)
    return [keys.filter(pc.equal(lengths, length)) for length in pc.unique(lengths).to_pylist()]


def _positions(keys: pa.Array) -> pa.Array:
    """All `NUM_HASHES` bit positions of keys of one byte length, as uint32 (hashing them is 4x faster)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    length = len(keys[0].as_py())
    words = [_word(keys, 4 * i) for i in range(length // 4)]
    tail = [_signed_byte(keys, i) for i in range(4 * (length // 4), length)]
    seed = pa.repeat(pa.scalar(0, pa.uint32()), len(keys))
    found = []
    for _ in range(NUM_HASHES):
        seed = _murmur(words, tail, length, seed)
        wide = pc.cast(seed, pa.int64())
        signed = pc.subtract(wide, pc.multiply(pc.shift_right(wide, 31), 2**32))
        magnitude = pc.abs(signed)
        remainder = pc.subtract(magnitude, pc.multiply(pc.divide(magnitude, VECTOR_SIZE), VECTOR_SIZE))
        found.append(remainder.cast(pa.uint32()))
    return pa.concat_arrays(found)


def _murmur(words: list[pa.Array], tail: list[pa.Array], length: int, seed: pa.Array) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    def u32(value: int) -> pa.Scalar:
        # Every operand stays uint32: a Python int would promote the arrays to 64 bits.
        return pa.scalar(value, pa.uint32())

    m = u32(_M)
    h = pc.bit_wise_xor(seed, u32(length))
    for k in words:
        k = pc.multiply(k, m)
        k = pc.bit_wise_xor(k, pc.shift_right(k, u32(24)))
        k = pc.multiply(k, m)
        h = pc.bit_wise_xor(pc.multiply(h, m), k)
    if tail:
        for shift, byte in zip((8 * (len(tail) - 1 - i) for i in range(len(tail))), tail, strict=True):
            h = pc.bit_wise_xor(h, pc.shift_left(byte, u32(shift)))
        h = pc.multiply(h, m)
    h = pc.bit_wise_xor(h, pc.shift_right(h, u32(13)))
    h = pc.multiply(h, m)
    return pc.bit_wise_xor(h, pc.shift_right(h, u32(15)))


def _word(keys: pa.Array, start: int) -> pa.Array:
    """The little-endian 32-bit word at byte `start` of every key."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunk = pc.binary_slice(keys, start, start + 4).cast(pa.binary(4))
    return pa.Array.from_buffers(pa.uint32(), len(chunk), [None, chunk.buffers()[1]], offset=chunk.offset)


def _signed_byte(keys: pa.Array, index: int) -> pa.Array:
    """Byte `index` of every key, sign-extended to 32 bits as Java's `(int) byte` is."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunk = pc.binary_slice(keys, index, index + 1).cast(pa.binary(1))
    signed = pa.Array.from_buffers(pa.int8(), len(chunk), [None, chunk.buffers()[1]], offset=chunk.offset)
    return pc.cast(pc.cast(signed, pa.int64()), pa.uint32(), safe=False) if len(signed) else pa.array([], pa.uint32())


def murmur_reference(data: bytes, seed: int) -> int:
    """Hudi's MurmurHash on one key, in plain Python: the specification the vectorized code follows."""
    h = (seed ^ len(data)) & _MASK
    whole = len(data) // 4 * 4
    for i in range(0, whole, 4):
        k = (int.from_bytes(data[i : i + 4], "little") * _M) & _MASK
        k = ((k ^ (k >> 24)) * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    if len(data) > whole:
        for shift, byte in zip(range(8 * (len(data) - whole - 1), -1, -8), data[whole:], strict=True):
            h ^= ((byte - 256 if byte > 127 else byte) << shift) & _MASK
        h = (h * _M) & _MASK
    h = ((h ^ (h >> 13)) * _M) & _MASK
    return h ^ (h >> 15)
