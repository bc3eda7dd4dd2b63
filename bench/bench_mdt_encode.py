"""The CPU of encoding a large clean's index tombstones, alone: what `CleanMaintenance.ahead` costs.

A synthetic job as `runner apply` hands it to the encoder child (`runner.hudi.mdt.ahead.EncodeJob`):
`--files` deleted files in `--partitions` partitions, `--columns` indexed columns, a version-8 MDT
(HFiles with CRC32C checksums, as bench_mdt_clean.py's table) whose column_stats partition has 2
file groups, the record schema of the fixture v9_txns_simple_meta. No storage is read or written.

`--mode child` (default) times `ahead.Encoder(job).result()` as the driver runs it: a fresh
`python -m runner.hudi.mdt.ahead` child, the job pickled to it, its logs read back. Reported: CPU
seconds of the driver (all its threads: pickling the job, reading and unpickling the logs) and of
the child (`RUSAGE_CHILDREN`: its start, imports, encoding, output), and their sum. `--mode inline`
times `ahead.encode(job)` in this process; `--profile` prints its cProfile (cumulative).

`--trees A,B,...` runs each run once per source tree (a folder holding the `runner` package, e.g.
an export of an older commit), in turn, each in a fresh interpreter: an interleaved A/B of code
versions under the same load. Usage:

    .venv/bin/python bench/bench_mdt_encode.py --runs 3
    .venv/bin/python bench/bench_mdt_encode.py --mode inline --profile
    .venv/bin/python bench/bench_mdt_encode.py --runs 5 --trees /tmp/base,.   # A/B of two trees
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT.parent / "shared" / "fixtures" / "hudi-rs" / "sample_table/cow/v9_txns_simple_meta.zip"
INSTANT = "20991231000000000"


def _schema() -> str:
    from runner.hudi.mdt.reader import read_files_listing, read_metadata_table
    from runner.hudi.state import read_table_metadata
    from runner.storage import storage_for

    with tempfile.TemporaryDirectory(prefix="bench_mdt_encode_") as tmp, zipfile.ZipFile(FIXTURE) as archive:
        archive.extractall(tmp)
        storage = storage_for(str(Path(tmp) / "v9_txns_simple_meta"))
        return read_files_listing(storage, read_table_metadata(storage), read_metadata_table(storage)).schema


def job(files: int, partitions: int, columns: int):  # type: ignore[no-untyped-def]
    from runner.hudi.mdt.ahead import EncodeJob

    per = files // partitions
    names = {
        f"dt={p:04d}": tuple(f"{p:04d}{i:04d}-aaaa-bbbb-cccc-dddddddddddd-0_0-1-2_20260101000000000.parquet"
                             for i in range(per))
        for p in range(partitions)
    }
    groups = {"column_stats": ("col-stats-0000-0", "col-stats-0001-0")}
    return EncodeJob(INSTANT, names, groups, tuple(f"col_{i:02d}" for i in range(columns)), _schema(), 8, False,
                     1_700_000_000_000)


def _cpu() -> tuple[float, float]:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime


def one(args: argparse.Namespace) -> dict[str, float]:
    """One timed encoding in this process; returns its CPU figures."""
    from runner.hudi.mdt import ahead

    work = job(args.files, args.partitions, args.columns)
    wall = time.perf_counter()
    driver, child = _cpu()
    if args.mode == "child":
        logs = ahead.Encoder(work).result()
        assert logs is not None, "the encoder child failed"
    elif args.profile:
        profile = cProfile.Profile()
        logs = profile.runcall(ahead.encode, work)
    else:
        logs = ahead.encode(work)
    driver_after, child_after = _cpu()
    size = sum(len(data) for encoded in logs.values() for _, data, _ in encoded.logs)
    if args.mode == "inline" and args.profile:
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    return {"wall": time.perf_counter() - wall, "driver": driver_after - driver, "child": child_after - child,
            "bytes": size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--columns", type=int, default=16)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--mode", choices=("child", "inline"), default="child")
    parser.add_argument("--profile", action="store_true", help="with --mode inline: print the cProfile")
    parser.add_argument("--trees", help="comma-separated source trees to interleave, each in a fresh interpreter")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a single run, as JSON
    args = parser.parse_args()
    if args.one or not args.trees:
        sys.path.insert(0, os.environ.get("BENCH_TREE", str(ROOT)))
        if args.one:
            print(json.dumps(one(args)))
            return
        for run in range(args.runs):
            print(run + 1, json.dumps(one(args)), os.getloadavg()[0], flush=True)
        return
    trees = [str(Path(t).resolve()) for t in args.trees.split(",")]
    results: dict[str, list[dict[str, float]]] = {t: [] for t in trees}
    forwarded = [f"--files={args.files}", f"--partitions={args.partitions}", f"--columns={args.columns}",
                 f"--mode={args.mode}", "--one"]
    for run in range(args.runs):
        for tree in trees:
            env = {**os.environ, "BENCH_TREE": tree, "PYTHONPATH": tree}
            # Run from the tree: an older encoder starts its child with `python -m`, which imports
            # from the working directory first.
            out = subprocess.run([sys.executable, __file__, *forwarded], env=env, capture_output=True, text=True,
                                 check=True, cwd=tree)
            figures = json.loads(out.stdout)
            results[tree].append(figures)
            print(run + 1, tree, json.dumps(figures), f"load {os.getloadavg()[0]:.2f}", flush=True)
    for tree, runs in results.items():
        totals = sorted(r["driver"] + r["child"] for r in runs)
        drivers = sorted(r["driver"] for r in runs)
        print(f"{tree}: CPU driver+child median {totals[len(totals) // 2]:.2f} s "
              f"(runs {', '.join(f'{t:.2f}' for t in totals)}), driver median {drivers[len(drivers) // 2]:.2f} s")


if __name__ == "__main__":
    main()
