"""Benchmark the resize (clustering) executor against delta-rs compaction and bare pyarrow.

Generates about `--total-mb` MiB of Parquet in `--files` small files (one partition of a Hudi v6
copy-on-write table with the `_hoodie_*` columns, snappy, data that compresses like real data:
unique keys, random amounts and ids, a low-cardinality category; each file carries Hudi's
record-key footer, bloom filter and key range, as Hudi's writer puts in every base file), then, `--runs` times, on fresh
hard-linked copies of the same files:

- **pyarrow** (baseline): for each group the runner plans, `pq.read_table` every input, concatenate,
  `pq.write_table` one file (snappy), one group after the other in this process;
- **runner**: `run_resize` on the Hudi table (requested/inflight plan, the engine it chooses on
  `local[2]`: the driver's thread pool; meta-column rewrite, footer keys, replacecommit); the
  session is started before timing. `--variants` adds rows with the engine pinned: `spark` (one
  Spark task per group) and `threadsN` (the driver on N threads);
- **runner, binary copy**: the same with `file_sizing.strategy: binary_copy` (row groups copied
  without decoding, only `_hoodie_file_name` written again, the inputs' bloom filters merged and
  the key range computed from the decoded key column);
- **delta-rs**: `DeltaTable.optimize.compact(target_size=max file size)` on a Delta table made of the
  same files (`convert_to_deltalake`, not timed), with snappy so that all three write the same codec.

`--codec gzip` writes the inputs with gzip (level 6, Hudi's default codec) and has every system
write gzip at level 6 (the runner's rewrite deflates its pages with libdeflate).

Reports the median of the runs per system and the ratio to the pyarrow median, and each system's
peak memory: the high-water mark of this process tree's resident memory (Spark's JVM and Python
workers included) sampled every 20 ms during the step, and how much that is above the RSS on entry.
It also runs the groups once more as bare Spark tasks (one per group, as the Spark engine does) and
reports how many cores were busy on average (the tasks' summed time over the time from the first
start to the last end), with pyarrow's decoding threads off (the runner's setting) and on, in the
first `--probe-runs` runs. In the
same run it times the rewrite's record-key footer alone (`footer.merged_record_key_footer`: the
inputs' bloom filters merged and checked, plus the key range) on the keys of every group, serially
in this process, as a share of the runner's time, and building the filter from every key instead
(`bloom.serialize`, what the rewrite did before); and binary copy's footer
(`parquet_copy._record_key_footer`: the key column decoded, the key range, the inputs' filters
merged) on every group's parsed inputs, and decoding the key column alone.
All inputs fit in the page cache, so every system reads warm files. Needs `pip install deltalake`
(bench only).

    .venv/bin/python bench/bench_resize.py [--total-mb 1024] [--files 1000] [--max-file-mb 128] [--runs 3]
    .venv/bin/python bench/bench_resize.py --quick        # 64 MiB in 100 files, 1 run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

# isort: off
import _allocator_first  # noqa: F401  before pyarrow, as the `runner` command chooses Arrow's allocator
# isort: on
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from _common import PeakRss

from runner.declarations.model import FileSizing, ResizeStrategy, SparkSettings
from runner.execute import resize_engine
from runner.execute.resize import run_resize
from runner.execute.resize_engine import Engine, Pool
from runner.execute.resize_job import GroupRewrite
from runner.execute.spark import get_spark
from runner.hudi import bloom, bloom_merge, footer, parquet_copy
from runner.hudi.files import BaseFile
from runner.hudi.instant import InstantTime
from runner.hudi.metadata import CommitMetadata, WriteStat, encode_commit_metadata
from runner.hudi.state import read_table_state
from runner.plan.model import SizingStep
from runner.plan.sizing import plan_sizing
from runner.spark_jobs import MAX_TASKS, run_tasks
from runner.storage import storage_for

MIB = 1024 * 1024
PARTITION = "dt=2024-01-01"
# The inputs' codec (`--codec`), which every system writes too; gzip at Hudi's level 6.
CODEC, LEVEL = "snappy", None
INSTANT = InstantTime("20240101000000000")
PROPERTIES = """\
hoodie.table.name=bench
hoodie.table.type=COPY_ON_WRITE
hoodie.table.version=6
hoodie.timeline.layout.version=1
hoodie.table.recordkey.fields=id
hoodie.table.partition.fields=dt
hoodie.table.base.file.format=PARQUET
hoodie.table.keygenerator.class=org.apache.hudi.keygen.SimpleKeyGenerator
hoodie.datasource.write.hive_style_partitioning=true
hoodie.populate.meta.fields=true
hoodie.table.timeline.timezone=UTC
hoodie.archivelog.folder=archived
"""
CATEGORIES = pa.array([f"category-{i:02d}" for i in range(16)])


def rows_table(first: int, rows: int, name: str, rng: random.Random) -> pa.Table:
    """`rows` rows with ids from `first`, as one Hudi bulk insert would write them into file `name`."""
    ids = pa.array(range(first, first + rows), pa.int64())
    text = pc.cast(ids, pa.string())
    rand32 = pa.Array.from_buffers(pa.uint32(), rows, [None, pa.py_buffer(rng.randbytes(4 * rows))])
    payload = pa.Array.from_buffers(pa.binary(), rows, [
        None, pa.array(range(0, 16 * rows + 1, 16), pa.int32()).buffers()[1], pa.py_buffer(rng.randbytes(16 * rows)),
    ])
    return pa.table({
        "_hoodie_commit_time": pa.array([str(INSTANT)] * rows),
        "_hoodie_commit_seqno": pc.binary_join_element_wise(f"{INSTANT}_0_", text, ""),
        "_hoodie_record_key": text,
        "_hoodie_partition_path": pa.array([PARTITION] * rows),
        "_hoodie_file_name": pa.array([name] * rows),
        "id": ids,
        "ts": pc.cast(pc.add(ids, 1_700_000_000_000_000), pa.timestamp("us", tz="UTC")),
        "amount": pc.divide(pc.cast(rand32, pa.float64()), 100.0),
        "qty": pc.cast(pc.bit_wise_and(rand32, 127), pa.int32()),
        "category": pc.take(CATEGORIES, pc.bit_wise_and(pc.shift_right(rand32, 8), 15)),
        "payload": payload,
        "dt": pa.array([PARTITION.split("=")[1]] * rows),
    })


def generate(root: Path, total_mb: int, files: int) -> Path:
    """A Hudi v6 table: one commit of `files` base files of about total/files bytes each."""
    table = root / "source_hudi"
    part = table / PARTITION
    part.mkdir(parents=True)
    (table / ".hoodie").mkdir()
    (table / ".hoodie" / "hoodie.properties").write_text(PROPERTIES)
    (part / ".hoodie_partition_metadata").write_text(f"commitTime={INSTANT}\npartitionDepth=1\n")
    rng = random.Random(42)
    probe = rows_table(0, 20_000, "probe", rng)
    sink = pa.BufferOutputStream()
    pq.write_table(probe, sink, compression=CODEC)
    rows = max(1, int(total_mb * MIB / files / (sink.getvalue().size / probe.num_rows)))
    stats = []
    for n in range(files):
        name = BaseFile(f"{rng.getrandbits(128):032x}-0", f"{n}-1-{n}", INSTANT, "parquet").name
        data = rows_table(n * rows, rows, name, rng)
        # No Arrow schema: it would hold the footer's ~0.4 MB bloom filter a second time.
        with pq.ParquetWriter(part / name, data.schema, compression=CODEC, compression_level=LEVEL,
                              store_schema=False) as writer:
            writer.add_key_value_metadata(footer.record_key_footer(data.column("_hoodie_record_key")))
            writer.write_table(data)
        size = (part / name).stat().st_size
        stats.append(WriteStat(PARTITION, name.split("_")[0], f"{PARTITION}/{name}", None,
                               num_writes=rows, num_inserts=rows, total_write_bytes=size, file_size_in_bytes=size))
    commit = CommitMetadata("BULK_INSERT", {PARTITION: tuple(stats)})
    (table / ".hoodie" / f"{INSTANT}.commit.requested").write_bytes(b"")
    (table / ".hoodie" / f"{INSTANT}.inflight").write_bytes(b"")
    (table / ".hoodie" / f"{INSTANT}.commit").write_bytes(encode_commit_metadata(commit, layout=1))
    return table


def linked_copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, copy_function=os.link)
    return dest


def run_pyarrow(table: Path, step: SizingStep, out: Path) -> list[int]:
    out.mkdir()
    sizes = []
    for i, group in enumerate(step.groups):
        merged = pa.concat_tables([pq.read_table(table / f.path) for f in group.files])
        pq.write_table(merged, out / f"part-{i:05d}.parquet", compression=CODEC, compression_level=LEVEL)
        sizes.append((out / f"part-{i:05d}.parquet").stat().st_size)
    return sizes


def run_runner(table: Path, step: SizingStep, spark: object, *, engine: Engine | None = None,
               threads: int | None = None, pool: Pool | None = None) -> list[int]:
    """`run_resize` with the engine it chooses (None), or pinned to `engine` (and `threads` threads
    or processes, `pool`)."""
    storage = storage_for(str(table))
    state = read_table_state(storage)
    resize_engine.PINNED, resize_engine.THREADS, resize_engine.PINNED_POOL = engine, threads, pool
    try:
        outcome = run_resize(storage, state.metadata, step, spark=spark,  # type: ignore[arg-type]
                             clock=lambda: datetime.now(UTC))
    finally:
        resize_engine.PINNED, resize_engine.THREADS, resize_engine.PINNED_POOL = None, None, None
    return [(table / p).stat().st_size for p in outcome.output_files]


def prepare_delta(source: Path, dest: Path) -> Path:
    from deltalake import convert_to_deltalake

    dest.mkdir()
    for f in (source / PARTITION).glob("*.parquet"):
        os.link(f, dest / f.name)
    convert_to_deltalake(str(dest))
    return dest


def run_delta(table: Path, target: int) -> list[int]:
    from deltalake import DeltaTable, WriterProperties

    properties = WriterProperties(compression=CODEC.upper(), compression_level=LEVEL)
    DeltaTable(str(table)).optimize.compact(target_size=target, writer_properties=properties)
    return [os.path.getsize(u.removeprefix("file://")) for u in DeltaTable(str(table)).file_uris()]


def timed(action: Callable[[], list[int]]) -> tuple[float, float, list[int], PeakRss]:
    """Wall seconds, CPU seconds of this process (every thread: pyarrow's, delta-rs's, the driver
    engine's; not Spark's JVM and Python workers, whose processes come and go), the sizes written,
    and peak memory. On a loaded machine CPU time varies far less than wall time."""
    with PeakRss() as memory:
        cpu = time.process_time()
        started = time.perf_counter()
        sizes = action()
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
    return seconds, cpu, sizes, memory


class TimedRewrite:
    """Picklable Spark task: rewrites its groups as the runner's task does and reports, per group,
    the worker process and the wall-clock start and end (to see whether tasks really overlap)."""

    def __init__(self, table: str, instant: str, decode_threads: bool) -> None:
        self.table = table
        self.instant = instant
        self.decode_threads = decode_threads

    def __call__(self, groups: Iterable[GroupRewrite]) -> Iterator[tuple[int, float, float]]:
        import runner.execute.resize_job as job

        job.DECODE_WITH_THREADS = self.decode_threads
        storage = storage_for(self.table)
        for group in groups:
            started = time.time()
            job.rewrite_group(storage, group, self.instant, job.spark_write_token())
            yield os.getpid(), started, time.time()


def probe_tasks(source: Path, step: SizingStep, spark: object, work: Path, decode_threads: bool) -> dict[str, float]:
    """Rewrite every group with one Spark task each (as `run_resize` does) and measure the overlap:
    the sum of the tasks' times over the job's wall time is how many cores were busy on average."""
    table = linked_copy(source, work)
    groups = [GroupRewrite(g.partition, f"{uuid.uuid4()}-0", tuple(f.path for f in g.files)) for g in step.groups]
    started = time.perf_counter()
    spans = run_tasks(spark, groups, TimedRewrite(str(table), "20240102000000000", decode_threads),  # type: ignore[arg-type]
                      per_task=1, max_tasks=MAX_TASKS)
    wall = time.perf_counter() - started
    first = min(s for _, s, _ in spans)
    last = max(e for _, _, e in spans)
    shutil.rmtree(table)
    return {"workers": len({pid for pid, _, _ in spans}), "job_s": wall, "tasks_s": last - first,
            "busy": sum(e - s for _, s, e in spans) / (last - first)}


def group_keys(table: Path, step: SizingStep) -> list[pa.ChunkedArray]:
    """The record keys of each group's inputs, in the order given (not timed)."""
    return [
        pa.concat_tables(
            [pq.read_table(table / f.path, columns=["_hoodie_record_key"]) for f in group.files]
        ).column(0)
        for group in step.groups
    ]


def group_filters(table: Path, step: SizingStep) -> list[list[bloom_merge.InputFilter]]:
    """Each group's inputs' bloom filters from their footers, in the same order (not timed)."""
    filters = []
    for group in step.groups:
        metas = [pq.read_metadata(table / f.path) for f in group.files]
        filters.append([footer.input_filter(f.path, m.metadata, m.num_rows)
                        for f, m in zip(group.files, metas, strict=True)])
    return filters


def time_footers(keys: list[pa.ChunkedArray], filters: list[list[bloom_merge.InputFilter]]) -> tuple[float, float]:
    """Seconds for the rewrite's record-key footer of every group (the inputs' filters merged,
    checked by a sample of keys, and the key range), and for building the bloom filter from every
    key instead (what the rewrite did before)."""
    started = time.perf_counter()
    for group, group_filters in zip(keys, filters, strict=True):
        _, origin = footer.merged_record_key_footer(group_filters, group)
        assert origin == "merged", origin
    whole = time.perf_counter() - started
    started = time.perf_counter()
    for group in keys:
        bloom.serialize(group.combine_chunks().cast(pa.string()))
    return whole, time.perf_counter() - started


def time_copy_footers(source: Path, step: SizingStep) -> tuple[float, float]:
    """Seconds for binary copy's record-key footer of every group from its inputs' parsed footers
    (read and parsed beforehand, as `binary_copy` has them, not timed), and for decoding the
    `_hoodie_record_key` column alone, as that footer does."""
    footer_s = decode_s = 0.0
    for group in step.groups:
        parsed = [parquet_copy._parse(f.path, (source / f.path).read_bytes()) for f in group.files]
        files, chunks = [f for f, _ in parsed], parquet_copy.key_chunks(parsed)
        assert chunks is not None
        started = time.perf_counter()
        parquet_copy._key_column(files, chunks)
        decode_s += time.perf_counter() - started
        started = time.perf_counter()
        parquet_copy._record_key_footer(files, chunks)
        footer_s += time.perf_counter() - started
    return footer_s, decode_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-mb", type=int, default=1024)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--max-file-mb", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="64 MiB in 100 files, 1 run")
    parser.add_argument("--codec", choices=["snappy", "gzip"], default="snappy",
                        help="the inputs' codec, and so every system's output codec (gzip: level 6, Hudi's)")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--probe-runs", type=int, default=1, help="runs that also probe the tasks' overlap")
    parser.add_argument("--variants", default="spark,threads3",
                        help="extra runner rows, comma-separated: `spark` (the Spark engine pinned), "
                        "`threadsN` (the driver engine on N threads); empty for none")
    args = parser.parse_args()
    global CODEC, LEVEL
    CODEC, LEVEL = args.codec, 6 if args.codec == "gzip" else None
    if args.quick:
        args.total_mb, args.files, args.runs = 64, 100, 1
    root = Path(tempfile.mkdtemp(prefix="bench_resize_", dir=args.work_dir))
    try:
        report(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report(root: Path, args: argparse.Namespace) -> None:
    started = time.perf_counter()
    source = generate(root, args.total_mb, args.files)
    inputs = sorted((source / PARTITION).glob("*.parquet"))
    input_bytes = sum(f.stat().st_size for f in inputs)
    os.sync()
    print(f"generated {len(inputs)} files, {input_bytes / MIB:.0f} MiB in {time.perf_counter() - started:.1f} s")
    limit = args.max_file_mb * MIB
    plan_started = time.perf_counter()
    step = plan_sizing(
        FileSizing(max_file_size=limit, small_file_limit=limit - 1), read_table_state(storage_for(str(source)))
    )
    plan_s = time.perf_counter() - plan_started
    assert step is not None and not step.is_empty
    spark = get_spark(SparkSettings(master="local[2]", conf=(("spark.ui.enabled", "false"),)))
    copy_step = replace(step, strategy=ResizeStrategy.BINARY_COPY)
    variants = [v for v in args.variants.split(",") if v]
    extra = {_variant_name(v): v for v in variants}
    times: dict[str, list[float]] = {"pyarrow": [], "runner": [], **{n: [] for n in extra},
                                     "runner, binary copy": [], "delta-rs": []}
    peaks: dict[str, list[PeakRss]] = {name: [] for name in times}
    cpus: dict[str, list[float]] = {name: [] for name in times}
    footers: list[tuple[float, float]] = []
    copy_footers: list[tuple[float, float]] = []
    probes: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    keys = group_keys(source, step)
    filters = group_filters(source, step)
    outputs: dict[str, list[int]] = {}
    for run in range(args.runs):
        work = root / f"run{run}"
        work.mkdir()
        hudi = linked_copy(source, work / "hudi")
        hudi_copy = linked_copy(source, work / "hudi_copy")
        variant_tables = {n: linked_copy(source, work / f"hudi_{v}") for n, v in extra.items()}
        delta = prepare_delta(source, work / "delta")
        actions: list[tuple[str, Callable[[], list[int]]]] = [
            ("pyarrow", partial(run_pyarrow, source, step, work / "pyarrow")),
            ("runner", partial(run_runner, hudi, step, spark)),
            *((n, partial(run_runner, variant_tables[n], step, spark, **_variant_pins(v))) for n, v in extra.items()),
            ("runner, binary copy", partial(run_runner, hudi_copy, copy_step, spark)),
            ("delta-rs", partial(run_delta, delta, limit)),
        ]
        for name, action in actions:
            os.sync()  # earlier writes are flushed now, not during the next measurement
            seconds, cpu, sizes, memory = timed(action)
            times[name].append(seconds)
            cpus[name].append(cpu)
            peaks[name].append(memory)
            outputs[name] = sizes
            print(f"run {run + 1}: {name:19s} {seconds:7.2f} s (CPU {cpu:.2f} s), {len(sizes)} files written, "
                  f"peak RSS {memory.peak / MIB:.0f} MiB (+{memory.added / MIB:.0f} MiB)")
        footers.append(time_footers(keys, filters))
        print(f"run {run + 1}: rewrite's footers {footers[-1][0]:7.2f} s (filters merged; "
              f"building them from the keys instead {footers[-1][1]:.2f} s)")
        copy_footers.append(time_copy_footers(source, step))
        print(f"run {run + 1}: binary copy's footers {copy_footers[-1][0]:7.2f} s "
              f"(decoding the key column alone {copy_footers[-1][1]:.2f} s)")
        for threads in (False, True) if run < args.probe_runs else ():
            os.sync()
            probe = probe_tasks(source, step, spark, work / f"probe-{threads}", threads)
            probes[threads].append(probe)
            print(f"run {run + 1}: tasks, pyarrow decode threads {'on ' if threads else 'off'}: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in probe.items()))
        shutil.rmtree(work)
    print_table(args, len(inputs), input_bytes, step, plan_s, times, outputs, peaks)
    print_cpu(times, cpus)
    print_footers(keys, times["runner"], footers)
    print_copy_footers(times["runner, binary copy"], copy_footers)
    print_probes(len(step.groups), probes)


def _variant_name(variant: str) -> str:
    if variant == "spark":
        return "runner, Spark engine"
    return f"runner, driver on {_variant_pins(variant)['threads']} threads"


def _variant_pins(variant: str) -> dict[str, Any]:
    if variant == "spark":
        return {"engine": "spark"}
    if variant.startswith("threads") and variant[7:].isdigit():
        return {"engine": "driver", "threads": int(variant[7:])}
    raise SystemExit(f"--variants: unknown variant {variant!r}, expected `spark` or `threadsN`")


def print_table(
    args: argparse.Namespace,
    files: int,
    input_bytes: int,
    step: SizingStep,
    plan_s: float,
    times: dict[str, list[float]],
    outputs: dict[str, list[int]],
    peaks: dict[str, list[PeakRss]],
) -> None:
    base = statistics.median(times["pyarrow"])
    print(
        f"\n{files} input files, {input_bytes / MIB:.0f} MiB, {len(step.groups)} groups of <= {args.max_file_mb} MiB; "
        f"median of {args.runs} run(s); Python {platform.python_version()}, {os.cpu_count()} CPUs; "
        f"runner planning (listing + plan_sizing) {plan_s * 1000:.0f} ms, not included\n"
    )
    print(
        "| what | median | MiB/s | files written | vs pyarrow (ratio of medians) "
        "| vs pyarrow (median of per-run ratios) | peak RSS, process tree | added by the step |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        per_run = statistics.median(v / b for v, b in zip(values, times["pyarrow"], strict=True))
        print(
            f"| {name} | {median:.2f} s | {input_bytes / MIB / median:.0f} | {len(outputs[name])} "
            f"({sum(outputs[name]) / MIB:.0f} MiB) | {median / base:.2f}x | {per_run:.2f}x "
            f"| {statistics.median(m.peak for m in peaks[name]) / MIB:.0f} MiB "
            f"| {statistics.median(m.added for m in peaks[name]) / MIB:.0f} MiB |"
        )
    print("\nraw seconds: " + json.dumps({k: [round(v, 2) for v in vs] for k, vs in times.items()}))
    print("raw peak RSS MiB (added): " + json.dumps(
        {k: [f"{m.peak / MIB:.0f} (+{m.added / MIB:.0f})" for m in ms] for k, ms in peaks.items()}))
    delta = statistics.median(times["delta-rs"])
    for name in [n for n in times if n.startswith("runner")]:
        per_run = statistics.median(v / d for v, d in zip(times[name], times["delta-rs"], strict=True))
        print(f"{name} vs delta-rs: {statistics.median(times[name]) / delta:.2f}x (ratio of medians), "
              f"{per_run:.2f}x (median of per-run ratios)")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def print_cpu(times: dict[str, list[float]], cpus: dict[str, list[float]]) -> None:
    """CPU seconds of this process per system (the Spark engine's tasks run elsewhere: its figure
    is the driver's share only), and each against delta-rs's in the same run."""
    print("\n| what | CPU, median | cores busy (CPU / wall, median) | CPU vs delta-rs (median of per-run ratios) |")
    print("|---|---:|---:|---:|")
    for name, values in cpus.items():
        busy = statistics.median(c / w for c, w in zip(values, times[name], strict=True))
        ratio = statistics.median(c / d for c, d in zip(values, cpus["delta-rs"], strict=True))
        print(f"| {name} | {statistics.median(values):.2f} s | {busy:.2f} | {ratio:.2f}x |")
    print("raw CPU seconds: " + json.dumps({k: [round(v, 2) for v in vs] for k, vs in cpus.items()}))


def print_footers(keys: list[pa.ChunkedArray], runner: list[float], footers: list[tuple[float, float]]) -> None:
    whole = statistics.median(f[0] for f in footers)
    alone = statistics.median(f[1] for f in footers)
    share = statistics.median(f[0] / r for f, r in zip(footers, runner, strict=True))
    print(
        f"\nthe rewrite's record-key footer of all {sum(len(k) for k in keys):,} keys in {len(keys)} groups "
        f"(inputs' filters merged, key range), serially in this process: median {whole:.2f} s "
        f"(building the filters from every key instead: {alone:.2f} s), {share:.0%} of the runner's resize "
        f"(median of per-run shares; the runner builds them in two parallel Spark tasks)"
    )
    print("raw footer seconds (merged footer, rebuilt filter): "
          + json.dumps([[round(a, 2), round(b, 2)] for a, b in footers]))


def print_copy_footers(copy: list[float], footers: list[tuple[float, float]]) -> None:
    whole = statistics.median(f[0] for f in footers)
    decode = statistics.median(f[1] for f in footers)
    share = statistics.median(f[0] / r for f, r in zip(footers, copy, strict=True))
    print(f"\nbinary copy's record-key footer (key column decoded for the range, the inputs' filters merged), "
          f"serially in this process: median {whole:.2f} s (decoding the key column alone {decode:.2f} s), "
          f"{share:.0%} of the binary-copy resize (median of per-run shares)")
    print("raw copy footer seconds (whole, decode alone): "
          + json.dumps([[round(a, 2), round(b, 2)] for a, b in footers]))


def print_probes(groups: int, probes: dict[bool, list[dict[str, float]]]) -> None:
    for threads, runs in probes.items():
        if not runs:
            continue
        median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"\n{groups} groups as Spark tasks on local[2], pyarrow decode threads {'on' if threads else 'off'}: "
            f"{median['workers']:.0f} Python workers, job {median['job_s']:.2f} s (first task start to last end "
            f"{median['tasks_s']:.2f} s), cores busy on average {median['busy']:.2f} (median of {len(runs)})"
        )
        print("raw: " + json.dumps([{k: round(v, 2) for k, v in r.items()} for r in runs]))


if __name__ == "__main__":
    main()
