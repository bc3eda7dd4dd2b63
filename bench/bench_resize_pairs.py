"""Two trees' rewrite interleaved, one resize in a new interpreter per run, and delta-rs
`optimize.compact` in a new interpreter after each pair: wall and CPU of each run.

Generates the benchmark table of `bench_resize.py` once (`--total-mb` in `--files` files), then
`--pairs` times runs `run_resize` (the rewrite, the engine it chooses on a `local[2]` master: the
driver's threads; no Spark session is started) on a fresh hard-linked copy, once with each tree's
`runner` on `PYTHONPATH` (a tree is a folder holding `runner` and `schemas`, e.g. made by
`git archive <commit> runner schemas | tar -x -C DIR`), the tree going first alternating, and
then delta-rs. Each run is timed around the call alone, after `os.sync()`. Prints each run, the
medians, each tree's median ratio to the delta-rs run of its pair and the per-pair ratio of the
trees. The load average is printed with each run: on a shared machine wall time follows it, the
ratios within a pair less so.

    .venv/bin/python bench/bench_resize_pairs.py --trees /tmp/before /tmp/after --pairs 6
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
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs=2, type=Path, required=True, metavar=("A", "B"))
    parser.add_argument("--total-mb", type=int, default=512)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--max-file-mb", type=int, default=128)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--env-b", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for tree B's runs only (e.g. ARROW_DEFAULT_MEMORY_POOL=system)")
    parser.add_argument("--one", nargs=3, metavar=("SYSTEM", "SOURCE", "WORK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(args.one[0], Path(args.one[1]), Path(args.one[2]), args.max_file_mb)))
        return
    root = Path(tempfile.mkdtemp(prefix="bench_resize_pairs_", dir=args.work_dir))
    try:
        _pairs(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _pairs(root: Path, args: argparse.Namespace) -> None:
    sys.path.insert(0, str(HERE))
    from bench_resize import generate

    source = generate(root, args.total_mb, args.files)
    trees = [str(t.resolve()) for t in args.trees]
    if trees[0] == trees[1]:  # one tree against itself with another environment (`--env-b`)
        trees[1] += "/."
    runs: dict[str, list[tuple[float, float]]] = {t: [] for t in [*trees, "delta-rs"]}
    for pair in range(args.pairs):
        order = trees if pair % 2 == 0 else trees[::-1]
        for system in [*order, "delta-rs"]:
            extra = dict(e.split("=", 1) for e in args.env_b) if system == trees[1] else {}
            figures = _spawn(system, source, root / f"run{pair}", args.max_file_mb, trees[0], extra)
            runs[system].append(figures)
            print(f"pair {pair + 1} {_name(system, trees)}: wall {figures[0]:.2f} s, CPU {figures[1]:.2f} s, "
                  f"cores {figures[1] / figures[0]:.2f}; load average {os.getloadavg()[0]:.1f}", flush=True)
    for system, figures in runs.items():
        wall, cpu = statistics.median(f[0] for f in figures), statistics.median(f[1] for f in figures)
        print(f"{_name(system, trees)} median: wall {wall:.2f} s, CPU {cpu:.2f} s; raw wall "
              f"{[round(f[0], 2) for f in figures]}, CPU {[round(f[1], 2) for f in figures]}")
    for tree in trees:
        per_pair = [(t[0] / d[0], t[1] / d[1]) for t, d in zip(runs[tree], runs["delta-rs"], strict=True)]
        print(f"{_name(tree, trees)} / delta-rs, median of per-pair ratios: wall "
              f"{statistics.median(r[0] for r in per_pair):.3f}, CPU {statistics.median(r[1] for r in per_pair):.3f}")
    b_over_a = [(b[0] / a[0], b[1] / a[1]) for a, b in zip(runs[trees[0]], runs[trees[1]], strict=True)]
    print(f"B / A per pair: wall {[round(r[0], 3) for r in b_over_a]}, CPU {[round(r[1], 3) for r in b_over_a]}; "
          f"medians wall {statistics.median(r[0] for r in b_over_a):.3f}, CPU "
          f"{statistics.median(r[1] for r in b_over_a):.3f}")


def _name(system: str, trees: list[str]) -> str:
    return "delta-rs" if system == "delta-rs" else f"{'AB'[trees.index(system)]} ({system})"


def _spawn(system: str, source: Path, work: Path, max_file_mb: int, any_tree: str,
           extra: dict[str, str]) -> tuple[float, float]:
    """One run in a new interpreter: a tree's runner, or delta-rs (with the first tree's `runner`
    importable for the table generator's imports only)."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    tree = any_tree if system == "delta-rs" else system
    env = {**os.environ, "PYTHONPATH": tree, **extra}
    done = subprocess.run([sys.executable, __file__, "--trees", tree, tree, "--max-file-mb", str(max_file_mb),
                           "--one", "delta" if system == "delta-rs" else "runner", str(source), str(work)],
                          env=env, check=True, capture_output=True, text=True)
    shutil.rmtree(work)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return figures["wall"], figures["cpu"]


def _one(system: str, source: Path, work: Path, max_file_mb: int) -> dict[str, float]:
    try:  # before pyarrow loads, as the `runner` command does; a tree older than the choice has none
        from runner.arrow_allocator import choose_before_pyarrow
    except ImportError:
        pass
    else:
        choose_before_pyarrow()

    sys.path.insert(0, str(HERE))
    from bench_resize import PARTITION, linked_copy, prepare_delta, run_delta

    from runner.declarations.model import FileSizing, SparkSettings
    from runner.execute.resize import run_resize
    from runner.execute.resize_engine import SparkOnDemand
    from runner.hudi.state import read_table_state
    from runner.plan.sizing import plan_sizing
    from runner.storage import storage_for

    limit = max_file_mb * 1024 * 1024
    if system == "delta":
        delta = prepare_delta(source, work / "delta")
        os.sync()
        cpu, wall = time.process_time(), time.perf_counter()
        run_delta(delta, limit)
        return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
    table = linked_copy(source, work / "hudi")
    storage = storage_for(str(table))
    state = read_table_state(storage)
    step = plan_sizing(FileSizing(max_file_size=limit, small_file_limit=limit - 1), state)
    assert step is not None and (table / PARTITION).is_dir()

    def no_spark() -> object:
        raise AssertionError("a local master's resize starts no Spark session")

    spark = SparkOnDemand(SparkSettings(master="local[2]"), no_spark)  # type: ignore[arg-type]
    os.sync()
    cpu, wall = time.process_time(), time.perf_counter()
    run_resize(storage, state.metadata, step, spark=spark, clock=lambda: datetime.now(UTC))
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}


if __name__ == "__main__":
    main()
