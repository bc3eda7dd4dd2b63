"""Benchmark the metadata-table update of a clean against deleting the same number of files.

A clean on a table with a metadata table adds one MDT deltacommit: a `files` record per partition,
and a column-stats tombstone per deleted file and indexed column (HFile log blocks, one per file
group). This times that update for `--files` deleted files in `--partitions` partitions with
`--columns` indexed columns (the fixture v9_txns_simple_meta indexes 16), on a fresh copy of that
fixture's metadata table (its schema and its 2 column_stats file groups), interleaved with the
floor: a bare `os.unlink` loop over the same number of empty files (created, synced, not timed).

Each run times, separately: building the records (`clean_commit`), and writing the deltacommit
(`write_mdt_commit`: shards, HFile cells and blocks, gzip on a thread per core, log files,
timeline), in wall-clock seconds and in CPU seconds of the process (all threads: on a machine
shared with other work, CPU time shows the cost when wall time shows the load). The share is the MDT
update's time over (MDT update + floor); against `runner apply` (2.90x the floor in
bench/README.md) it is smaller. Apart from the timed update, each run also compresses the same
HFile data blocks on one thread (gzip level 6, which byte identity with Hudi requires), to show what
compression alone costs. Every run reads the written deltacommit back and checks every tombstone.
`--sized-files N` also times, per run, a second floor apart from the baseline: unlinking N written
and synced files of `--sized-kb` KiB each, scaled to `--files` (a clean deletes data files of a few
hundred KB or more, whose blocks the file system frees). Usage:

    .venv/bin/python bench/bench_mdt.py                      # quick: 10,000 files
    .venv/bin/python bench/bench_mdt.py --files 100000 --runs 3
    .venv/bin/python bench/bench_mdt.py --files 100000 --runs 3 --sized-files 5000 --sized-kb 400
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from _common import empty_unlink_floor, markdown_table, median, remove_tree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.hudi.instant import InstantTime  # noqa: E402
from runner.hudi.mdt.actions import MdtCommit, clean_commit  # noqa: E402
from runner.hudi.mdt.hfile import DEFAULT_BLOCK_SIZE, gzip_member  # noqa: E402
from runner.hudi.mdt.partitions import COLUMN_STATS  # noqa: E402
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table, read_partition  # noqa: E402
from runner.hudi.mdt.tombstones import IndexTombstones  # noqa: E402
from runner.hudi.mdt.writer import write_mdt_commit  # noqa: E402
from runner.hudi.metadata import CleanMetadata, CleanPartitionMetadata  # noqa: E402
from runner.hudi.state import read_table_metadata  # noqa: E402
from runner.storage import storage_for  # noqa: E402

FIXTURE = ROOT.parent / "shared" / "fixtures" / "hudi-rs" / "sample_table/cow/v9_txns_simple_meta.zip"
INSTANT = "20991231000000000"
T = TypeVar("T")


def timed(action: Callable[[], T]) -> tuple[tuple[float, float], T]:
    """(wall, CPU) seconds of one call, and what it returned; CPU counts every thread."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return (time.perf_counter() - wall, time.process_time() - cpu), result


def _extract(dest: Path) -> Path:
    with zipfile.ZipFile(FIXTURE) as archive:
        archive.extractall(dest)
    return dest / "v9_txns_simple_meta"


def _clean(files: int, partitions: int) -> CleanMetadata:
    per = files // partitions
    meta = {}
    for p in range(partitions):
        names = tuple(
            f"{p:04d}{i:08d}-aaaa-bbbb-cccc-dddddddddddd-0_0-1-2_20260101000000000.parquet" for i in range(per)
        )
        meta[f"dt={p:04d}"] = CleanPartitionMetadata(f"dt={p:04d}", "KEEP_LATEST_FILE_VERSIONS", names, names, ())
    return CleanMetadata(INSTANT, 1, per * partitions, "", "", meta, {}, 2)


Times = tuple[float, float]


def _mdt_update(base: Path, clean: CleanMetadata, columns: tuple[str, ...]) -> tuple[Times, Times, MdtCommit]:
    storage = storage_for(str(base))
    data = read_table_metadata(storage)
    mdt = read_metadata_table(storage)
    schema = read_files_listing(storage, data, mdt).schema
    parts = ("files", "column_stats")
    build, commit = timed(
        lambda: clean_commit(INSTANT, clean, mdt_partitions=parts, stats_columns=columns, schema=schema)
    )
    ticks = iter(range(1, 10**6))
    write, _ = timed(
        lambda: write_mdt_commit(
            storage,
            mdt,
            commit,
            schema=schema,
            created_ms=0,
            completion_time=lambda: InstantTime(f"2099123100000{next(ticks):04d}"),
        )
    )
    return build, write, commit


def _gzip_alone(commit: MdtCommit, file_groups: int) -> float:
    """CPU seconds of gzip (level 6) over the data blocks written, on one thread (not timed above)."""
    stats = commit.records[COLUMN_STATS]
    assert isinstance(stats, IndexTombstones)
    seconds = 0.0
    for cells in stats.runs(file_groups):
        for first, end in cells.block_bounds(DEFAULT_BLOCK_SIZE):
            payload = cells.lay_out(first, end)
            started = time.thread_time()
            gzip_member(payload)
            seconds += time.thread_time() - started
    return seconds


def _check(base: Path, commit: MdtCommit) -> None:
    """The written column_stats log blocks hold every tombstone, each with its value."""
    storage = storage_for(str(base))
    mdt = read_metadata_table(storage)
    (base / ".hoodie/timeline" / f"{INSTANT}_20991231000000099.clean").write_bytes(b"")  # make it valid
    data = read_table_metadata(storage)
    stats, _ = read_partition(storage, data, mdt, "column_stats")
    expected = commit.records[COLUMN_STATS]
    for key in expected:
        found = stats[key]["ColumnStatsMetadata"]
        assert found["isDeleted"] and found["fileName"], (key, found)
    assert sum(1 for r in stats.values() if r["ColumnStatsMetadata"]["isDeleted"]) == len(expected)


def _sized_floor(work: Path, files: int, size_kb: int) -> Times:
    """`_floor` over files of `size_kb` KiB each (real blocks: written, not sparse, and synced), as
    a table's data files are; on ext4 freeing their blocks is most of an unlink's cost."""
    folder = work / "sized_floor"
    folder.mkdir()
    data = os.urandom(size_kb * 1024)
    paths = [str(folder / f"f{i:08d}.parquet") for i in range(files)]
    for path in paths:
        with open(path, "wb") as f:
            f.write(data)
    os.sync()
    seconds, _ = timed(lambda: [os.unlink(p) for p in paths])
    folder.rmdir()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--columns", type=int, default=16)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--sized-files", type=int, default=0,
                        help="also time unlinking this many files of --sized-kb each, scaled to --files "
                        "(a floor of realistic files; 0: off; mind the disk: files x size is written)")
    parser.add_argument("--sized-kb", type=int, default=400, help="size of each --sized-files file, KiB")
    parser.add_argument("--workdir", help="parent folder of the temporary data (default: system temp)")
    args = parser.parse_args()
    columns = tuple(f"col_{i}" for i in range(args.columns))
    clean = _clean(args.files, args.partitions)
    rows: dict[str, list[float]] = {"floor": [], "build": [], "write": [], "mdt": []}
    cpu: dict[str, list[float]] = {"floor": [], "build": [], "write": [], "mdt": [], "gzip": []}
    sized: list[Times] = []
    with tempfile.TemporaryDirectory(prefix="bench_mdt_", dir=args.workdir) as tmp:
        work = Path(tmp)
        for run in range(args.runs):
            floor_wall, floor_cpu = empty_unlink_floor(work, args.files)
            rows["floor"].append(floor_wall)
            cpu["floor"].append(floor_cpu)
            base = _extract(work / f"run{run}")
            build, write, commit = _mdt_update(base, clean, columns)
            total = (build[0] + write[0], build[1] + write[1])
            for name, (wall, used) in (("build", build), ("write", write), ("mdt", total)):
                rows[name].append(wall)
                cpu[name].append(used)
            cpu["gzip"].append(_gzip_alone(commit, 2))  # the fixture's column_stats has 2 file groups
            if run == 0:
                _check(base, commit)
            remove_tree(work / f"run{run}")
            if args.sized_files:
                wall, used = _sized_floor(work, args.sized_files, args.sized_kb)
                scale = args.files / args.sized_files
                sized.append((wall * scale, used * scale))
    floor, mdt = median(rows["floor"]), median(rows["mdt"])
    labels = {
        "floor": "floor: `os.unlink` of as many empty files (baseline)",
        "build": "MDT records (`clean_commit`)",
        "write": "MDT deltacommit written (`write_mdt_commit`)",
        "mdt": "MDT update, total",
    }
    table = [
        (
            labels[k],
            ", ".join(f"{v:.2f}" for v in vals),
            f"{median(vals):.2f} s",
            f"{median(vals) / floor:.2f}x",
            f"{median(cpu[k]):.2f} s" if cpu[k] else "",
        )
        for k, vals in rows.items()
    ]
    print(
        f"{args.files:,} deleted files in {args.partitions} partitions, {args.columns} indexed columns, "
        f"{args.files * args.columns:,} column-stats tombstones; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at the end\n"
    )
    print(markdown_table(("what", "runs (s)", "median", "vs floor", "CPU, median"), table, align="llrrr"))
    print(
        f"\nMDT update share of (MDT update + floor): {mdt / (mdt + floor):.1%}; "
        f"of an apply at the published 2.90x floor: {mdt / (mdt + 2.90 * floor):.1%}\n"
        f"gzip level 6 of the same data blocks on one thread, not part of the timings above: "
        f"{median(cpu['gzip']):.2f} s CPU ({median(cpu['gzip']) / median(cpu['mdt']):.0%} of the update's CPU)"
    )
    if sized:
        realistic = median([wall for wall, _ in sized])
        print(
            f"\nRealistic floor (not the baseline above): `os.unlink` of {args.sized_files:,} synced files of "
            f"{args.sized_kb} KiB each, per run {', '.join(f'{w:.2f}' for w, _ in sized)} s scaled to "
            f"{args.files:,} files (CPU {median([c for _, c in sized]):.2f} s); median {realistic:.2f} s. "
            f"MDT update share of (MDT update + realistic floor): {mdt / (mdt + realistic):.1%}"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
