"""The resize's engines or the driver's pools on the same groups, interleaved so that both meet the
same load.

Generates the benchmark table of `bench_resize.py` (`--total-mb` in `--files` files), then `--pairs`
times rewrites a fresh hard-linked copy with each of two variants, alternating which goes first,
and prints each run's wall time, CPU time (this process's, plus the worker processes' own clocks
for the process pool, whose workers are the forkserver's children, not this process's) and peak
memory added (the process tree's), and per pair the ratio of the first variant to the second.

`--compare engines` (the default): the driver engine (the pool it chooses) against the Spark
engine (`local[2]`, started before timing). `--compare pools`: the driver engine on threads against
the driver engine on worker processes, with no Spark session. `--strategy binary_copy` times binary
copy instead of the rewrite. `--fresh` (pools only) runs each resize in a new interpreter, as a
`runner apply` would meet it: no allocator pages warmed by the runs before, the forkserver started
inside the timing; the child times `run_resize` alone (imports and planning are left out).

    .venv/bin/python bench/bench_resize_engines.py --total-mb 384 --files 270 --pairs 5
    .venv/bin/python bench/bench_resize_engines.py --total-mb 512 --files 500 --pairs 5 --compare pools
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from _common import PeakRss
from bench_resize import MIB, generate, linked_copy, run_runner

from runner.declarations.model import FileSizing, ResizeStrategy, SparkSettings
from runner.execute import resize_engine
from runner.hudi.state import read_table_state
from runner.plan.sizing import plan_sizing
from runner.storage import storage_for

VARIANTS = {"engines": ("driver", "spark"), "pools": ("threads", "processes")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-mb", type=int, default=384)
    parser.add_argument("--files", type=int, default=270)
    parser.add_argument("--max-file-mb", type=int, default=128)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--compare", choices=sorted(VARIANTS), default="engines")
    parser.add_argument("--strategy", choices=["rewrite", "binary_copy"], default="rewrite")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--one", nargs=2, metavar=("TABLE", "POOL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fresh and args.compare != "pools":
        parser.error("--fresh runs with --compare pools only")
    if args.one:
        print(json.dumps(_one(Path(args.one[0]), args.one[1], args.max_file_mb, args.strategy)))
        return
    root = Path(tempfile.mkdtemp(prefix="bench_resize_engines_"))
    try:
        source = generate(root, args.total_mb, args.files)
        limit = args.max_file_mb * MIB
        step = plan_sizing(FileSizing(max_file_size=limit, small_file_limit=limit - 1),
                           read_table_state(storage_for(str(source))))
        assert step is not None and not step.is_empty
        if args.strategy == "binary_copy":
            step = replace(step, strategy=ResizeStrategy.BINARY_COPY)
        spark: object = None
        if args.compare == "engines":
            from runner.execute.spark import get_spark

            spark = get_spark(SparkSettings(master="local[2]", conf=(("spark.ui.enabled", "false"),)))
        else:  # the driver engine on a local master; no session is started for it
            spark = resize_engine.SparkOnDemand(SparkSettings(master="local[2]"), _no_spark)
        first, second = VARIANTS[args.compare]
        walls: dict[str, list[float]] = {first: [], second: []}
        cpus: dict[str, list[float]] = {first: [], second: []}
        added: dict[str, list[float]] = {first: [], second: []}
        print(f"{len(step.groups)} groups, {args.strategy}; load average {os.getloadavg()[0]:.1f}")
        for pair in range(args.pairs):
            for variant in (second, first) if pair % 2 else (first, second):
                table = linked_copy(source, root / f"{variant}{pair}")
                os.sync()
                with PeakRss() as memory:
                    if args.fresh:
                        wall, cpu = _in_a_new_process(table, variant, args)
                    else:
                        started, cpu = time.perf_counter(), time.process_time()
                        if args.compare == "engines":
                            run_runner(table, step, spark, engine=variant)  # type: ignore[arg-type]
                        else:
                            run_runner(table, step, spark, engine="driver", pool=variant)  # type: ignore[arg-type]
                        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
                        cpu += resize_engine.LAST_RUN.worker_cpu
                walls[variant].append(wall)
                cpus[variant].append(cpu)
                added[variant].append(memory.added / MIB)
                print(f"pair {pair + 1}: {variant:9s} {wall:6.2f} s, CPU {cpu:6.2f} s"
                      f"{' (driver only)' if variant == 'spark' else ''}, +{memory.added / MIB:.0f} MiB, "
                      f"load average {os.getloadavg()[0]:.1f}", flush=True)
                shutil.rmtree(table)
        for variant in (first, second):
            print(f"{variant}: median wall {statistics.median(walls[variant]):.2f} s, runs "
                  f"{[round(v, 2) for v in walls[variant]]}; median CPU {statistics.median(cpus[variant]):.2f} s; "
                  f"median memory added +{statistics.median(added[variant]):.0f} MiB")
        ratios = [a / b for a, b in zip(walls[first], walls[second], strict=True)]
        print(f"{first} / {second} per pair {[round(r, 2) for r in ratios]}, median {statistics.median(ratios):.2f}; "
              f"ratio of medians {statistics.median(walls[first]) / statistics.median(walls[second]):.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _in_a_new_process(table: Path, pool: str, args: argparse.Namespace) -> tuple[float, float]:
    done = subprocess.run([sys.executable, __file__, "--one", str(table), pool, "--max-file-mb",
                           str(args.max_file_mb), "--strategy", args.strategy],
                          check=True, capture_output=True, text=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return float(figures["wall"]), float(figures["cpu"])


def _one(table: Path, pool: str, max_file_mb: int, strategy: str) -> dict[str, float]:
    """One resize of `table` on the driver's `pool`, in this (new) process: wall and CPU seconds."""
    limit = max_file_mb * MIB
    step = plan_sizing(FileSizing(max_file_size=limit, small_file_limit=limit - 1),
                       read_table_state(storage_for(str(table))))
    assert step is not None
    if strategy == "binary_copy":
        step = replace(step, strategy=ResizeStrategy.BINARY_COPY)
    spark = resize_engine.SparkOnDemand(SparkSettings(master="local[2]"), _no_spark)
    started, cpu = time.perf_counter(), time.process_time()
    run_runner(table, step, spark, engine="driver", pool=pool)  # type: ignore[arg-type]
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"wall": wall, "cpu": cpu + resize_engine.LAST_RUN.worker_cpu}


def _no_spark() -> object:
    raise AssertionError("comparing the driver's pools starts no Spark session")


if __name__ == "__main__":
    main()
