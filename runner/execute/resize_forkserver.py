"""Imported once by the forkserver of the driver's process pool (`runner.execute.resize_engine`),
never by the runner itself: importing it readies everything a worker would otherwise ready on its
first group, so each worker forked from the server starts with it done.

pyarrow imports part of itself and pandas lazily, on first use (a table built, a file written or
read: about 0.9 s of imports measured on the benchmark machine). A worker process forked from a
server that never used pyarrow would pay that again for its first group; so a small table goes
through the calls the rewrite and the copy make, in memory, here.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from runner.execute.resize_copy import copy_group
from runner.execute.resize_job import RewriteTask

# What the workers run, imported here once for all of them.
WORKER_CODE = (RewriteTask, copy_group)


def _warm_up() -> None:
    keys = pa.array(["a", "b"], pa.string())
    table = pa.table({"_hoodie_record_key": keys, "category": keys.dictionary_encode()})
    table = pa.concat_tables([table, table]).unify_dictionaries()
    out = io.BytesIO()
    with pq.ParquetWriter(out, table.schema, compression="snappy", store_schema=False) as writer:
        writer.write_table(table, row_group_size=table.num_rows)
        writer.add_key_value_metadata({"warm": "up"})
    parquet = pq.ParquetFile(pa.BufferReader(out.getvalue()), read_dictionary=["category"])
    for batch in parquet.iter_batches(batch_size=2, use_threads=False):
        pa.Table.from_batches([batch]).replace_schema_metadata(None).to_pylist()


_warm_up()
