"""Where an Arrow-input upsert's CPU goes, phase by phase, without Spark: for A/B runs of two trees.

Builds one table of the bench's shape (`id, region, name, amount, ts`, 8 partitions, record key
`id`, precombine `ts`) with `runner.write` of a `pyarrow.Table` (a bulk insert of `--rows` records,
then an upsert of `--rows` more, half of them updates), then times `--reps` upserts of the same
next `--rows` records (half updates, half new), each into a fresh copy of that table, so every rep
does exactly the same work. Per upsert it prints the CPU time of this process (all threads) and
the wall time, and the CPU time of each phase below, summed over its calls in the threads that
ran them (`time.thread_time`, inclusive of what the phase calls); a median line ends the output.

`--threads 1` writes the file groups inline, one after another in the calling thread, so the
phases add up without two threads sharing the cores; `--threads 0` (the default) keeps the
writer's own thread pool. The first upsert of the process warms up imports and is not printed.

An interleaved A/B of two versions of the code: run this script alternately with `PYTHONPATH`
set to a copy of each tree (`git archive <commit> runner schemas | tar -x -C DIR`), the order
flipped every pair, and compare the phases' medians.

`--virtual-keys` declares the table without meta fields (`meta_fields: false` under `table:`,
Hudi's `hoodie.populate.meta.fields=false`): null meta columns, no record-key footer.

`--zlib-level 1` writes every file at gzip level 1 (the `zlib.compress.level` write option), the
table loaded before the timed upserts included.

Every upsert also reports its fsyncs: how many, and their wall time summed over the threads that
waited in them. `--fsync-ab` is a diagnostic of what durability costs: each rep runs the upsert
twice (the order flipped every rep), once as written and once with `os.fsync` a no-op, and prints
the medians of both. A real write never skips an fsync; this only says how much of the wall time
they hold (delta-rs's local object store writes without them).

Usage (from the repository root):
    .venv/bin/python bench/bench_writer_phases.py --rows 100000 --reps 3 --threads 1
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import runner
from runner.writer.options import CODEC_KEY

TABLE = """\
name: t
path: warehouse/t
table:
  type: COPY_ON_WRITE
  record_key: [id]
  partition_by: [region]
  precombine_field: ts
"""

# (module, attribute, label): the phases timed, each where the writer looks it up at call time.
# A phase missing from a version of the code is skipped (its line is then absent for that side).
PHASES = (
    ("runner.writer.arrow_input", "keyed", "input keys"),
    ("runner.writer.dedup", "deduplicated", "de-duplication"),
    ("runner.writer.dedup", "deduplicate", "de-duplication"),
    ("runner.writer.write", "index_table", "index: read old files (waits for threads)"),
    ("runner.writer.local", "tag", "tagging"),
    ("runner.writer.local", "route_inserts", "insert routing"),
    ("runner.writer.local", "write_targets", "file writes (all)"),
    ("runner.writer.files", "_newest_per_key", "  merge: collapse new records by key"),
    ("runner.writer.files", "stamp", "  meta columns (stamp)"),
    ("runner.writer.files", "dictionary_columns", "  dictionary rule"),
    ("runner.writer.files", "record_key_footer", "  record-key footer (rebuilt)"),
    ("runner.writer.files", "extended_record_key_footer", "  record-key footer (extended)"),
    ("runner.writer.commit", "complete", "commit"),
)
GENERATORS = (("runner.writer.local", "runs_by", "runs by target (sort, take)"),
              ("runner.writer.files", "_batches", "  old file: decode other columns"))


def rows(start: int, count: int, ts: int) -> pa.Table:
    ids = np.arange(start, start + count, dtype=np.int64)
    return pa.table({
        "id": ids,
        "region": pc.binary_join_element_wise("r", pa.array(ids % 8).cast(pa.string()), ""),
        "name": pc.binary_join_element_wise("customer-", pa.array(ids).cast(pa.string()), ""),
        "amount": ids * 1.5,
        "ts": pa.repeat(pa.scalar(ts, pa.int64()), count),
    })


def loaded_table(work: Path, count: int, *, virtual_keys: bool, options: dict[str, str]) -> Path:
    """The project `work/base` with the bench's table `t`: a bulk insert of `count` records, then an
    upsert of `count` more, half of them updates (`--virtual-keys`: declared without meta fields)."""
    base = work / "base"
    (base / "tables").mkdir(parents=True)
    (base / "project.yml").write_text("name: bench\n")
    (base / "tables" / "t.yml").write_text(TABLE + ("  meta_fields: false\n" if virtual_keys else ""))
    runner.write(rows(0, count, 0), "t", operation="bulk_insert", project_dir=base, options=options)
    runner.write(rows(count // 2, count, 1), "t", project_dir=base, options=options)
    return base


def clocked(seconds: dict[str, float], label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[label] += time.thread_time() - started
    return run


def clocked_generator(seconds: dict[str, float], label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Iterator[Any]:
        items = function(*args, **kwargs)
        while True:
            started = time.thread_time()
            try:
                item = next(items)
            except StopIteration:
                seconds[label] += time.thread_time() - started
                return
            seconds[label] += time.thread_time() - started
            yield item
    return run


def install_clocks(seconds: dict[str, float]) -> None:
    for module_name, attribute, label in PHASES:
        module = importlib.import_module(module_name)
        if hasattr(module, attribute):
            setattr(module, attribute, clocked(seconds, label, getattr(module, attribute)))
    for module_name, attribute, label in GENERATORS:
        module = importlib.import_module(module_name)
        setattr(module, attribute, clocked_generator(seconds, label, getattr(module, attribute)))
    # The Parquet encode itself, wherever it is called from (for gzip: Arrow's uncompressed encode).
    pq.ParquetWriter.write_table = clocked(seconds, "  Parquet encode (write_table)",  # type: ignore[method-assign]
                                           pq.ParquetWriter.write_table)
    # gzip files: Arrow's encode above and libdeflate's pages, with the footer moves (trees that have it).
    with contextlib.suppress(ImportError):
        from runner.hudi.parquet_deflate import DeflatingWriter

        DeflatingWriter.write_table = clocked(  # type: ignore[method-assign]
            seconds, "  gzip write (encode + deflate)", DeflatingWriter.write_table)


def inline_writes() -> None:
    """File groups written one after another in the calling thread (`--threads 1`)."""
    from runner.writer import local

    def one_by_one(task: Any, jobs: list[tuple[int, pa.Table]], workers: int, old_files: Any = None) -> list[Any]:
        # A job's rows may be a function giving them (trees that take them in the writing thread).
        return [f for number, rows in jobs
                for f in task.on_driver(rows() if callable(rows) else rows, number, old_files)]

    local._in_threads = one_by_one  # type: ignore[assignment]


def _value(name: str, value: float) -> str:
    if name == "cores busy":
        return f"{value:.2f}"
    if name == "fsyncs":
        return f"{value:.0f}"
    return f"{value * 1000:.1f} ms"


class FsyncClock:
    """Counts `os.fsync` calls and their wall time while `counting`; with `skip`, makes them no-ops."""

    def __init__(self) -> None:
        self.calls, self.seconds = 0, 0.0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def counting(self, *, skip: bool) -> Iterator[None]:
        real = os.fsync
        self.calls, self.seconds = 0, 0.0

        def fsync(fd: Any) -> None:
            start = time.perf_counter()
            if not skip:
                real(fd)
            with self._lock:
                self.calls += 1
                self.seconds += time.perf_counter() - start

        os.fsync = fsync
        try:
            yield
        finally:
            os.fsync = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="records per upsert (default 100000)")
    parser.add_argument("--reps", type=int, default=3, help="timed upserts (default 3)")
    parser.add_argument("--threads", type=int, default=0, choices=(0, 1),
                        help="1: write the file groups inline; 0: the writer's thread pool (default)")
    parser.add_argument("--tag", default="", help="a label printed at the start of every line (A, B)")
    parser.add_argument("--virtual-keys", action="store_true",
                        help="a table without meta fields (meta_fields: false): null meta columns, no bloom filter")
    parser.add_argument("--fsync-ab", action="store_true",
                        help="each rep also runs the upsert with os.fsync a no-op (a diagnostic; see above)")
    parser.add_argument("--zlib-level", default=None,
                        help="the write option zlib.compress.level (gzip's level) for every write; unset: 6")
    args = parser.parse_args()

    seconds: dict[str, float] = defaultdict(float)
    work = Path(tempfile.mkdtemp(prefix="bench_writer_phases_"))
    try:
        options = {CODEC_KEY: "gzip"}
        if args.zlib_level is not None:  # the option is newer than some trees this bench is run against
            options["zlib.compress.level"] = args.zlib_level
        base = loaded_table(work, args.rows, virtual_keys=args.virtual_keys, options=options)
        install_clocks(seconds)
        if args.threads == 1:
            inline_writes()
        data = rows(args.rows, args.rows, 2)
        fsyncs = FsyncClock()
        variants = ["as written", "os.fsync a no-op"] if args.fsync_ab else ["as written"]
        runs: dict[str, dict[str, list[float]]] = {v: defaultdict(list) for v in variants}
        for rep in range(args.reps + 1):
            for variant in variants if rep % 2 else variants[::-1]:
                copy = work / "copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(base, copy)
                seconds.clear()
                with fsyncs.counting(skip=variant != "as written"):
                    wall, cpu = time.perf_counter(), time.process_time()
                    result = runner.write(data, "t", project_dir=copy, options=options)
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                if not rep:
                    continue
                measured = ({"CPU": cpu, "wall": wall, "cores busy": cpu / wall, "fsyncs": fsyncs.calls,
                             "fsync waits (summed over threads)": fsyncs.seconds} | dict(seconds))
                for name, value in measured.items():
                    runs[variant][name].append(value)
                label = f"{args.tag} upsert {rep}" + (f" ({variant})" if args.fsync_ab else "")
                print(f"{label}: {result.num_writes} records, {result.bytes_written} bytes; "
                      + "; ".join(f"{k.strip()} {_value(k, v)}" for k, v in measured.items()), flush=True)
        for variant, measured_runs in runs.items():
            print(f"{args.tag} medians of {args.reps} upserts{f' ({variant})' if args.fsync_ab else ''}, "
                  f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}:")
            for name, values in measured_runs.items():
                print(f"{args.tag}   {name}: {_value(name, statistics.median(values))}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
