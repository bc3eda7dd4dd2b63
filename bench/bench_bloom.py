"""Benchmark Hudi's DYNAMIC_V0 bloom filter (`runner.hudi.bloom.serialize`) against the previous version.

`serialize` builds the `org.apache.hudi.bloomfilter` footer of every base file the writer and
resize write: 30 chained MurmurHash passes per record key. The previous implementation (pyarrow
compute, one pass over all keys per hash and word, a Python loop for the row assignment) is kept
below, verbatim but renamed, as `previous_serialize`, only so that both can be timed side by side
in one run on the same keys; every run also checks that both return the same string.

Key sets, `--keys` each (default 1,000,000): UUID strings (36 bytes), `id:<n>` (4-10 bytes),
mixed lengths (1-60 characters of a non-ASCII alphabet, 1-180 bytes), and the three mixed
together in one column. Reports the median wall time of `--runs` runs per implementation,
nanoseconds per key, the process CPU time per key (less disturbed by other jobs on the machine)
and the ratio previous / current of the medians.

    .venv/bin/python bench/bench_bloom.py [--keys 1000000] [--runs 3]
    .venv/bin/python bench/bench_bloom.py --quick        # 100,000 keys, 1 run
    .venv/bin/python bench/bench_bloom.py --resize-footer --runs 3   # bench_resize.py's footers
"""

from __future__ import annotations

import argparse
import base64
import functools
import platform
import random
import statistics
import struct
import time
import uuid
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from _common import markdown_table

from runner.hudi import bloom, footer
from runner.hudi.bloom import ENTRIES, MAX_ENTRIES, MURMUR, NUM_HASHES, VECTOR_SIZE

_M = 0x5BD1E995
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-_éüß✓ключ数据"


def key_sets(count: int) -> dict[str, pa.Array]:
    rng = random.Random(42)
    uuids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(count)]
    ids = [f"id:{i}" for i in range(count)]
    mixed = ["".join(rng.choices(ALPHABET, k=rng.randrange(1, 61))) for _ in range(count)]
    together = [(uuids, ids, mixed)[i % 3][i] for i in range(count)]
    return {
        "UUID strings (36 bytes)": pa.array(uuids),
        "`id:<n>` (4-10 bytes)": pa.array(ids),
        "mixed lengths, non-ASCII (1-180 bytes)": pa.array(mixed),
        "all three interleaved": pa.array(together),
    }


def timed(action: Callable[[], str]) -> tuple[float, float, str]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100,000 keys, 1 run")
    parser.add_argument("--resize-footer", action="store_true",
                        help="instead: the record-key footers of bench_resize.py's 512 MiB run (9,556,000 keys "
                             "`str(id)` in 4 groups)")
    args = parser.parse_args()
    if args.resize_footer:
        resize_footers(args.runs)
        return
    count, runs = (100_000, 1) if args.quick else (args.keys, args.runs)
    sets = key_sets(count)
    print(f"{count:,} keys per set, median of {runs} runs; Python {platform.python_version()}, "
          f"numpy {np.__version__}, pyarrow {pa.__version__}")
    rows, raw = [], []
    for name, keys in sets.items():
        times: dict[str, list[tuple[float, float]]] = {"previous": [], "current": []}
        for _ in range(runs):
            # Interleaved, so that a load spike from other jobs hits both about equally.
            wall_old, cpu_old, old = timed(lambda keys=keys: previous_serialize(keys))
            wall_new, cpu_new, new = timed(lambda keys=keys: bloom.serialize(keys))
            assert new == old, f"{name}: the two implementations disagree"
            times["previous"].append((wall_old, cpu_old))
            times["current"].append((wall_new, cpu_new))
        medians = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                   for k, v in times.items()}
        for which in ("previous", "current"):
            wall, cpu = medians[which]
            rows.append([name, which, f"{wall:.2f} s", f"{wall / count * 1e9:,.0f}", f"{cpu / count * 1e9:,.0f}",
                         f"{medians['previous'][0] / wall:.1f}x" if which == "current" else ""])
        raw.append(f"{name}: previous " + ", ".join(f"{w:.2f}" for w, _ in times["previous"]) +
                   "; current " + ", ".join(f"{w:.2f}" for w, _ in times["current"]))
    print(markdown_table(["keys", "implementation", "median", "ns/key (wall)", "ns/key (CPU)", "speed-up"], rows,
                         "llrrrr"))
    print("Raw wall seconds: " + "; ".join(raw) + ". Outputs identical in every run.")


def resize_footers(runs: int, total: int = 9_556_000, groups: int = 4) -> None:
    """The footers `bench_resize.py --total-mb 512 --files 500 --max-file-mb 128` has the runner
    build: record keys `str(id)` for ids 0..9,555,999, in 4 groups of consecutive ids."""
    keys = pc.cast(pa.array(range(total), pa.int64()), pa.string())
    size = -(-total // groups)
    chunks = [keys.slice(i, size) for i in range(0, total, size)]
    seconds: dict[str, list[tuple[float, float]]] = {"footer": [], "bloom": [], "previous bloom": []}
    for run in range(runs):
        seconds["previous bloom"].append(timed(lambda: "".join(previous_serialize(c) for c in chunks))[:2])
        seconds["footer"].append(timed(lambda: str([footer.record_key_footer(c) for c in chunks]))[:2])
        seconds["bloom"].append(timed(lambda: "".join(bloom.serialize(c) for c in chunks))[:2])
        print(f"run {run + 1} (wall s, CPU s): " + "; ".join(f"{k} {v[-1][0]:.2f}, {v[-1][1]:.2f}"
                                                            for k, v in seconds.items()), flush=True)
    wall = {k: statistics.median(w for w, _ in v) for k, v in seconds.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in seconds.items()}
    print(f"record-key footers of {total:,} keys in {groups} groups, serially, median of {runs} runs (wall, CPU): "
          f"whole footer {wall['footer']:.2f} s, {cpu['footer']:.2f} s; bloom filter alone {wall['bloom']:.2f} s, "
          f"{cpu['bloom']:.2f} s; previous bloom filter {wall['previous bloom']:.2f} s, {cpu['previous bloom']:.2f} s")


# ---- The previous implementation (pyarrow compute), for the side-by-side only. ----------------


def previous_serialize(keys: pa.Array) -> str:
    """The Base64 `org.apache.hudi.bloomfilter` footer value for these record keys (in file order)."""
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
    return pa.array(range((VECTOR_SIZE + 7) // 8), pa.uint32())


def _by_length(keys: pa.Array) -> list[pa.Array]:
    lengths = pc.binary_length(keys)
    return [keys.filter(pc.equal(lengths, length)) for length in pc.unique(lengths).to_pylist()]


def _positions(keys: pa.Array) -> pa.Array:
    """All `NUM_HASHES` bit positions of keys of one byte length, as uint32 (hashing them is 4x faster)."""
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
    chunk = pc.binary_slice(keys, start, start + 4).cast(pa.binary(4))
    return pa.Array.from_buffers(pa.uint32(), len(chunk), [None, chunk.buffers()[1]], offset=chunk.offset)


def _signed_byte(keys: pa.Array, index: int) -> pa.Array:
    """Byte `index` of every key, sign-extended to 32 bits as Java's `(int) byte` is."""
    chunk = pc.binary_slice(keys, index, index + 1).cast(pa.binary(1))
    signed = pa.Array.from_buffers(pa.int8(), len(chunk), [None, chunk.buffers()[1]], offset=chunk.offset)
    return pc.cast(pc.cast(signed, pa.int64()), pa.uint32(), safe=False) if len(signed) else pa.array([], pa.uint32())




if __name__ == "__main__":
    main()
