"""The rewrite with the inputs' bloom filters decoded by pybase64 or by numpy (the decoder before the
resize5 round, `_common.numpy_base64_head`), interleaved in one process: process CPU, the time the
two threads were blocked, and the thread CPU of the record-key footer (`resize_job._footer`: the
filters merged and checked, the key range), which do not depend on the machine's load as wall time does.

Generates the benchmark table of `bench_resize.py` (`--total-mb` in `--files` files), cuts it into
groups of at most 128 MiB, then `--rounds` times, the variants alternating which goes first, runs
every group's `rewrite_group` on two threads taking the largest group first from one queue (as the
driver engine does), and deletes the files written. Linux only (schedstat).

    .venv/bin/python bench/bench_resize_filters.py --total-mb 512 --files 500 --rounds 8
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from _common import numpy_base64_head, thread_clock
from bench_resize import PARTITION, generate

from runner.execute import resize_job
from runner.hudi import bloom_merge
from runner.storage.resolve import storage_for

GROUP_BYTES = 128 * 1024 * 1024
Figures = tuple[float, float, float, float]  # wall, process CPU, blocked (both threads), footer CPU


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-mb", type=int, default=512)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_resize_filters_"))
    try:
        table = generate(root, args.total_mb, args.files)
        groups = _groups(table)
        print("groups (MiB):", [round(sum((table / p).stat().st_size for p in g) / 2**20) for g in groups])
        results: dict[str, list[Figures]] = {"numpy": [], "pybase64": []}
        for r in range(args.rounds):
            for name in list(results)[:: 1 if r % 2 == 0 else -1]:
                results[name].append(_run(table, groups, name))
                wall, cpu, blocked, footer_cpu = results[name][-1]
                print(f"round {r + 1} {name:8s} wall {wall:.2f} cpu {cpu:.2f} blocked {blocked:.2f} "
                      f"footer cpu {footer_cpu:.3f}; load average {os.getloadavg()[0]:.1f}", flush=True)
        for name, runs in results.items():
            wall, cpu, blocked, footer_cpu = (statistics.median(x[k] for x in runs) for k in range(4))
            print(f"{name:8s} median: wall {wall:.2f} cpu {cpu:.2f} blocked {blocked:.2f} footer cpu {footer_cpu:.3f}")
        pairs = list(zip(results["numpy"], results["pybase64"], strict=True))
        for k, label in ((1, "cpu"), (3, "footer cpu"), (0, "wall")):
            ratios = [b[k] / a[k] for a, b in pairs]
            print(f"pybase64 / numpy {label}: median {statistics.median(ratios):.3f} "
                  f"(per round {[round(x, 3) for x in ratios]})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _groups(table: Path) -> list[list[str]]:
    """The partition's files cut in order into groups of at most GROUP_BYTES, largest first."""
    groups: list[list[str]] = [[]]
    size = 0
    for f in sorted((table / PARTITION).glob("*.parquet")):
        if groups[-1] and size + f.stat().st_size > GROUP_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(f"{PARTITION}/{f.name}")
        size += f.stat().st_size
    return sorted(groups, key=lambda g: -sum((table / p).stat().st_size for p in g))


def _run(table: Path, groups: list[list[str]], decoder: str) -> Figures:
    storage = storage_for(str(table))
    simd = bloom_merge._simd_head
    footer = resize_job._footer
    footer_cpu: list[float] = []

    def timed_footer(*args: Any) -> dict[str, str]:
        started = time.thread_time()
        entries = footer(*args)
        footer_cpu.append(time.thread_time() - started)
        return entries

    todo: queue.Queue[list[str]] = queue.Queue()
    for g in groups:
        todo.put(g)
    blocked: list[float] = []
    written: list[str] = []

    def worker(n: int) -> None:
        wall, (cpu, runq) = time.perf_counter(), thread_clock()
        while True:
            try:
                inputs = todo.get_nowait()
            except queue.Empty:
                break
            group = resize_job.GroupRewrite(PARTITION, f"{uuid.uuid4()}-0", tuple(inputs))
            written.append(resize_job.rewrite_group(storage, group, "20991231235959999", f"{n}-0-{n}").path)
        wall, (cpu2, runq2) = time.perf_counter() - wall, thread_clock()
        blocked.append(wall - (cpu2 - cpu) - (runq2 - runq))

    if decoder == "numpy":
        bloom_merge._simd_head = numpy_base64_head
    resize_job._footer = timed_footer
    try:
        os.sync()
        wall, cpu = time.perf_counter(), time.process_time()
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        bloom_merge._simd_head = simd
        resize_job._footer = footer
    for path in written:
        os.unlink(table / path)
    return wall, cpu, sum(blocked), sum(footer_cpu)


if __name__ == "__main__":
    main()
