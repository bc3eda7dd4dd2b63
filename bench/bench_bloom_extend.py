"""Micro-benchmark of the writer's record-key footer for one merged file: the current code against the previous.

A copy-on-write upsert of the phase bench (`bench_writer_phases.py --rows 100000`) rewrites each
of its 8 files with the file's old keys in place and about 6,250 new keys after them, and builds
that file's footer with `footer.extended_record_key_footer`: the old filter's sample check
(`bloom_merge.rows_hold` of 32 old keys), `bloom.extend` (only the new keys hashed) and the key
range. This times, on one such file of `--held` old keys and `--added` new ones after them:

- `--keys phase` (the default): `str(3 + 8 i)`, what the phase bench's files hold (the 18,750 old
  keys of 1-6 digits, the 6,250 new ones of 6), with `--held 18750 --added 6250`;
- `--keys digits`: `str(100000 + 8 i)`, all 6 digits (keys of one length);
- `--keys uuids`: random UUID strings (36 bytes);

and times

- `extend`: `bloom.extend` alone (the old filter's rows already decoded),
- `serialize`: `bloom.serialize` of all the keys (a file written without an old filter),
- `rows_hold`: the sample check of 32 old keys,
- `key_range`: `footer.key_range` of all the keys,
- `footer`: the whole `extended_record_key_footer` (decoding the old filter included),

each as the previous implementation (`tests/hudi/previous_bloom.py`, verbatim as it stood at
f4c38df; the key range as Arrow's `pc.min_max`) and the current one, interleaved rep by rep in one
process on the same keys, and checks that both give the same value. Reports the median thread CPU
time (`time.thread_time`) of `--reps` reps of each and the ratio previous / current.

    PYTHONPATH=. .venv/bin/python bench/bench_bloom_extend.py [--reps 400] [--held 18750] [--added 6250]
        [--keys phase|digits|uuids]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner.hudi import bloom, bloom_merge, footer
from tests.hudi import previous_bloom


def previous_rows_hold(rows: list[np.ndarray], keys: pa.Array) -> np.ndarray:
    """`bloom_merge.rows_hold` over the previous `bit_positions`."""
    positions = previous_bloom.bit_positions(keys)
    found = np.zeros(len(keys), np.bool_)
    for row in rows:
        found |= ((row[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1).all(axis=0)
    return found


def previous_key_range(keys: pa.Array) -> tuple[str, str] | None:
    """`footer.key_range` as it stood: Arrow's min_max when Java's order agrees with the bytes'."""
    if footer._may_order_differently(keys):
        return footer.key_range(keys)
    bounds = pc.min_max(keys)
    return bounds["min"].as_py(), bounds["max"].as_py()


def previous_footer(old: bloom_merge.InputFilter, keys: pa.Array) -> tuple[dict[str, str], str]:
    """`footer.extended_record_key_footer` as it stood, on the previous hashing and key range."""
    rows = bloom_merge.dynamic_rows(old)
    sample = keys.take(pa.array(footer._spread(0, old.records)))
    assert previous_rows_hold(rows, sample).all()
    value = previous_bloom.extend(rows, old.records, keys.slice(old.records))
    entries = {footer.BLOOM_FILTER: value, footer.BLOOM_FILTER_TYPE_CODE: bloom.TYPE_CODE}
    return entries | footer.range_footer(previous_key_range(keys)), "extended"


def cpu_ms(function: Callable[[], Any]) -> float:
    start = time.thread_time_ns()
    function()
    return (time.thread_time_ns() - start) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--held", type=int, default=18_750)
    parser.add_argument("--added", type=int, default=6_250)
    parser.add_argument("--keys", choices=["phase", "digits", "uuids"], default="phase")
    args = parser.parse_args()
    total = args.held + args.added
    if args.keys == "uuids":
        rng = random.Random(0)
        texts = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(total)]
    else:
        texts = [str((3 if args.keys == "phase" else 100_000) + 8 * i) for i in range(total)]
    keys = pa.array(texts, pa.string())
    held, added = keys.slice(0, args.held), keys.slice(args.held)
    value = bloom.serialize(held)
    old = footer.input_filter("p/old.parquet", {footer.BLOOM_FILTER.encode(): value.encode(),
                                                footer.BLOOM_FILTER_TYPE_CODE.encode(): bloom.TYPE_CODE.encode()},
                              args.held)
    rows = bloom_merge.dynamic_rows(old)
    sample = keys.take(pa.array(footer._spread(0, args.held)))
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "extend": (lambda: previous_bloom.extend(rows, args.held, added), lambda: bloom.extend(rows, args.held, added)),
        "serialize": (lambda: previous_bloom.serialize(keys), lambda: bloom.serialize(keys)),
        "rows_hold": (lambda: previous_rows_hold(rows, sample), lambda: bloom_merge.rows_hold(rows, sample)),
        "key_range": (lambda: previous_key_range(keys), lambda: footer.key_range(keys)),
        "footer": (lambda: previous_footer(old, keys), lambda: footer.extended_record_key_footer(old, keys)),
    }
    for name, (before, after) in cases.items():
        a, b = before(), after()
        same = np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
        if not same:
            raise SystemExit(f"{name}: the current code's value differs from the previous one's")
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in cases}
    for rep in range(args.reps):
        for name, (before, after) in cases.items():
            first, second = (before, after) if rep % 2 == 0 else (after, before)
            t_first, t_second = cpu_ms(first), cpu_ms(second)
            previous, current = (t_first, t_second) if rep % 2 == 0 else (t_second, t_first)
            times[name][0].append(previous)
            times[name][1].append(current)
    kind = {"phase": "str(3 + 8 i), the phase bench's keys", "digits": "str(100000 + 8 i), 6 digits",
            "uuids": "UUID strings (36 bytes)"}[args.keys]
    print(f"{args.held:,} held + {args.added:,} added keys, {kind}; median thread CPU of {args.reps} reps; "
          f"Python {sys.version.split()[0]}, numpy {np.__version__}, pyarrow {pa.__version__}")
    print("| what | previous ms | current ms | previous / current |")
    print("|---|---:|---:|---:|")
    for name, (previous_times, current_times) in times.items():
        p, c = statistics.median(previous_times), statistics.median(current_times)
        print(f"| {name} | {p:.3f} | {c:.3f} | {p / c:.2f}x |")


if __name__ == "__main__":
    main()
