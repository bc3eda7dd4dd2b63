"""The resize's two engines on the same groups, interleaved so that both meet the same load.

Generates the benchmark table of `bench_resize.py` (`--total-mb` in `--files` files), then `--pairs`
times rewrites a fresh hard-linked copy with the driver engine and another with the Spark engine
(`local[2]`, started before timing), alternating which goes first, and prints each pair's wall
times, the driver's CPU time, and the ratio driver / Spark per pair and of the medians.

    .venv/bin/python bench/bench_resize_engines.py --total-mb 384 --files 270 --pairs 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench_resize import MIB, generate, linked_copy, run_runner

from runner.declarations.model import FileSizing, SparkSettings
from runner.execute.spark import get_spark
from runner.hudi.state import read_table_state
from runner.plan.sizing import plan_sizing
from runner.storage import storage_for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-mb", type=int, default=384)
    parser.add_argument("--files", type=int, default=270)
    parser.add_argument("--max-file-mb", type=int, default=128)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_resize_engines_"))
    try:
        source = generate(root, args.total_mb, args.files)
        limit = args.max_file_mb * MIB
        step = plan_sizing(FileSizing(max_file_size=limit, small_file_limit=limit - 1),
                           read_table_state(storage_for(str(source))))
        assert step is not None and not step.is_empty
        spark = get_spark(SparkSettings(master="local[2]", conf=(("spark.ui.enabled", "false"),)))
        walls: dict[str, list[float]] = {"driver": [], "spark": []}
        print(f"{len(step.groups)} groups; load average {os.getloadavg()[0]:.1f}")
        for pair in range(args.pairs):
            for engine in ("spark", "driver") if pair % 2 else ("driver", "spark"):
                table = linked_copy(source, root / f"{engine}{pair}")
                os.sync()
                started, cpu = time.perf_counter(), time.process_time()
                run_runner(table, step, spark, engine=engine)  # type: ignore[arg-type]
                wall, cpu = time.perf_counter() - started, time.process_time() - cpu
                walls[engine].append(wall)
                print(f"pair {pair + 1}: {engine:6s} {wall:6.2f} s (this process's CPU {cpu:.2f} s), "
                      f"load average {os.getloadavg()[0]:.1f}")
                shutil.rmtree(table)
        for engine, values in walls.items():
            print(f"{engine}: median {statistics.median(values):.2f} s, runs {[round(v, 2) for v in values]}")
        ratios = [d / s for d, s in zip(walls["driver"], walls["spark"], strict=True)]
        print(f"driver / Spark per pair {[round(r, 2) for r in ratios]}, median {statistics.median(ratios):.2f}; "
              f"ratio of medians {statistics.median(walls['driver']) / statistics.median(walls['spark']):.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
