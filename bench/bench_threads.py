"""Benchmark `runner apply --threads`: many small tables, 1 thread against N, in one Spark session.

Builds `--tables` copies of a real Hudi table written by Hudi's Spark writer (the hudi-rs fixture
`v6_simplekeygen_nonhivestyle_overwritetable`: copy-on-write, 2 partitions, an insert_overwrite
that left 4 replaced files), each declared with KEEP_LATEST_FILE_VERSIONS 1 and sizing off, so
every table's apply takes the lock, reads its timeline, lists, plans, writes the clean's three
timeline files and runs one Spark delete job of 4 files plus 2 partition folders.

The Spark session (`local[2]`) and its Python workers start before timing, as in a long scheduled
run; each run gets fresh copies of every table (not timed) and calls the CLI's `apply
--auto-approve --threads T` in-process. Runs of the thread counts are interleaved, so background
load on the shared machine hits every row alike. Every run checks that each table ended `success`
with 4 files deleted.

    .venv/bin/python bench/bench_threads.py --tables 100 --threads 1 4 --runs 3
    .venv/bin/python bench/bench_threads.py --quick      # 20 tables, 1 run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import zipfile
from pathlib import Path

from _common import markdown_table, median, remove_tree, timed

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO.parent / "shared" / "fixtures" / "hudi-rs" / "sample_table" / "cow" / \
    "v6_simplekeygen_nonhivestyle_overwritetable.zip"
TABLE = ("name: t{index:03d}\npath: warehouse/t{index:03d}\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n"
         "  file_versions_retained: 1\nfile_sizing:\n  small_file_limit: 0\n")


def build_project(root: Path, tables: int) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: bench-threads\n")
    for index in range(tables):
        (root / "tables" / f"t{index:03d}.yml").write_text(TABLE.format(index=index))
    with zipfile.ZipFile(FIXTURE) as archive:
        members = [m for m in archive.namelist() if not m.startswith("__MACOSX/") and not m.endswith(".DS_Store")]
        archive.extractall(root / "pristine", members)
    return root


def fresh_tables(root: Path, tables: int) -> None:
    warehouse = root / "warehouse"
    remove_tree(warehouse)
    warehouse.mkdir()
    source = root / "pristine" / FIXTURE.stem
    for index in range(tables):
        os.system(f"cp -r '{source}' '{warehouse / f't{index:03d}'}'")
    os.sync()


def apply_once(root: Path, threads: int, tables: int, *select: str) -> float:
    from runner.cli import run

    fresh_tables(root, tables)
    argv = ["apply", "--auto-approve", "--threads", str(threads), "--format", "json", "--project-dir", str(root)]
    seconds, result = timed(lambda: run([*argv, *(["--select", *select] if select else [])]))
    report = result.data["tables"]
    assert len(report) == (len(select) or tables) and all(
        t["status"] == "success" and t["files_deleted"] == 4 for t in report
    ), json.dumps([t for t in report if t["status"] != "success"][:2])
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20 tables, 1 run (for `make bench`)")
    args = parser.parse_args()
    if args.quick:
        args.tables, args.runs = 20, 1

    from runner.declarations.model import SparkSettings
    from runner.execute.spark import get_spark

    spark = get_spark(SparkSettings(master="local[2]", conf=(("spark.sql.shuffle.partitions", "2"),)))
    with tempfile.TemporaryDirectory(prefix="bench-threads-") as tmp:
        root = build_project(Path(tmp) / "p", args.tables)
        apply_once(root, 2, args.tables, "t000", "t001")  # warm-up: Python workers, imports
        times: dict[int, list[float]] = {t: [] for t in args.threads}
        for _ in range(args.runs):
            for threads in args.threads:
                times[threads].append(apply_once(root, threads, args.tables))
    spark.stop()
    base = median(times[args.threads[0]])
    rows = [
        (
            f"--threads {t}",
            f"{median(times[t]):.1f} s",
            f"{median(times[t]) / args.tables * 1000:.0f} ms",
            f"{base / median(times[t]):.2f}×",
            " ".join(f"{x:.1f}" for x in times[t]),
        )
        for t in args.threads
    ]
    print(
        f"{args.tables} tables, median of {args.runs} runs, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs (shared), Spark local[2]"
    )
    print(markdown_table(["apply", "median", "per table", "speed-up", "runs (s)"], rows))


if __name__ == "__main__":
    sys.exit(main())
