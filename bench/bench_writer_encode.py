"""One file group's encode, ours against delta-rs's, on the same rows: where the writer's CPU per row goes.

The writer row compares a Hudi upsert with a delta-rs merge; both rewrite whole files. This script
isolates the per-file work on identical rows (a file group of the bench's shape: `id, region, name,
amount, ts`, `--rows` records, keys sequential) and reports the CPU time (this process, all
threads; delta-rs encodes in Rust threads of this process) of:

- `hudi file`: what a create handle writes: the five meta columns and the data, gzip level 6
  (pages deflated by libdeflate, `runner.hudi.parquet_deflate`; once more with Arrow's own zlib),
  Hudi's dictionary rule (`runner.hudi.parquet_dictionary`), and the record-key footer (bloom filter, key
  range), into memory;
- `hudi footer`: the record-key footer alone (`runner.hudi.footer.record_key_footer`);
- `data only, pyarrow`: the data columns alone through the runner's encoder, with Hudi's dictionary rule, then
  with pyarrow's default (a dictionary on every column);
- `data only, delta-rs`: `write_deltalake` of the same data columns into a new table (the Delta log
  commit included), gzip at the parquet crate's default level (6).

Every variant runs `--reps` times, interleaved; the median and the range are printed, with the
bytes each produced.

Usage (from the repository root; `pip install deltalake` into `.venv` first):
    .venv/bin/python bench/bench_writer_encode.py --rows 37500 --reps 9
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from runner.hudi.footer import record_key_footer
from runner.hudi.parquet_deflate import parquet_writer
from runner.hudi.parquet_dictionary import dictionary_columns


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def data_rows(n: int, start: int = 1_000_000) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    id_text = pa.array(ids).cast(pa.string())
    return pa.table({
        "id": ids,
        "region": pa.repeat(pa.scalar("r3"), n),
        "name": pc.binary_join_element_wise("customer", id_text, "-"),
        "amount": ids * 1.5,
        "ts": pa.repeat(pa.scalar(7, pa.int64()), n),
    })


def hudi_rows(data: pa.Table) -> pa.Table:
    n = data.num_rows
    instant = "20261124021500000"
    keys = data.column("id").cast(pa.string())
    seq = pc.binary_join_element_wise(f"{instant}_0", pa.array(np.arange(n)).cast(pa.string()), "_")
    meta = {
        "_hoodie_commit_time": pa.repeat(pa.scalar(instant), n),
        "_hoodie_commit_seqno": seq,
        "_hoodie_record_key": keys,
        "_hoodie_partition_path": pa.repeat(pa.scalar("region=r3"), n),
        "_hoodie_file_name": pa.repeat(pa.scalar(f"00000000-0000-0000-0000-000000000000-0_0-0-0_{instant}.parquet"), n),
    }
    return pa.table({**meta, **{name: data.column(name) for name in data.column_names}})


def pyarrow_file(table: pa.Table, *, hudi_dictionary: bool, footer: bool, codec: str = "gzip",
                 arrow_gzip: bool = False) -> int:
    """The file as the runner encodes it (gzip pages deflated by libdeflate, `parquet_deflate`), or
    with `arrow_gzip` by Arrow's own zlib, as before that."""
    sink = io.BytesIO()
    options = dict(use_dictionary=dictionary_columns(table) if hudi_dictionary else True, store_schema=False)
    level = 6 if codec == "gzip" else None
    writer = (pq.ParquetWriter(sink, table.schema, compression=codec, compression_level=level, **options)
              if arrow_gzip else parquet_writer(sink, table.schema, compression=codec, compression_level=level,
                                                **options))
    writer.write_table(table, row_group_size=max(table.num_rows, 1))
    if footer:
        writer.add_key_value_metadata(record_key_footer(table.column("_hoodie_record_key")))
    writer.close()
    return len(sink.getvalue())


def delta_file(table: pa.Table, where: Path) -> int:
    from deltalake import WriterProperties, write_deltalake

    shutil.rmtree(where, ignore_errors=True)
    write_deltalake(str(where), table, writer_properties=WriterProperties(compression="GZIP"))
    return sum(p.stat().st_size for p in where.glob("*.parquet"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=37_500)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    data = data_rows(args.rows)
    hudi = hudi_rows(data)
    where = Path(tempfile.mkdtemp(prefix="bench_writer_encode_"))
    variants: dict[str, Callable[[], int]] = {
        "hudi file (meta + data, Hudi's dictionary rule, gzip 6, record-key footer)":
            lambda: pyarrow_file(hudi, hudi_dictionary=True, footer=True),
        "hudi file, Arrow's own zlib (before libdeflate)": lambda: pyarrow_file(hudi, hudi_dictionary=True,
                                                                                footer=True, arrow_gzip=True),
        "hudi file without the record-key footer": lambda: pyarrow_file(hudi, hudi_dictionary=True, footer=False),
        "hudi footer alone (bloom filter, key range)":
            lambda: len(str(record_key_footer(hudi.column("_hoodie_record_key")))),
        "data only, pyarrow, Hudi's dictionary rule, gzip 6": lambda: pyarrow_file(data, hudi_dictionary=True,
                                                                                   footer=False),
        "data only, pyarrow, dictionary on every column, gzip 6": lambda: pyarrow_file(data, hudi_dictionary=False,
                                                                                       footer=False),
        "data only, delta-rs write_deltalake, gzip (level 6)": lambda: delta_file(data, where / "delta"),
        "hudi file, snappy (for scale)": lambda: pyarrow_file(hudi, hudi_dictionary=True, footer=True,
                                                             codec="snappy"),
    }
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    sizes: dict[str, int] = {}
    for name, action in variants.items():  # warm-up: imports, thread pools
        sizes[name] = action()
    for _ in range(args.reps):
        for name, action in variants.items():
            start = cpu()
            sizes[name] = action()
            seconds[name].append(cpu() - start)
    print(f"{args.rows:,} rows, {args.reps} interleaved reps, CPU of this process (all threads), "
          f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("| variant | CPU median | range | bytes |")
    print("|---|---:|---:|---:|")
    for name, values in seconds.items():
        print(f"| {name} | {statistics.median(values) * 1000:.1f} ms | {min(values) * 1000:.1f}–"
              f"{max(values) * 1000:.1f} | {sizes[name]:,} |")
    shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
