"""Spark's `hash()` of an int (Murmur3 x86 32-bit, seed 42), computed in Python.

`repartition(n, column)` sends a row to partition `pmod(hash(column), n)`. Knowing that rule on
the driver lets the writer pick, for each target file group, an int that lands in a partition of
its own without asking Spark (a probe job per write). If a Spark version hashed differently the
write would still be correct: two file groups would share a task, which handles runs of targets.
"""

from __future__ import annotations

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_MASK = 0xFFFFFFFF
SEED = 42  # the seed of Spark SQL's `hash` function and of hash partitioning


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def hash_int(value: int, seed: int = SEED) -> int:
    """Spark's `hash(cast(value as int))`: a signed 32-bit int."""
    k1 = (value & _MASK) * _C1 & _MASK
    k1 = _rotl(k1, 15) * _C2 & _MASK
    h1 = seed ^ k1
    h1 = (_rotl(h1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4  # the input's length in bytes
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_keys(n: int) -> list[int]:
    """`keys[i]` is the smallest non-negative int that `repartition(n, ...)` puts in partition `i`."""
    found: dict[int, int] = {}
    key = 0
    while len(found) < n:
        found.setdefault(hash_int(key) % n, key)  # Python's % of a positive n is Spark's pmod
        key += 1
    return [found[i] for i in range(n)]
