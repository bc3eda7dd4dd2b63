"""The CPU of planning's metadata-table files-listing check (`runner.hudi.mdt.check.listing_problems`)
on the table of `bench_mdt_clean.py`, and of its two parts: reading the MDT `files` partition
(`read_files_listing`: the HFile base and every log block's records, merged) and comparing it with
storage's listing (`drift.compare`).

The table is built once with `--table` (tiny-mode files of `--file-kb` KiB, sparse: the check reads
only the MDT and the folder listings), or reused if it is there; without `--table` it is built in a
temporary folder and removed after. `--quick` (what `make bench` runs): 10,000 files. Storage's
listing (`read_table_state`) is read once, as planning reads it before the check, and not timed.
Each measurement is the CPU time of this process over one call, repeated `--reps` times; the
median is printed. The script imports `runner` from the tree it sits in (as `bench_mdt_clean.py`
does), so an A/B of two versions of the code runs a copy in each: `git archive <commit> runner
schemas bench | tar -x -C DIR` (this script copied into `DIR/bench` for a commit older than it),
then `DIR/bench/bench_mdt_listing_check.py` on the same `--table`, alternately.

Usage (from the repository root):
    .venv/bin/python bench/bench_mdt_listing_check.py --files 100000 --table /tmp/mdt-100k --reps 7
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_mdt_clean import build_table, shape_for

from runner.hudi.mdt import drift, reader
from runner.hudi.mdt.check import listing_problems
from runner.hudi.state import read_table_metadata, read_table_state
from runner.storage.local import LocalStorage


def cpu_ms(call: Callable[[], object], reps: int) -> float:
    """The median CPU time of `reps` calls, in milliseconds."""
    times = []
    for _ in range(reps):
        started = time.process_time()
        call()
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000, help="files a clean of the table would delete "
                        "(as bench_mdt_clean.py; the table holds --versions/(--versions - 1) times as many)")
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--versions", type=int, default=11)
    parser.add_argument("--columns", type=int, default=16)
    parser.add_argument("--file-kb", type=int, default=4, help="size of each (sparse) data file, KiB")
    parser.add_argument("--table", help="build the table here once, or reuse it (default: a temporary one)")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="10,000 files (make bench)")
    args = parser.parse_args()
    if args.quick:
        args.files = 10_000
    with tempfile.TemporaryDirectory(prefix="bench_mdt_listing_check_") as scratch:
        table = Path(args.table) if args.table else Path(scratch) / "table"
        if not (table / ".hoodie").exists():
            shape = shape_for(args.files, args.partitions, args.versions)
            build_table(table, shape, args.file_kb * 1024, args.columns)
        measure(table, args.reps)


def measure(table: Path, reps: int) -> None:
    storage = LocalStorage(str(table))
    metadata = read_table_metadata(storage)
    state = read_table_state(storage, partitions=None, metadata=metadata)
    listing = reader.read_files_listing(storage, metadata)
    listed = sum(len(files) for files in listing.files.values())
    problems = listing_problems(storage, state)
    if problems:
        raise SystemExit(f"{table}: the check finds problems on the bench's table: {problems}")
    print(f"{listed:,} files listed in {len(listing.files)} partitions; CPU, median of {reps}:")
    print(f"  listing_problems:   {cpu_ms(lambda: listing_problems(storage, state), reps):8.1f} ms")
    print(f"  read_files_listing: {cpu_ms(lambda: reader.read_files_listing(storage, metadata), reps):8.1f} ms")
    print(f"  compare:            {cpu_ms(lambda: drift.compare(listing, state), reps):8.1f} ms")


if __name__ == "__main__":
    main()
