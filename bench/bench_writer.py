"""Upsert throughput of `runner.write` against a plain Spark Parquet write of the same rows.

Each run upserts `--rows` records into one copy-on-write table (8 partitions): half of them update
records written by the previous run, half are new, so every run merges into existing file groups
and adds inserts, the steady state of an upsert pipeline. In the same process and the same run,
the same rows are written with `df.write.parquet` twice: with Spark's default codec (snappy) and
with gzip, Hudi 0.14's default codec, which the runner's files use. Runs are interleaved so that
background load hits every row alike; the table is loaded once before the timed runs.

Usage (from the repository root):
    .venv/bin/python bench/bench_writer.py --rows 200000 --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import runner
from runner.declarations.model import SparkSettings
from runner.execute.spark import get_spark

TABLE = """\
name: bench
path: warehouse/bench
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


def timed(action: object, *args: object) -> float:
    assert callable(action)
    start = time.perf_counter()
    action(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="records per upsert (default 200000)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs; the median is reported (default 3)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    args = parser.parse_args()

    spark = get_spark(SparkSettings(master=args.master, conf=(("spark.sql.shuffle.partitions", "8"),)))
    work = Path(tempfile.mkdtemp(prefix="bench_writer_"))
    (work / "tables").mkdir()
    (work / "project.yml").write_text("name: bench\n")
    (work / "tables" / "bench.yml").write_text(TABLE)

    half = args.rows // 2
    runner.write(rows(spark, 0, args.rows, 0), "bench", operation="bulk_insert", project_dir=work)
    times: dict[str, list[float]] = {"runner.write upsert": [], "df.write.parquet (snappy)": [],
                                     "df.write.parquet (gzip)": []}
    rewritten: list[int] = []
    for run in range(1, args.runs + 1):
        df = rows(spark, run * half, args.rows, run)
        out = work / f"plain_{run}"
        times["df.write.parquet (snappy)"].append(timed(df.write.parquet, str(out / "snappy")))
        times["df.write.parquet (gzip)"].append(
            timed(df.write.option("compression", "gzip").parquet, str(out / "gzip"))
        )
        start = time.perf_counter()
        result = runner.write(df, "bench", project_dir=work)
        times["runner.write upsert"].append(time.perf_counter() - start)
        rewritten.append(result.num_writes)
        df.unpersist()
        print(f"run {run}: {result}", file=sys.stderr)

    baseline = statistics.median(times["df.write.parquet (snappy)"])
    print(
        f"{args.rows} rows per write ({half} updates + {args.rows - half} inserts for the runner), "
        f"median of {args.runs} runs, Spark {spark.version}, master {args.master}, Python {sys.version.split()[0]}"
    )
    print()
    print("| what | median | rows/s | vs df.write.parquet (snappy) |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} s | {args.rows / median:,.0f} | {median / baseline:.2f}x |")
    print()
    for name, values in times.items():
        print(f"raw seconds, {name}: {', '.join(f'{v:.2f}' for v in values)}")
    print(
        f"records in the files each upsert wrote (copy-on-write rewrites whole file groups): "
        f"{', '.join(f'{n:,}' for n in rewritten)}"
    )
    spark.stop()


if __name__ == "__main__":
    main()
