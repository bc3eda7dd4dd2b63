"""One fixed upsert, the runner's and delta-rs's, interleaved in one process: wall, user and kernel
CPU, minor page faults and context switches from `getrusage`.

`bench_writer.py` grows its tables run by run (each run rewrites more records), so its runs differ;
here every run does the same work. Both tables get the rows of `bench_writer_phases.py` (8
partitions, record key `id`, precombine `ts`): a bulk insert of `--rows` records, then an upsert of
`--rows` more, half of them updates. Each run then copies that table and upserts the same next
`--rows` records (half updates) into the copy, the runner's `runner.write` (Arrow input, gzip) and
delta-rs's `DeltaTable.merge` (gzip, update all matched, insert the rest) in turn. The first run of
each is a warm-up and not counted. Prints each run, then the medians and the runner's ratio to
delta-rs for each figure.

Where `bench_writer_phases.py` says which step costs what, this says how the two compare in the
kernel's terms: time in the kernel, page faults (fresh memory touched), and how often the
threads wait.

Usage (from the repository root; `pip install deltalake` first):
    ARROW_DEFAULT_MEMORY_POOL=jemalloc .venv/bin/python bench/bench_writer_rusage.py --rows 100000 --runs 8
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_writer import delta_load, delta_merge
from bench_writer_phases import loaded_table, rows

import runner
from runner.writer.options import CODEC_KEY

FIGURES = ("wall s", "user s", "kernel s", "minor faults", "voluntary switches", "involuntary switches")


def measured(work: Callable[[], object]) -> tuple[float, ...]:
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    work()
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF)
    return (wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime,
            after.ru_minflt - before.ru_minflt, after.ru_nvcsw - before.ru_nvcsw, after.ru_nivcsw - before.ru_nivcsw)


def fresh_copy(base: Path, copy: Path) -> Path:
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(base, copy)
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="records per upsert (default 100000)")
    parser.add_argument("--runs", type=int, default=8, help="runs of each side, the first a warm-up (default 8)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_writer_rusage_"))
    try:
        options = {CODEC_KEY: "gzip"}
        hudi = loaded_table(work / "hudi", args.rows, virtual_keys=False, options=options)
        delta = work / "delta" / "base"
        delta_load(delta, rows(0, args.rows, 0), "gzip")
        delta_merge(delta, rows(args.rows // 2, args.rows, 1), "gzip")
        data = rows(args.rows, args.rows, 2)
        results: dict[str, list[tuple[float, ...]]] = {"runner": [], "delta-rs": []}
        for run in range(args.runs):
            for side in results:
                if side == "runner":
                    copy = fresh_copy(hudi, work / "hudi-copy")
                    figures = measured(functools.partial(runner.write, data, "t", project_dir=copy, options=options))
                else:
                    copy = fresh_copy(delta, work / "delta-copy")
                    figures = measured(functools.partial(delta_merge, copy, data, "gzip"))
                print(f"run {run + 1} {side:8s} " + ", ".join(
                    f"{name} {value:.3f}" if name.endswith(" s") else f"{name} {value:.0f}"
                    for name, value in zip(FIGURES, figures, strict=True))
                    + (" (warm-up)" if not run else ""))
                if run:
                    results[side].append(figures)
        print(f"medians of {args.runs - 1} runs each, load {' '.join(f'{x:.1f}' for x in os.getloadavg())}:")
        print("| figure | runner | delta-rs | runner / delta-rs |\n|---|---:|---:|---:|")
        for i, name in enumerate(FIGURES):
            ours = statistics.median(r[i] for r in results["runner"])
            theirs = statistics.median(r[i] for r in results["delta-rs"])
            ratio = f"{ours / theirs:.2f}x" if theirs else "-"
            print(f"| {name} | {ours:.3f} | {theirs:.3f} | {ratio} |" if name.endswith(" s")
                  else f"| {name} | {ours:.0f} | {theirs:.0f} | {ratio} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
