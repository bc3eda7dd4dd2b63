"""Upsert throughput of `runner.write` against a plain Spark Parquet write of the same rows.

Each run upserts `--rows` records into one copy-on-write table (8 partitions): half of them update
records written by the previous run, half are new, so every run merges into existing file groups
and adds inserts, the steady state of an upsert pipeline. In the same process and the same run,
the same rows are written with `df.write.parquet` twice: with Spark's default codec (snappy) and
with gzip, Hudi 0.14's default codec, which the runner's files use. Also in the same run, the peer:
delta-rs `DeltaTable.merge` of the same rows (as Arrow, converted before timing) into a Delta table
partitioned the same way and loaded with the same first rows, updating every matched record
(`t.region = s.region AND t.id = s.id`, the runner's non-global index) and inserting the rest; it
is measured twice, like for like with the runner's codecs: with gzip (`WriterProperties(compression="GZIP")`,
against the runner on a table with Hudi's default gzip) and with its default snappy (against the
runner writing `hoodie.parquet.compression.codec=snappy`, a write option). `--codecs` picks which
pairs run. `--gzip-level N` sets gzip's level on both sides (the runner's `zlib.compress.level`
write option, delta-rs's `compression_level`); both default to 6. Runs are interleaved so that
background load hits every row alike; the tables are loaded once before the timed runs. Each step also reports the peak
resident memory of this process tree (Spark's JVM and Python workers included, sampled every 20 ms)
and how much that is above the RSS on entry, and the CPU time of this process (all its threads;
Spark's JVM not counted). `--profile` runs one more upsert under cProfile and prints the driver's
top functions by cumulative time. `--phases N` runs N more upserts (first pair of
`--engines`/`--codecs`; `--phase-engine` picks another engine) and prints each phase's median wall
time and CPU time (this process, all its threads; Spark's JVM is not counted, so a phase that
waits on Spark shows wall without CPU).
Needs `pip install deltalake` (bench only).

`--engines` picks the write engines timed, each upserting the same rows into its own table per
codec (loaded alike): `auto` (chosen by size, as users get it), `driver` or `spark` pinned (`runner.writer.local`),
all three given the Spark DataFrame, and `arrow`: the same rows as a `pyarrow.Table` (converted
before timing, the input delta-rs gets), which `runner.write` writes on the driver without Spark.
The engine that actually wrote each run is printed.

Usage (from the repository root):
    .venv/bin/python bench/bench_writer.py --rows 100000 --runs 3 --engines auto,spark --codecs gzip,snappy
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import importlib
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import pyarrow as pa
from _common import PeakRss

import runner
from runner.declarations.model import SparkSettings
from runner.execute.spark import get_spark
from runner.writer import local
from runner.writer.options import CODEC_KEY as CODEC_OPTION
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


def timed(memory: list[PeakRss], action: object, *args: object, cpu: list[float] | None = None) -> tuple[float, object]:
    """Seconds of `action(*args)` and what it returned; its peak memory is appended to `memory`, and
    the CPU time of this process (all its threads; Spark's JVM not counted) to `cpu`."""
    assert callable(action)
    with PeakRss() as peak:
        start, started_cpu = time.perf_counter(), time.process_time()
        result = action(*args)
        seconds = time.perf_counter() - start
        if cpu is not None:
            cpu.append(time.process_time() - started_cpu)
    memory.append(peak)
    return seconds, result


# `--gzip-level`: gzip's level for both sides (None: each side's default, 6).
GZIP_LEVEL: int | None = None


def runner_options(codec: str) -> dict[str, str]:
    """The runner's write options for `codec`, with `--gzip-level` as Hadoop's `zlib.compress.level`."""
    options = {CODEC_OPTION: codec}
    if codec == "gzip" and GZIP_LEVEL is not None:
        options["zlib.compress.level"] = str(GZIP_LEVEL)
    return options


def write_table(df: object, work: Path, engine: str, codec: str = "gzip") -> WriteResult:
    """One upsert into the engine's own table of `codec`, the engine pinned unless `auto` (chosen by size);
    engine `arrow`: `df` is a `pyarrow.Table`, written without Spark (always the driver engine)."""
    local.PINNED = None if engine in ("auto", "arrow") else engine  # type: ignore[assignment]
    try:
        return runner.write(df, table_of(engine, codec), project_dir=work,  # type: ignore[arg-type]
                            options=runner_options(codec))
    finally:
        local.PINNED = None


def table_of(engine: str, codec: str) -> str:
    return f"bench_{engine}" if codec == "gzip" else f"bench_{engine}_{codec}"


def upsert_row(engine: str, codec: str) -> str:
    if engine == "arrow":
        return f"runner.write upsert (Arrow input, {codec})"
    return f"runner.write upsert ({engine} engine, {codec})"


def delta_row(codec: str) -> str:
    return f"delta-rs DeltaTable.merge ({codec})"


def as_arrow(df: object) -> pa.Table:
    return df.toArrow()  # type: ignore[attr-defined,no-any-return]


def delta_properties(codec: str) -> object:
    """delta-rs's writer properties for `codec` (gzip at the parquet crate's default level, 6, unless
    `--gzip-level`)."""
    from deltalake import WriterProperties

    level = GZIP_LEVEL if codec == "gzip" else None
    return WriterProperties(compression=codec.upper(), compression_level=level)  # type: ignore[arg-type]


def delta_load(path: Path, rows: pa.Table, codec: str) -> None:
    from deltalake import write_deltalake

    write_deltalake(str(path), rows, partition_by=["region"],
                    writer_properties=delta_properties(codec))  # type: ignore[arg-type]


def delta_merge(path: Path, rows: pa.Table, codec: str) -> None:
    from deltalake import DeltaTable

    (
        DeltaTable(str(path))
        .merge(source=rows, predicate="t.region = s.region AND t.id = s.id", source_alias="s", target_alias="t",
               writer_properties=delta_properties(codec))  # type: ignore[arg-type]
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


def profile_upsert(spark: object, df: object, work: Path, top: int, engine: str, codec: str) -> None:
    """One more upsert under cProfile (the driver's side: Spark jobs show as the calls that wait)."""
    profiler = cProfile.Profile()
    jobs = spark_jobs(spark)
    data = as_arrow(df) if engine == "arrow" else df
    profiler.enable()
    result = write_table(data, work, engine, codec)
    profiler.disable()
    print(f"\nSpark jobs run by this upsert ({result.engine} engine, {codec}): {spark_jobs(spark) - jobs}")
    print("\ncProfile of one upsert (driver), the runner's own functions by cumulative time:")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats("runner/", top)


# (module, attribute, label) of each phase of an upsert timed by `--phases`, in the order they run.
PHASES = (
    ("runner.writer.arrow_input", "prepared", "Arrow input: schema and types"),
    ("runner.writer.write", "create_table_if_absent", "table exists? (hoodie.properties)"),
    ("runner.writer.write", "open_table", "open table (properties, checks)"),
    ("runner.writer.write", "read_table_metadata", "table metadata reads (timeline, commits)"),
    ("runner.writer.write", "rollback_failed_writes", "rollback check"),
    ("runner.writer.write", "with_keys", "keys as Spark expressions"),
    ("runner.writer.arrow_input", "keyed", "Arrow input: keys"),
    ("runner.writer.local", "collect", "Spark action (toArrow) + de-dup"),
    ("runner.writer.dedup", "deduplicate", "Arrow de-dup"),
    ("runner.writer.write", "read_table_state", "touched partitions' state"),
    ("runner.writer.write", "index_table", "index: read old files"),
    ("runner.writer.local", "tag", "tagging"),
    ("runner.writer.local", "route_inserts", "insert routing"),
    ("runner.writer.local", "write_targets", "file writes (threads)"),
    ("runner.writer.commit", "complete", "commit"),
)


@contextlib.contextmanager
def phase_clocks(seconds: dict[str, list[tuple[float, float]]]) -> Iterator[None]:
    """Wrap each phase's function so that every call appends (wall, CPU of this process) to `seconds`."""
    saved = []
    for module_name, attribute, label in PHASES:
        module = importlib.import_module(module_name)
        original = getattr(module, attribute)
        saved.append((module, attribute, original))

        @functools.wraps(original)
        def clocked(*args: object, _original: object = original, _label: str = label, **kwargs: object) -> object:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return _original(*args, **kwargs)  # type: ignore[operator]
            finally:
                seconds.setdefault(_label, []).append((time.perf_counter() - wall, time.process_time() - cpu))

        setattr(module, attribute, clocked)
    try:
        yield
    finally:
        for module, attribute, original in saved:
            setattr(module, attribute, original)


def phases(spark: object, work: Path, runs: int, first_key: int, rows_per_run: int, engine: str, codec: str) -> None:
    """`runs` more upserts with each phase's wall and CPU time; medians printed."""
    seconds: dict[str, list[tuple[float, float]]] = {}
    totals = []
    for run in range(runs):
        df = rows(spark, first_key + run * (rows_per_run // 2), rows_per_run, 1000 + run)
        data = as_arrow(df) if engine == "arrow" else df
        with phase_clocks(seconds):
            wall, cpu = time.perf_counter(), time.process_time()
            write_table(data, work, engine, codec)
            totals.append((time.perf_counter() - wall, time.process_time() - cpu))
        df.unpersist()  # type: ignore[attr-defined]
    print(f"\nphases of {runs} more upserts ({engine} engine, {codec}), median wall and CPU (this process, "
          f"all threads; the JVM not counted), load {' '.join(f'{x:.1f}' for x in os.getloadavg())}:")
    for label, values in [("whole upsert", totals), *seconds.items()]:
        print(f"  {label}: wall {statistics.median(v[0] for v in values):.3f} s, "
              f"CPU {statistics.median(v[1] for v in values):.3f} s")


def collect_both_ways(spark: object, df: object, runs: int) -> None:
    """The driver engine's Spark action, interleaved: the window's de-duplication before `toArrow`
    (as before this round) against `toArrow` of the keyed records and Arrow's de-duplication."""
    from runner.writer.create import SIMPLE, KeyLayout
    from runner.writer.prepare import deduplicate, with_keys

    layout = KeyLayout("bench", ("id",), ("region",), "ts", SIMPLE, hive_style=False)
    keyed = with_keys(df, layout)  # type: ignore[arg-type]
    ways = {
        "window, then toArrow": lambda: deduplicate(keyed, "ts").toArrow(),
        "toArrow, then Arrow de-dup": lambda: local.collect(keyed, deduplicate=True, precombine_field="ts"),
    }
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    counts: dict[str, int] = {}
    for _ in range(runs):
        for name, way in ways.items():
            start = time.perf_counter()
            counts[name] = way().num_rows
            seconds[name].append(time.perf_counter() - start)
    assert len(set(counts.values())) == 1, counts
    print(f"\nthe driver engine's Spark action, {runs} interleaved runs each ({counts[next(iter(counts))]:,} rows):")
    for name, values in seconds.items():
        print(f"  {name}: median {statistics.median(values):.3f} s; raw {', '.join(f'{v:.3f}' for v in values)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="records per upsert (default 200000)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs; the median is reported (default 3)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--no-delta", action="store_true", help="skip the delta-rs merge")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="after the timed runs, profile one upsert and print the top N functions")
    parser.add_argument("--phases", type=int, default=0, metavar="N",
                        help="after the timed runs, N more upserts with each phase's wall and CPU time")
    parser.add_argument("--phase-engine", default=None,
                        help="the engine of --phases and --profile (default: the first of --engines)")
    parser.add_argument("--engines", default="auto,arrow",
                        help="comma-separated write engines to time, each on its own table: auto (chosen by "
                        "size, what users get), driver, spark (a DataFrame input), arrow (the same rows as a "
                        "pyarrow.Table, converted before timing, as delta-rs gets them) (default auto,arrow)")
    parser.add_argument("--collect-runs", type=int, default=0, metavar="N",
                        help="after the timed runs, time the driver engine's Spark action with and without "
                        "the window's shuffle, N interleaved runs each")
    parser.add_argument("--codecs", default="gzip,snappy",
                        help="comma-separated Parquet codecs, each timed for the runner and delta-rs alike: gzip "
                        "(Hudi's default), snappy (delta-rs's default) (default gzip,snappy)")
    parser.add_argument("--virtual-keys", action="store_true",
                        help="the runner's tables without meta fields (`meta_fields: false`, Hudi's "
                        "hoodie.populate.meta.fields=false): null _hoodie_* columns and no bloom filter, as a "
                        "Delta table has neither (default: Hudi's default, meta fields populated)")
    parser.add_argument("--gzip-level", type=int, default=None, choices=range(1, 10), metavar="1-9",
                        help="gzip's level on both sides: the runner's zlib.compress.level option and delta-rs's "
                        "compression_level (default: both sides' default, 6)")
    args = parser.parse_args()
    global GZIP_LEVEL
    GZIP_LEVEL = args.gzip_level
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if not engines or any(e not in ("auto", "driver", "spark", "arrow") for e in engines):
        parser.error(f"--engines takes auto, driver, spark and arrow; got {args.engines!r}")
    codecs = [c.strip() for c in args.codecs.split(",") if c.strip()]
    if not codecs or any(c not in ("gzip", "snappy") for c in codecs):
        parser.error(f"--codecs takes gzip and snappy; got {args.codecs!r}")
    pairs = [(e, c) for c in codecs for e in engines]

    load_at_start = os.getloadavg()
    spark = get_spark(SparkSettings(master=args.master, conf=(("spark.sql.shuffle.partitions", "8"),)))
    work = Path(tempfile.mkdtemp(prefix="bench_writer_"))
    (work / "tables").mkdir()
    (work / "project.yml").write_text("name: bench\n")
    for engine, codec in pairs:
        name = table_of(engine, codec)
        text = TABLE.format(name=name) + ("  meta_fields: false\n" if args.virtual_keys else "")
        (work / "tables" / f"{name}.yml").write_text(text)

    half = args.rows // 2
    first = rows(spark, 0, args.rows, 0)
    # Loaded by the Spark engine alike from one Spark partition, so every table starts with one file
    # per partition (as the Delta table does). From two, each partition got two files a few bytes
    # apart, and which was the smaller (random file ids in the footers) decided whether the first
    # upsert's inserts joined the file its updates rewrite or a second one: tables then differed by
    # a file per partition in their first run.
    load = first.coalesce(1)  # type: ignore[attr-defined]
    for engine, codec in pairs:
        local.PINNED = "spark"
        runner.write(load, table_of(engine, codec), operation="bulk_insert", project_dir=work,
                     options=runner_options(codec))
        local.PINNED = None
    delta = {codec: work / f"delta_{codec}" for codec in codecs}
    if not args.no_delta:
        for codec in codecs:
            delta_load(delta[codec], as_arrow(first), codec)
    times: dict[str, list[float]] = {upsert_row(e, c): [] for e, c in pairs}
    times |= {"df.write.parquet (snappy)": [], "df.write.parquet (gzip)": []}
    if not args.no_delta:
        times |= {delta_row(codec): [] for codec in codecs}
    memory: dict[str, list[PeakRss]] = {name: [] for name in times}
    cpu: dict[str, list[float]] = {name: [] for name in times}
    rewritten: list[int] = []
    chosen: dict[str, list[str]] = {upsert_row(e, c): [] for e, c in pairs}
    written: dict[str, list[int]] = {upsert_row(e, c): [] for e, c in pairs}
    for run in range(1, args.runs + 1):
        df = rows(spark, run * half, args.rows, run)
        out = work / f"plain_{run}"
        steps: list[tuple[str, object, tuple[object, ...]]] = [
            ("df.write.parquet (snappy)", df.write.parquet, (str(out / "snappy"),)),
            ("df.write.parquet (gzip)", df.write.option("compression", "gzip").parquet, (str(out / "gzip"),)),
        ]
        source = as_arrow(df) if not args.no_delta or "arrow" in engines else None
        if not args.no_delta:
            steps += [(delta_row(codec), delta_merge, (delta[codec], source, codec)) for codec in codecs]
        for name, action, action_args in steps:
            times[name].append(timed(memory[name], action, *action_args, cpu=cpu[name])[0])
        for codec in codecs if not args.no_delta else []:  # every run adds `half` new keys and updates the rest
            expected = args.rows + run * (args.rows - half)
            assert delta_rows(delta[codec]) == expected, (codec, delta_rows(delta[codec]))
        for engine, codec in pairs:
            row = upsert_row(engine, codec)
            seconds, result = timed(memory[row], write_table, source if engine == "arrow" else df, work, engine,
                                    codec, cpu=cpu[row])
            times[row].append(seconds)
            assert isinstance(result, WriteResult)
            chosen[row].append(result.engine)
            written[row].append(result.bytes_written)
        rewritten.append(result.num_writes)
        df.unpersist()
        print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), file=sys.stderr)

    baseline = statistics.median(times["df.write.parquet (snappy)"])
    print(
        f"{args.rows} rows per write ({half} updates + {args.rows - half} inserts for the runner), "
        f"median of {args.runs} runs, Spark {spark.version}, master {args.master}, Python {sys.version.split()[0]}"
    )
    print()
    print("| what | median | rows/s | vs df.write.parquet (snappy) | CPU, this process | peak RSS, process tree "
          "| added by the step |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        peak = statistics.median(m.peak for m in memory[name]) / MIB
        added = statistics.median(m.added for m in memory[name]) / MIB
        print(f"| {name} | {median:.2f} s | {args.rows / median:,.0f} | {median / baseline:.2f}x "
              f"| {statistics.median(cpu[name]):.2f} s | {peak:.0f} MiB | {added:.0f} MiB |")
    print()
    for row, engines_used in chosen.items():
        print(f"engine that wrote, {row}: {', '.join(engines_used)}")
    for engine, codec in pairs if not args.no_delta else []:
        ours, peer = times[upsert_row(engine, codec)], times[delta_row(codec)]
        per_run = [o / p for o, p in zip(ours, peer, strict=True)]
        label = "like for like, Hudi's default codec" if codec == "gzip" else "like for like, delta-rs's default codec"
        ours_cpu, peer_cpu = cpu[upsert_row(engine, codec)], cpu[delta_row(codec)]
        print(f"  CPU of this process, {upsert_row(engine, codec)} vs delta-rs ({codec}): "
              f"{statistics.median(ours_cpu) / statistics.median(peer_cpu):.2f}x (ratio of medians; the JVM not "
              "counted)")
        print(f"runner upsert ({engine} engine) vs delta-rs merge, both {codec} ({label}): "
              f"{statistics.median(ours) / statistics.median(peer):.2f}x "
              f"(ratio of medians); per run {', '.join(f'{r:.2f}' for r in per_run)}, "
              f"median {statistics.median(per_run):.2f}x")
    if not args.no_delta and "gzip" in codecs and "snappy" in codecs:
        for engine in engines:
            ours, peer = times[upsert_row(engine, "gzip")], times[delta_row("snappy")]
            print(f"runner upsert ({engine} engine, gzip) vs delta-rs merge (snappy), codecs differ as in the "
                  f"earlier rounds: {statistics.median(ours) / statistics.median(peer):.2f}x (ratio of medians)")
    print()
    for name, values in times.items():
        print(f"raw seconds, {name}: {', '.join(f'{v:.2f}' for v in values)}")
        print(f"raw CPU seconds (this process), {name}: {', '.join(f'{v:.2f}' for v in cpu[name])}")
        print(f"raw peak RSS MiB (added), {name}: "
              f"{', '.join(f'{m.peak / MIB:.0f} (+{m.added / MIB:.0f})' for m in memory[name])}")
    print(
        f"records in the files each upsert wrote (copy-on-write rewrites whole file groups): "
        f"{', '.join(f'{n:,}' for n in rewritten)}"
    )
    for row, sizes in written.items():
        print(f"bytes of the files each upsert wrote, {row}: {', '.join(f'{n:,}' for n in sizes)}")
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in load_at_start)}; "
          f"at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.collect_runs:
        collect_both_ways(spark, rows(spark, (args.runs + 2) * half, args.rows, args.runs + 2), args.collect_runs)
    measured = (args.phase_engine or pairs[0][0], pairs[0][1])
    if measured not in pairs:
        parser.error(f"--phase-engine {measured[0]} is not one of --engines")
    if args.phases:
        phases(spark, work, args.phases, (args.runs + 1) * half, args.rows, *measured)
    if args.profile:
        # After the phase runs, if any, so that it too updates half its records.
        start = (args.runs + 1 + args.phases) * half
        profile_upsert(spark, rows(spark, start, args.rows, args.runs + 1), work, args.profile, *measured)
    spark.stop()


if __name__ == "__main__":
    main()
