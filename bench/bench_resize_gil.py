"""How long the rewrite's pyarrow work is blocked by Python code holding the GIL on another thread:
the measurement behind the resize4 round's two changes, which does not depend on the machine's load.

Generates the benchmark table of `bench_resize.py` (`--total-mb` in `--files` files), then
`--rounds` times, variants interleaved (the order alternating each round):

- `reads`: one thread decodes `--inputs` of its files as the rewrite does (`iter_batches` through a
  Python file object, the file name column left out), with pre-buffering on (pyarrow's default:
  the column chunks are read on Arrow's I/O thread) and off (the rewrite's setting), while another
  thread decodes the inputs' Base64 bloom filters with `binascii` (holding the GIL) until it is done;
- `filters`: one thread writes a Parquet file of 12 inputs' rows into a Python file object (the
  writer calls it for every page), while another thread decodes the filters of 89 inputs (a group's)
  with `binascii` or with the resize4 round's numpy decoder (the GIL released in each step; the runner
  decodes with pybase64 since the resize5 round).

Printed per variant, for the measured thread, from `/proc/thread-self/schedstat`: wall, on-CPU
time, run-queue wait (other processes had the core) and the rest, "blocked" (waiting for the GIL
or for another thread). Linux only.

    .venv/bin/python bench/bench_resize_gil.py --total-mb 512 --files 500 --rounds 8
"""

from __future__ import annotations

import argparse
import binascii
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from _common import numpy_base64_head, thread_clock
from bench_resize import PARTITION, generate

from runner.hudi import footer

Figures = tuple[float, float, float, float]  # wall, cpu, run-queue wait, blocked
FILE_NAME = "_hoodie_file_name"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-mb", type=int, default=512)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--inputs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_resize_gil_"))
    try:
        files = sorted((generate(root, args.total_mb, args.files) / PARTITION).glob("*.parquet"))
        filters = [_filter_value(f) for f in files[:89]]
        table = pa.concat_tables([pq.read_table(f).drop_columns([FILE_NAME]) for f in files[:12]])
        gil_holder = _binascii_loop(filters[:10])
        variants: dict[str, Callable[[], Figures]] = {
            "reads, pre-buffered": lambda: _beside(gil_holder, lambda: _decode(files[:args.inputs], True)),
            "reads, not pre-buffered": lambda: _beside(gil_holder, lambda: _decode(files[:args.inputs], False)),
            "filters by binascii": lambda: _beside(_binascii_loop(filters), lambda: _write(table)),
            "filters by numpy": lambda: _beside(_numpy_loop(filters), lambda: _write(table)),
        }
        results: dict[str, list[Figures]] = {name: [] for name in variants}
        for r in range(args.rounds):
            for name in list(variants)[:: 1 if r % 2 == 0 else -1]:
                results[name].append(variants[name]())
                wall, cpu, runq, blocked = results[name][-1]
                print(f"round {r + 1} {name:24s} wall {wall:.3f} cpu {cpu:.3f} run queue {runq:.3f} "
                      f"blocked {blocked:.3f}; load average {os.getloadavg()[0]:.1f}", flush=True)
        for name, runs in results.items():
            wall, cpu, runq, blocked = (statistics.median(x[k] for x in runs) for k in range(4))
            print(f"{name:24s} median: wall {wall:.3f} cpu {cpu:.3f} run queue {runq:.3f} blocked {blocked:.3f} "
                  f"(per round {[round(x[3], 3) for x in runs]})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _filter_value(path: Path) -> bytes:
    entries = pq.ParquetFile(path).metadata.metadata or {}
    return entries[footer.BLOOM_FILTER.encode()]


def _binascii_loop(values: list[bytes]) -> Callable[[], None]:
    def decode() -> None:
        for v in values:
            binascii.a2b_base64(v, strict_mode=True)
    return decode


def _numpy_loop(values: list[bytes]) -> Callable[[], None]:
    def decode() -> None:
        for v in values:  # the resize4 round's decoder, which the runner used then
            numpy_base64_head(v)
            binascii.a2b_base64(v[-4:], strict_mode=True)
    return decode


def _decode(files: list[Path], pre_buffer: bool) -> None:
    for path in files:
        with open(path, "rb") as f:
            parquet = pq.ParquetFile(f, pre_buffer=pre_buffer)
            columns = [n for n in parquet.schema_arrow.names if n != FILE_NAME]
            for batch in parquet.iter_batches(columns=columns, use_threads=False):
                pa.Table.from_batches([batch])


def _write(table: pa.Table) -> None:
    with tempfile.TemporaryFile() as f:
        pq.write_table(table, f, compression="snappy")


def _beside(other: Callable[[], None], measured: Callable[[], None]) -> Figures:
    """Run `measured` on a thread while `other` runs in a loop on another, until `measured` ends."""
    stop = threading.Event()
    figures: list[Figures] = []

    def loop() -> None:
        while not stop.is_set():
            other()

    def timed() -> None:
        wall, (cpu, runq) = time.perf_counter(), thread_clock()
        measured()
        wall, (cpu2, runq2) = time.perf_counter() - wall, thread_clock()
        figures.append((wall, cpu2 - cpu, runq2 - runq, wall - (cpu2 - cpu) - (runq2 - runq)))
        stop.set()

    threads = [threading.Thread(target=loop), threading.Thread(target=timed)]
    threads[0].start()
    time.sleep(0.05)  # the GIL holder is running before the measured thread starts
    threads[1].start()
    for t in threads[::-1]:
        t.join()
    return figures[0]


if __name__ == "__main__":
    main()
