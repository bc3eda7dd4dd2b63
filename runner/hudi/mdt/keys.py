"""Record keys and shard choice of the metadata table's index partitions (pure).

Facts (apache/hudi `ColumnIndexID`/`PartitionIndexID`/`FileIndexID`, `HoodieMetadataPayload`,
`HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex`; checked on every column_stats key of the
fixture v9_txns_simple_meta):
- column and partition ids are XXHash64 (seed 0xdabadaba, sign-extended) of the UTF-8 name, as
  8 big-endian bytes, Base64; the file id is the MD5 of the file name, Base64.
- column_stats key = column id + partition id + file id; bloom_filters key = partition id + file id.
- the shard of a key is |Java String.hashCode(key)| mod the partition's file-group count.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import struct
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

_SEED = 0xFFFFFFFFDABADABA  # Hudi passes the int 0xdabadaba; Java widens it to a negative long
_MASK = 0xFFFFFFFFFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = (
    0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5,
)


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _MASK, 31) * _P1) & _MASK


def _merge(acc: int, value: int) -> int:
    return ((acc ^ _round(0, value)) * _P1 + _P4) & _MASK


def xxh64(data: bytes, seed: int = _SEED) -> int:
    """XXHash64, the reference algorithm (the standard library has none)."""
    length, pos = len(data), 0
    if length >= 32:
        v = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed & _MASK, (seed - _P1) & _MASK]
        while pos + 32 <= length:
            for i in range(4):
                v[i] = _round(v[i], struct.unpack_from("<Q", data, pos + 8 * i)[0])
            pos += 32
        acc = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _MASK
        for lane in v:
            acc = _merge(acc, lane)
    else:
        acc = (seed + _P5) & _MASK
    acc = (acc + length) & _MASK
    while pos + 8 <= length:
        acc = (_rotl(acc ^ _round(0, struct.unpack_from("<Q", data, pos)[0]), 27) * _P1 + _P4) & _MASK
        pos += 8
    if pos + 4 <= length:
        acc = (_rotl(acc ^ (struct.unpack_from("<I", data, pos)[0] * _P1) & _MASK, 23) * _P2 + _P3) & _MASK
        pos += 4
    while pos < length:
        acc = (_rotl(acc ^ (data[pos] * _P5) & _MASK, 11) * _P1) & _MASK
        pos += 1
    acc ^= acc >> 33
    acc = (acc * _P2) & _MASK
    acc ^= acc >> 29
    acc = (acc * _P3) & _MASK
    return acc ^ (acc >> 32)


@functools.lru_cache(maxsize=4096)  # columns and partitions repeat for every file of a clean
def name_id(name: str) -> str:
    return base64.b64encode(struct.pack(">Q", xxh64(name.encode("utf-8")))).decode("ascii")


def file_id(file_name: str) -> str:
    return base64.b64encode(hashlib.md5(file_name.encode("utf-8")).digest()).decode("ascii")


def column_stats_key(column: str, partition: str, file_name: str) -> str:
    return name_id(column) + name_id(partition) + file_id(file_name)


def bloom_filter_key(partition: str, file_name: str) -> str:
    return name_id(partition) + file_id(file_name)


@functools.lru_cache(maxsize=1 << 20)
def _chunk_hash(chunk: str) -> tuple[int, int]:
    """(String.hashCode of the chunk as unsigned 32 bits, 31 ** its UTF-16 length mod 2**32)."""
    h, units = 0, chunk.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h, pow(31, len(units) // 2, 1 << 32)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int.

    The hash is linear (`h(a + b) = h(a) * 31**len(b) + h(b)`), so it is folded over 12-character
    chunks whose hashes are cached: index keys repeat their column, partition and file parts.
    """
    h = 0
    for i in range(0, len(text), 12):
        chunk_hash, power = _chunk_hash(text[i : i + 12])
        h = (h * power + chunk_hash) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def shard(key: str, file_groups: int) -> int:
    """`mapRecordKeyToFileGroupIndex`: `Math.abs(Math.abs(hash) % count)`."""
    return _shard_of_hash(java_string_hash(key), file_groups)


def _shard_of_hash(h: int, file_groups: int) -> int:
    # Hudi's `Math.abs(Math.abs(h) % n)`: the outer abs matters only for Integer.MIN_VALUE, whose
    # Math.abs stays negative and whose Java remainder is then negative too.
    return abs(h) % file_groups


def shards(keys_: Iterable[str], file_groups: int) -> list[int]:
    """`shard` of many keys. Index keys are a short, repeating head (column and partition ids) and
    a file id; the hash of each part is cached and the two combined (`h(a + b) = h(a) * 31**len(b)
    + h(b)`), which makes a clean's millions of keys a few dictionary look-ups each."""
    keys_ = list(keys_)
    if len(keys_) >= _VECTOR_MIN and _same_length_ascii(keys_):
        return _vector_shards(keys_, file_groups)
    out: list[int] = []
    append, part_hash, power = out.append, _part_hash, _power
    for key in keys_:
        if not key.isascii():  # UTF-16 lengths differ from code-point counts: the general path
            append(shard(key, file_groups))
            continue
        rest = key[_HEAD:]
        h = (part_hash(key[:_HEAD]) * power(len(rest)) + part_hash(rest)) & 0xFFFFFFFF
        if h & 0x80000000:
            h = (1 << 32) - h  # |h| of the signed int, 2**31 for Integer.MIN_VALUE (see `shard`)
        append(h % file_groups)
    return out


# column id + partition id: two 12-character Base64 XXHash64 ids
_HEAD = 24


@functools.lru_cache(maxsize=1 << 20)
def _part_hash(part: str) -> int:
    return java_string_hash(part) & 0xFFFFFFFF


@functools.lru_cache(maxsize=256)
def _power(length: int) -> int:
    """31 ** length mod 2**32 (for ASCII text, UTF-16 length = code points)."""
    return pow(31, length, 1 << 32)


# Below this many keys the per-key loop is as fast as setting up the arrays.
_VECTOR_MIN = 4096


def _same_length_ascii(keys_: list[str]) -> bool:
    length = len(keys_[0])
    return all(len(k) == length for k in keys_) and "".join(keys_).isascii()


def _vector_shards(keys_: list[str], file_groups: int) -> list[int]:
    """`shard` over arrays: for ASCII keys of one length, Java's hash is `h = 31 * h + byte` per
    column of a (keys x length) byte matrix, in wrapping 32-bit arithmetic (Arrow's unchecked
    multiply and add wrap); Arrow's integer divide truncates like Java's, so `h - h / n * n` is `%`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    length = len(keys_[0])
    raw = pa.py_buffer("".join(keys_).encode("ascii"))
    flat = pa.Array.from_buffers(pa.uint8(), len(keys_) * length, [None, raw])
    matrix = pa.FixedSizeListArray.from_arrays(flat, length)
    h = pa.nulls(len(keys_), pa.uint32()).fill_null(0)
    thirty_one = pa.scalar(31, pa.uint32())
    for i in range(length):
        h = pc.add(pc.multiply(h, thirty_one), pc.list_element(matrix, i).cast(pa.uint32()))
    signed = pc.abs(h.view(pa.int32()))  # Math.abs: Integer.MIN_VALUE stays negative
    n = pa.scalar(file_groups, pa.int32())
    shard_ids: list[int] = pc.abs(pc.subtract(signed, pc.multiply(pc.divide(signed, n), n))).to_pylist()
    return shard_ids


# --- whole arrays (a clean's index tombstones: one row per file or key) -------------------------


def file_id_rows(file_names: Sequence[bytes]) -> npt.NDArray[np.uint8]:
    """`file_id` of many UTF-8 file names as a (names x 24) matrix of its ASCII characters.

    Each 16-byte MD5 digest is padded to 18 bytes, so the Base64 of all of them at once is the
    concatenation of each one's (3-byte groups never straddle two digests); the two characters that
    encode the padding zeros become Base64's `==`, as they are for a lone 16-byte digest.
    """
    padded = b"".join([hashlib.md5(name).digest() + b"\x00\x00" for name in file_names])
    rows = np.frombuffer(base64.b64encode(padded), np.uint8).reshape(len(file_names), 24).copy()
    rows[:, 22:] = ord("=")
    return rows


def java_hash_rows(rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint32]:
    """Java's `String.hashCode` of each row of ASCII characters, as unsigned 32-bit ints: the
    `h = 31 * h + c` fold runs down the columns in wrapping uint32 arithmetic."""
    h = np.zeros(len(rows), np.uint32)
    thirty_one = np.uint32(31)
    for column in rows.T:
        h *= thirty_one
        h += column
    return h


def shard_of_hashes(hashes: npt.NDArray[np.uint32], file_groups: int) -> npt.NDArray[np.int64]:
    """`_shard_of_hash` of many unsigned 32-bit hashes: |signed hash| (2**31 for Integer.MIN_VALUE,
    whose Math.abs stays negative, as `shard` explains) mod the group count."""
    signed = hashes.view(np.int32).astype(np.int64)
    result: npt.NDArray[np.int64] = np.abs(signed) % file_groups
    return result
