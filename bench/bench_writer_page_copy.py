"""What copying untouched pages saves a copy-on-write upsert (`runner.hudi.page_prefix`).

Two twin tables of one partition are bulk-inserted alike with `--records` records (one file group),
then upserted alike `--runs` times with `--rows` records each: half of them update existing records,
half are new. The copy is on for table `copy` and off for table `whole` (its `OldPages.matches`
answers no, so every column is encoded again, as before the copy existed); the two upserts of a run
are interleaved and alternate in order, so background load hits both alike. Two update patterns,
each its own pair of tables:

- `newest`: the updates hit the newest records (the records the previous upsert inserted, at the
  end of the file), the usual change stream; every page before them is copied.
- `spread`: the updates are spread evenly over the file (every n-th record), so nearly every page
  holds one and nothing is copied; this shows what the copy's checks cost when they find nothing.

Printed: per pattern, the median wall and CPU (this process, all its threads) of each table's
upserts, and their ratio (copy / whole).

Usage (from the repository root):
    .venv/bin/python bench/bench_writer_page_copy.py --records 600000 --rows 100000 --runs 5
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from bench_writer_phases import TABLE

import runner
from runner.hudi import page_prefix


def records(ids: np.ndarray, ts: int) -> pa.Table:
    return pa.table({"id": ids, "region": pa.array(["r0"] * len(ids)),
                     "name": pa.array([f"customer-{i}" for i in ids]),
                     "amount": ids * 1.5, "ts": pa.array(np.full(len(ids), ts), pa.int64())})


def upserts(pattern: str, first: int, rows: int, runs: int) -> list[pa.Table]:
    """Each run's records: `rows // 2` updates (by `pattern`) and as many new ids."""
    half, total, batches = rows // 2, first, []
    for run in range(1, runs + 1):
        if pattern == "newest":
            updated = np.arange(total - half, total)
        else:
            updated = np.linspace(0, total - 1, half).astype(np.int64)
        batches.append(records(np.concatenate([updated, np.arange(total, total + rows - half)]), run))
        total += rows - half
    return batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=600_000, help="records bulk-inserted first (default 600000)")
    parser.add_argument("--rows", type=int, default=100_000, help="records per upsert, half updates (default 100000)")
    parser.add_argument("--runs", type=int, default=5, help="upserts per table (default 5)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-page-copy-"))
    matches = page_prefix.OldPages.matches
    try:
        for pattern in ("newest", "spread"):
            projects = {side: work / f"{pattern}_{side}" for side in ("copy", "whole")}
            for project in projects.values():  # each its own project with the phase bench's table `t`
                (project / "tables").mkdir(parents=True)
                (project / "project.yml").write_text("name: bench\n")
                (project / "tables" / "t.yml").write_text(TABLE)
                runner.write(records(np.arange(args.records), 0), "t", operation="bulk_insert", project_dir=project)
            seconds: dict[str, list[tuple[float, float]]] = {side: [] for side in projects}
            for run, batch in enumerate(upserts(pattern, args.records, args.rows, args.runs)):
                for side in ("copy", "whole") if run % 2 == 0 else ("whole", "copy"):
                    page_prefix.OldPages.matches = matches if side == "copy" else (lambda self, template: False)
                    wall, cpu = time.perf_counter(), time.process_time()
                    runner.write(batch, "t", project_dir=projects[side])
                    seconds[side].append((time.perf_counter() - wall, time.process_time() - cpu))
                    page_prefix.OldPages.matches = matches
            medians = {side: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                       for side, v in seconds.items()}
            for side, (wall, cpu) in medians.items():
                raw = ", ".join(f"{w:.3f}" for w, _ in seconds[side])
                print(f"{pattern:6s} {side:5s}: wall {wall:.3f} s, CPU {cpu:.3f} s "
                      f"(median of {args.runs}); walls {raw}")
            print(f"{pattern:6s} copy / whole: wall {medians['copy'][0] / medians['whole'][0]:.2f}x, "
                  f"CPU {medians['copy'][1] / medians['whole'][1]:.2f}x")
    finally:
        page_prefix.OldPages.matches = matches
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
