"""The record index of an upsert: which file group holds each existing record key.

Like Hudi's SIMPLE index, it reads the `_hoodie_record_key` column of the latest base file of every
file group in the partitions the write touches, and the writer joins the incoming records against
it on (partition path, record key). The index is partition-scoped (not global): the same key in
another partition is another record, as with Hudi's default non-global indexes. Reading runs as a
Spark job, one task per few files, through the table's `Storage` (`index_frame`), or, when the write
runs on the driver, in a thread pool there (`index_table`), which keeps the files it read (within a
memory budget) for the merges that follow: each old file is then read and its key column decoded
once per write. Both read a file with `read_old_file`. A table without meta fields stores no key
column: its keys are computed from the record-key fields (`runner.writer.virtual_keys`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.hudi.files import BaseFile, relative_path
from runner.spark_jobs import map_in_arrow
from runner.storage import Storage
from runner.writer.schema import RECORD_KEY
from runner.writer.virtual_keys import VirtualKeys, stored_keys

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import DataFrame, SparkSession

INDEX_SCHEMA = "_w_ipath string, _w_ikey string, _w_ifid string"
INDEX_COLUMNS = ("_w_ipath", "_w_ikey", "_w_ifid")
# The driver's index also gives each key's row in its file; tagging carries it onto the record it
# matches, and the merge of that file then finds its updated rows without looking the keys up.
OLD_ROW = "_w_orow"
MAX_INDEX_TASKS = 64


def index_frame(spark: SparkSession, storage: Storage, files: Sequence[tuple[str, BaseFile]],
                width: int, virtual_keys: VirtualKeys | None = None) -> DataFrame | None:
    """`(_w_ipath, _w_ikey, _w_ifid)` for every record of the given latest base files.

    Args:
        spark: the session.
        storage: the table's storage, shipped to the tasks.
        files: `(partition, latest base file)` of each file group to index.
        width: partitions of the result, hashed by path and key as `prepare.clustered_by_key`
            clusters the records, so that the join of the two shuffles neither side again.
        virtual_keys: how to compute the keys of a table without meta fields.

    Returns:
        The index as a DataFrame, or None when there is nothing to index.
    """
    if not files:
        return None
    rows = [(partition, base.name, base.file_id) for partition, base in files]
    listing = spark.createDataFrame(rows, "partition string, name string, file_id string")
    # A fixed cap rather than the cluster's parallelism, which Spark Connect does not expose.
    tasks = max(1, min(len(rows), MAX_INDEX_TASKS))
    keys = map_in_arrow(listing.repartition(tasks), KeyReader(storage, virtual_keys), INDEX_SCHEMA)
    return keys.repartition(width, "_w_ipath", "_w_ikey")


def index_table(storage: Storage, files: Sequence[tuple[str, BaseFile]], threads: int,
                keep_bytes: int = 0, virtual_keys: VirtualKeys | None = None) -> tuple[pa.Table, dict[str, OldFile]]:
    """The same index as `index_frame`, read on the driver by `threads` threads, as one Arrow table,
    with `OLD_ROW`, each key's row in its file.

    Also returns, by relative path, the files read whole while they fit in `keep_bytes` together
    (`OldFile`), so the merge of a file group can use them instead of reading its file again. A
    file over the budget is let go as soon as its index rows are taken, inside its thread, so at
    most the kept files plus one file per thread are held at once (not every file read).
    """
    import numpy as np
    import pyarrow as pa

    budget = _KeepBudget(keep_bytes)

    def index_one(item: tuple[str, BaseFile]) -> tuple[pa.RecordBatch, OldFile | None]:
        old = read_old_file(storage, *item, virtual_keys)
        return old.index_rows, old if budget.claim(old.size) else None

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        read = list(pool.map(index_one, files))
    kept = {relative_path(partition, base.name): old
            for (partition, base), (_, old) in zip(files, read, strict=True) if old is not None}
    if not read:
        empty = pa.table({name: pa.array([], pa.string()) for name in INDEX_COLUMNS})
        return empty.append_column(OLD_ROW, pa.array([], pa.int64())), kept
    rows_in_file = np.concatenate([np.arange(rows.num_rows, dtype=np.int64) for rows, _ in read])
    return pa.Table.from_batches([rows for rows, _ in read]).append_column(OLD_ROW, pa.array(rows_in_file)), kept


class _KeepBudget:
    """Bytes of old files still allowed to be kept; claimed by the reading threads as files arrive."""

    def __init__(self, limit: int) -> None:
        self._left = limit
        self._lock = threading.Lock()

    def claim(self, size: int) -> bool:
        with self._lock:
            if size > self._left:
                return False
            self._left -= size
            return True


@dataclass(frozen=True, slots=True, weakref_slot=True)
class OldFile:
    """A base file as the index read it: its bytes parsed as Parquet, and its record keys.

    The merge of its file group decodes the other columns from `parquet` and takes the keys from
    `keys`, so the file is read and its footer and key column decoded once per write; it copies the
    pages no update touches from `data` (`runner.hudi.page_prefix`).
    """

    parquet: pq.ParquetFile
    keys: pa.Array
    size: int
    index_rows: pa.RecordBatch
    data: bytes


def read_old_file(storage: Storage, partition: str, base: BaseFile,
                  virtual_keys: VirtualKeys | None = None) -> OldFile:
    """Read one base file whole and decode its record keys (computed from the key fields for a table
    without meta fields): the one read of an old file, for the driver's index (kept for the merge)
    and for the Spark engine's index tasks (`KeyReader`) alike."""
    return _read(storage, partition, base.name, base.file_id, virtual_keys)


def _read(storage: Storage, partition: str, name: str, file_id: str,
          virtual_keys: VirtualKeys | None) -> OldFile:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = relative_path(partition, name)
    data = storage.read(path)
    parquet = pq.ParquetFile(pa.BufferReader(data))
    if virtual_keys is None:
        keys = stored_keys(parquet.read(columns=[RECORD_KEY]).column(0), path)
    else:
        keys = virtual_keys.keys(parquet.read(columns=virtual_keys.columns), path)
    return OldFile(parquet, keys, len(data), _index_rows(partition, file_id, keys), data)


def _index_rows(partition: str, file_id: str, keys: pa.Array) -> pa.RecordBatch:
    import pyarrow as pa

    n = len(keys)
    return pa.RecordBatch.from_arrays(
        [pa.repeat(pa.scalar(partition), n), keys, pa.repeat(pa.scalar(file_id), n)],
        names=list(INDEX_COLUMNS),
    )


@dataclass(frozen=True)
class KeyReader:
    """Picklable task: reads the record key column of each listed base file."""

    storage: Storage
    virtual_keys: VirtualKeys | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            columns = batch.to_pydict()
            for partition, name, file_id in zip(columns["partition"], columns["name"], columns["file_id"], strict=True):
                yield _read(self.storage, partition, name, file_id, self.virtual_keys).index_rows
