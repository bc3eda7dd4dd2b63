"""Upsert throughput of `runner.write` against a plain Spark Parquet write of the same rows.

Each run upserts `--rows` records into one copy-on-write table (8 partitions): half of them update
records written by the previous run, half are new, so every run merges into existing file groups
and adds inserts, the steady state of an upsert pipeline. In the same process and the same run,
the same rows are written with `df.write.parquet` twice: with Spark's default codec (snappy) and
with gzip, Hudi 0.14's default codec, which the runner's files use. Also in the same run, the peer:
delta-rs `DeltaTable.merge` of the same rows (as Arrow, converted before timing) into a Delta table
partitioned the same way and loaded with the same first rows, updating every matched record
(`t.region = s.region AND t.id = s.id`, the runner's non-global index) and inserting the rest; it
writes delta-rs's default codec (snappy). Runs are interleaved so that background load hits every
row alike; the tables are loaded once before the timed runs. Each step also reports the peak
resident memory of this process tree (Spark's JVM and Python workers included, sampled every 20 ms)
and how much that is above the RSS on entry. `--profile` runs one more upsert under cProfile and
prints the driver's top functions by cumulative time. Needs `pip install deltalake` (bench only).

`--engines` picks the write engines timed, each upserting the same rows into its own table (loaded
alike): `auto` (chosen by size, as users get it), `driver` or `spark` pinned (`runner.writer.local`);
the engine that actually wrote each run is printed.

Usage (from the repository root):
    .venv/bin/python bench/bench_writer.py --rows 100000 --runs 3 --engines auto,spark
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import pyarrow as pa
from _common import PeakRss

import runner
from runner.declarations.model import SparkSettings
from runner.execute.spark import get_spark
from runner.writer import local
from runner.writer.write import WriteResult

TABLE = """\
name: {name}
path: warehouse/{name}
table:
  type: COPY_ON_WRITE
  record_key: [id]
  partition_by: [region]
  precombine_field: ts
"""


def rows(spark: object, start: int, count: int, ts: int) -> object:
    """`count` records with keys from `start`: id, region (8 values), name, amount, ts; cached."""
    df = spark.range(start, start + count).selectExpr(  # type: ignore[attr-defined]
        "id",
        "concat('r', cast(id % 8 as string)) as region",
        "concat('customer-', cast(id as string)) as name",
        "cast(id * 1.5 as double) as amount",
        f"cast({ts} as long) as ts",
    )
    df = df.cache()
    df.count()
    return df


MIB = 1024 * 1024


def timed(memory: list[PeakRss], action: object, *args: object) -> tuple[float, object]:
    """Seconds of `action(*args)` and what it returned; its peak memory is appended to `memory`."""
    assert callable(action)
    with PeakRss() as peak:
        start = time.perf_counter()
        result = action(*args)
        seconds = time.perf_counter() - start
    memory.append(peak)
    return seconds, result


def write_table(df: object, work: Path, engine: str) -> WriteResult:
    """One upsert into the engine's own table, the engine pinned unless `auto` (chosen by size)."""
    local.PINNED = None if engine == "auto" else engine  # type: ignore[assignment]
    try:
        return runner.write(df, table_of(engine), project_dir=work)  # type: ignore[arg-type]
    finally:
        local.PINNED = None


def table_of(engine: str) -> str:
    return f"bench_{engine}"


def upsert_row(engine: str) -> str:
    return f"runner.write upsert ({engine} engine)"


def as_arrow(df: object) -> pa.Table:
    return df.toArrow()  # type: ignore[attr-defined,no-any-return]


def delta_load(path: Path, rows: pa.Table) -> None:
    from deltalake import write_deltalake

    write_deltalake(str(path), rows, partition_by=["region"])


def delta_merge(path: Path, rows: pa.Table) -> None:
    from deltalake import DeltaTable

    (
        DeltaTable(str(path))
        .merge(source=rows, predicate="t.region = s.region AND t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def delta_rows(path: Path) -> int:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_dataset().count_rows()  # type: ignore[no-any-return]


def spark_jobs(spark: object) -> int:
    """Spark jobs run so far outside any job group (adaptive execution runs each shuffle stage as one)."""
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))  # type: ignore[attr-defined]


def profile_upsert(spark: object, df: object, work: Path, top: int, engine: str) -> None:
    """One more upsert under cProfile (the driver's side: Spark jobs show as the calls that wait)."""
    profiler = cProfile.Profile()
    jobs = spark_jobs(spark)
    profiler.enable()
    result = write_table(df, work, engine)
    profiler.disable()
    print(f"\nSpark jobs run by this upsert ({result.engine} engine): {spark_jobs(spark) - jobs}")
    print("\ncProfile of one upsert (driver), the runner's own functions by cumulative time:")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats("runner/", top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="records per upsert (default 200000)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs; the median is reported (default 3)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--no-delta", action="store_true", help="skip the delta-rs merge")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="after the timed runs, profile one upsert and print the top N functions")
    parser.add_argument("--engines", default="auto",
                        help="comma-separated write engines to time, each on its own table: auto (chosen by "
                        "size, what users get), driver, spark (default auto)")
    args = parser.parse_args()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines or any(e not in ("auto", "driver", "spark") for e in engines):
        parser.error(f"--engines takes auto, driver and spark; got {args.engines!r}")

    spark = get_spark(SparkSettings(master=args.master, conf=(("spark.sql.shuffle.partitions", "8"),)))
    work = Path(tempfile.mkdtemp(prefix="bench_writer_"))
    (work / "tables").mkdir()
    (work / "project.yml").write_text("name: bench\n")
    for engine in engines:
        (work / "tables" / f"{table_of(engine)}.yml").write_text(TABLE.format(name=table_of(engine)))

    half = args.rows // 2
    first = rows(spark, 0, args.rows, 0)
    for engine in engines:  # loaded by the Spark engine alike, so every table starts with the same files
        local.PINNED = "spark"
        runner.write(first, table_of(engine), operation="bulk_insert", project_dir=work)
        local.PINNED = None
    delta = work / "delta"
    if not args.no_delta:
        delta_load(delta, as_arrow(first))
    times: dict[str, list[float]] = {upsert_row(e): [] for e in engines}
    times |= {"df.write.parquet (snappy)": [], "df.write.parquet (gzip)": []}
    if not args.no_delta:
        times["delta-rs DeltaTable.merge"] = []
    memory: dict[str, list[PeakRss]] = {name: [] for name in times}
    rewritten: list[int] = []
    chosen: dict[str, list[str]] = {e: [] for e in engines}
    for run in range(1, args.runs + 1):
        df = rows(spark, run * half, args.rows, run)
        out = work / f"plain_{run}"
        steps: list[tuple[str, object, tuple[object, ...]]] = [
            ("df.write.parquet (snappy)", df.write.parquet, (str(out / "snappy"),)),
            ("df.write.parquet (gzip)", df.write.option("compression", "gzip").parquet, (str(out / "gzip"),)),
        ]
        if not args.no_delta:
            steps.append(("delta-rs DeltaTable.merge", delta_merge, (delta, as_arrow(df))))
        for name, action, action_args in steps:
            times[name].append(timed(memory[name], action, *action_args)[0])
        if not args.no_delta:  # every run adds `half` new keys and updates the rest
            assert delta_rows(delta) == args.rows + run * (args.rows - half), delta_rows(delta)
        for engine in engines:
            seconds, result = timed(memory[upsert_row(engine)], write_table, df, work, engine)
            times[upsert_row(engine)].append(seconds)
            assert isinstance(result, WriteResult)
            chosen[engine].append(result.engine)
        rewritten.append(result.num_writes)
        df.unpersist()
        print(f"run {run}: {result}; " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), file=sys.stderr)

    baseline = statistics.median(times["df.write.parquet (snappy)"])
    print(
        f"{args.rows} rows per write ({half} updates + {args.rows - half} inserts for the runner), "
        f"median of {args.runs} runs, Spark {spark.version}, master {args.master}, Python {sys.version.split()[0]}"
    )
    print()
    print("| what | median | rows/s | vs df.write.parquet (snappy) | peak RSS, process tree | added by the step |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        peak = statistics.median(m.peak for m in memory[name]) / MIB
        added = statistics.median(m.added for m in memory[name]) / MIB
        print(f"| {name} | {median:.2f} s | {args.rows / median:,.0f} | {median / baseline:.2f}x "
              f"| {peak:.0f} MiB | {added:.0f} MiB |")
    print()
    for engine in engines:
        print(f"engine that wrote, {upsert_row(engine)}: {', '.join(chosen[engine])}")
    for engine in engines if not args.no_delta else []:
        ours, peer = times[upsert_row(engine)], times["delta-rs DeltaTable.merge"]
        per_run = [o / p for o, p in zip(ours, peer, strict=True)]
        print(f"runner upsert ({engine} engine) vs delta-rs merge: "
              f"{statistics.median(ours) / statistics.median(peer):.2f}x "
              f"(ratio of medians); per run {', '.join(f'{r:.2f}' for r in per_run)}, "
              f"median {statistics.median(per_run):.2f}x")
    print()
    for name, values in times.items():
        print(f"raw seconds, {name}: {', '.join(f'{v:.2f}' for v in values)}")
        print(f"raw peak RSS MiB (added), {name}: "
              f"{', '.join(f'{m.peak / MIB:.0f} (+{m.added / MIB:.0f})' for m in memory[name])}")
    print(
        f"records in the files each upsert wrote (copy-on-write rewrites whole file groups): "
        f"{', '.join(f'{n:,}' for n in rewritten)}"
    )
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.profile:
        profile_upsert(spark, rows(spark, (args.runs + 1) * half, args.rows, args.runs + 1), work, args.profile,
                       engines[0])
    spark.stop()


if __name__ == "__main__":
    main()
