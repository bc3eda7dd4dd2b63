"""What each side of the writer row does per upsert: CPU, rows and bytes rewritten, codec.

The goal row of `bench_writer.py` compares wall times; this script says why they differ. Both
systems get the same upserts as `bench_writer.py` (half updates of the previous run, half new
keys, 8 partitions), interleaved, in one process, and for each merge it reports:

- wall time, CPU time of this process (all threads: delta-rs's Rust threads and pyarrow's encode
  threads included) and CPU time of Spark's JVM and Python workers (children, read from `/proc`);
- rows in the files written and files rewritten (delta-rs: its `operationMetrics`; the runner: its
  `WriteResult`), bytes written, and the codec and encodings of one written file.

For the runner it times two inputs: the Spark DataFrame (one `toArrow` action in the JVM) and,
when `runner.write` takes Arrow, the same rows as a `pyarrow.Table` (what delta-rs is given).

Usage (from the repository root; `pip install deltalake` into `.venv` first):
    .venv/bin/python bench/bench_writer_gap.py --rows 100000 --runs 5
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import pyarrow.parquet as pq
from _common import _children
from bench_writer import TABLE, delta_load, delta_merge, rows

import runner
from runner.declarations.model import SparkSettings
from runner.execute.spark import get_spark
from runner.writer import local
from runner.writer.options import CODEC_KEY


def children_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of each live descendant of this process (the JVM, Python workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[int, float] = {}
    pending = _children(os.getpid())
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            found[pid] = (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            continue
        pending.extend(_children(pid))
    return found


def children_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU the descendants alive at the end spent since `before` (a worker that exited is not counted)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measured(action: Any) -> tuple[dict[str, float], Any]:
    wall, cpu, jvm = time.perf_counter(), self_cpu(), children_cpu()
    result = action()
    return {"wall": time.perf_counter() - wall, "cpu": self_cpu() - cpu,
            "jvm": children_delta(jvm, children_cpu())}, result


def delta_facts(path: Path) -> dict[str, Any]:
    from deltalake import DeltaTable

    table = DeltaTable(str(path))
    metrics = table.history(1)[0]["operationMetrics"]
    version = table.version()
    added = table.file_uris()
    log = path / "_delta_log" / f"{version:020d}.json"
    import json

    new = [json.loads(line)["add"] for line in log.read_text().splitlines() if '"add"' in line]
    sizes = [a["size"] for a in new]
    return {"metrics": metrics, "files_added": len(new), "bytes": sum(sizes), "live_files": len(added),
            "sample": str(path / new[0]["path"]) if new else None}


def file_facts(path: str) -> str:
    meta = pq.ParquetFile(path).metadata
    rg = meta.row_group(0)
    columns = []
    for i in range(rg.num_columns):
        col = rg.column(i)
        columns.append(f"{col.path_in_schema}:{col.compression}:{'/'.join(sorted(col.encodings))}"
                       f":{col.total_compressed_size}")
    kv = meta.metadata or {}
    footer = sum(len(k) + len(v) for k, v in kv.items())
    return (f"{meta.num_rows} rows, {meta.num_row_groups} row groups, {os.path.getsize(path):,} bytes "
            f"(key-value footer {footer:,}); created_by {meta.created_by}; columns " + ", ".join(columns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--codec", default="gzip", choices=("gzip", "snappy"))
    parser.add_argument("--inputs", default="dataframe,arrow",
                        help="runner inputs to time: dataframe, arrow (default both, if runner.write takes Arrow)")
    args = parser.parse_args()
    inputs = [i for i in args.inputs.split(",") if i]

    spark = get_spark(SparkSettings(master="local[2]", conf=(("spark.sql.shuffle.partitions", "8"),)))
    work = Path(tempfile.mkdtemp(prefix="bench_writer_gap_"))
    (work / "tables").mkdir()
    (work / "project.yml").write_text("name: bench\n")
    for name in inputs:
        (work / "tables" / f"t_{name}.yml").write_text(TABLE.format(name=f"t_{name}"))
    half = args.rows // 2
    first = rows(spark, 0, args.rows, 0)
    for name in inputs:
        local.PINNED = "spark"
        runner.write(first, f"t_{name}", operation="bulk_insert", project_dir=work, options={CODEC_KEY: args.codec})
        local.PINNED = None
    delta = work / "delta"
    delta_load(delta, first.toArrow(), args.codec)  # type: ignore[attr-defined]

    figures: dict[str, list[dict[str, float]]] = {"delta-rs": [], **{f"runner ({i})": [] for i in inputs}}
    print(f"load at start {os.getloadavg()}", file=sys.stderr)
    for run in range(1, args.runs + 1):
        df = rows(spark, run * half, args.rows, run)
        source = df.toArrow()  # type: ignore[attr-defined]
        m, _ = measured(lambda source=source: delta_merge(delta, source, args.codec))
        facts = delta_facts(delta)
        met = facts["metrics"]
        m |= {"rows_written": met.get("num_output_rows", -1), "bytes": facts["bytes"],
              "files_written": facts["files_added"], "files_removed": met.get("num_target_files_removed", -1),
              "copied": met.get("num_target_rows_copied", -1)}
        figures["delta-rs"].append(m)
        if run == args.runs and facts["sample"]:
            print("delta-rs file:", file_facts(facts["sample"]))
            print("delta-rs metrics:", met)
        for name in inputs:
            data = df if name == "dataframe" else source
            m, result = measured(lambda data=data, name=name: runner.write(
                data, f"t_{name}", project_dir=work, options={CODEC_KEY: args.codec}))
            m |= {"rows_written": result.num_writes, "bytes": result.bytes_written,
                  "files_written": len(result.files), "files_removed": len(result.files) - result.num_inserts * 0,
                  "copied": result.num_writes - result.num_updates - result.num_inserts}
            figures[f"runner ({name})"].append(m)
            if run == args.runs:
                print(f"runner ({name}) file:", file_facts(str(work / "warehouse" / f"t_{name}" / result.files[0])))
        df.unpersist()  # type: ignore[attr-defined]
        print(f"run {run}: " + ", ".join(f"{k} wall {v[-1]['wall']:.2f} cpu {v[-1]['cpu']:.2f} jvm {v[-1]['jvm']:.2f}"
                                         for k, v in figures.items()), file=sys.stderr)
    print(f"\n{args.rows} rows per upsert, {args.codec}, median of {args.runs} interleaved runs; "
          f"load at end {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    keys = ("wall", "cpu", "jvm", "rows_written", "copied", "files_written", "bytes")
    print("| system | " + " | ".join(keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for name, values in figures.items():
        print(f"| {name} | " + " | ".join(f"{statistics.median(v[k] for v in values):,.3f}"
                                          if k in ("wall", "cpu", "jvm") else
                                          f"{statistics.median(v[k] for v in values):,.0f}" for k in keys) + " |")
    for name, values in figures.items():
        print(f"raw {name}: " + "; ".join(f"wall {v['wall']:.3f} cpu {v['cpu']:.3f} jvm {v['jvm']:.3f} "
                                          f"rows {v['rows_written']:,} bytes {v['bytes']:,}" for v in values))
    spark.stop()


if __name__ == "__main__":
    main()
