"""Rows and Parquet bytes for synthetic Hudi tables (see `runner.testing.tables`).

Every row a Hudi writer stores starts with five meta columns: `_hoodie_commit_time` (the instant
that last wrote the record), `_hoodie_commit_seqno` (`<instant>_<task>_<n>`), `_hoodie_record_key`,
`_hoodie_partition_path` and `_hoodie_file_name` (the base file holding the row). A copy-on-write
rewrite keeps the commit time and sequence number of rows it did not change but always sets the new
file name. The data columns here are the record key (long), the partition field (string), the
ordering field (long epoch millis of the writing instant, so a later write always wins a merge),
`amount` (double) and `note` (string padding used to reach a chosen file size).

Values are derived from a seed, the instant and the file id only, never from an unseeded random.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa
import pyarrow.parquet as pq

from runner.hudi import footer
from runner.hudi.instant import InstantTime

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
AMOUNT, NOTE = "amount", "note"
_PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)  # no slots: cached_property needs an instance __dict__
class RowSchema:
    """The columns of one synthetic table.

    Args:
        table_name: `hoodie.table.name`; names the Avro record as Hudi does (`hoodie.<t>.<t>_record`).
        record_key: the record key column (a long).
        partition_field: the partition column (a string), or None for a non-partitioned table.
        ordering_field: the precombine/ordering column (a long).
    """

    table_name: str
    record_key: str
    partition_field: str | None
    ordering_field: str

    @cached_property
    def data_fields(self) -> tuple[tuple[str, pa.DataType], ...]:
        partition = ((self.partition_field, pa.string()),) if self.partition_field else ()
        key, ordering = (self.record_key, pa.int64()), (self.ordering_field, pa.int64())
        return (key, *partition, ordering, (AMOUNT, pa.float64()), (NOTE, pa.string()))

    @cached_property
    def arrow(self) -> pa.Schema:
        """Meta columns then data columns, all nullable, as Hudi's Avro-to-Parquet writer lays them out."""
        return pa.schema([(c, pa.string()) for c in META_COLUMNS] + list(self.data_fields))

    def avro_json(self, *, with_meta: bool) -> str:
        """The Avro schema Hudi records: in commit metadata (`extraMetadata.schema`, data columns
        only) and in Parquet footers and log block headers (with the meta columns)."""
        names = {pa.int64(): "long", pa.float64(): "double", pa.string(): "string"}
        fields = [(c, "string") for c in META_COLUMNS] if with_meta else []
        fields += [(name, names[kind]) for name, kind in self.data_fields]
        return json.dumps({
            "type": "record",
            "name": f"{self.table_name}_record",
            "namespace": f"hoodie.{self.table_name}",
            "fields": [{"name": n, "type": ["null", t], "default": None} for n, t in fields],
        }, separators=(",", ":"))

    @cached_property
    def empty_parquet(self) -> bytes:
        """A valid zero-row Parquet file with this schema: the payload of tiny-mode base files."""
        return parquet_bytes(self, self.arrow.empty_table())


def new_rows(
    schema: RowSchema,
    *,
    ids: range,
    partition: str,
    instant: str,
    file_name: str,
    task: int,
    seed: int,
    note_bytes: int,
) -> pa.Table:
    """Rows inserted into a new file group by the writer task `task` of `instant`."""
    count = len(ids)
    rng = random.Random(f"{seed}/{instant}/{file_name}")
    columns: dict[str, list[object]] = {
        "_hoodie_commit_time": [instant] * count,
        "_hoodie_commit_seqno": [f"{instant}_{task}_{i}" for i in range(count)],
        "_hoodie_record_key": [str(i) for i in ids],
        "_hoodie_partition_path": [partition] * count,
        "_hoodie_file_name": [file_name] * count,
        schema.record_key: list(ids),
    }
    if schema.partition_field:
        columns[schema.partition_field] = [partition_value(partition)] * count
    columns[schema.ordering_field] = [epoch_millis(instant)] * count
    columns[AMOUNT] = [round(rng.uniform(1, 1000), 2) for _ in range(count)]
    columns[NOTE] = [_note(i, note_bytes) for i in ids]
    return pa.Table.from_pydict(columns, schema=schema.arrow)


def updated_rows(
    schema: RowSchema, rows: pa.Table, *, instant: str, file_name: str, task: int, seed: int
) -> pa.Table:
    """Every row of `rows` updated by `instant`: a new amount and ordering value, new commit time
    and sequence number, and the file that now holds it."""
    count = rows.num_rows
    rng = random.Random(f"{seed}/{instant}/{file_name}")
    replaced = {
        "_hoodie_commit_time": pa.array([instant] * count, pa.string()),
        "_hoodie_commit_seqno": pa.array([f"{instant}_{task}_{i}" for i in range(count)], pa.string()),
        "_hoodie_file_name": pa.array([file_name] * count, pa.string()),
        schema.ordering_field: pa.array([epoch_millis(instant)] * count, pa.int64()),
        AMOUNT: pa.array([round(rng.uniform(1, 1000), 2) for _ in range(count)], pa.float64()),
    }
    return _replace_columns(rows, replaced)


def moved_rows(rows: pa.Table, *, file_name: str) -> pa.Table:
    """The same records rewritten into another file (compaction, clustering): only the file name changes."""
    return _replace_columns(rows, {"_hoodie_file_name": pa.array([file_name] * rows.num_rows, pa.string())})


def _replace_columns(rows: pa.Table, replaced: dict[str, pa.Array]) -> pa.Table:
    for name, values in replaced.items():
        rows = rows.set_column(rows.schema.get_field_index(name), name, values)
    return rows


def parquet_bytes(schema: RowSchema, rows: pa.Table) -> bytes:
    """Rows as one Parquet file, with the key-range footer entries Hudi's writer adds.

    The `note` padding column is stored uncompressed, without dictionary or statistics, so its
    length translates directly into bytes on disk. Hudi's bloom filter footer is not written.
    """
    sink = pa.BufferOutputStream()
    metadata = {
        "parquet.avro.schema": schema.avro_json(with_meta=True),
        "writer.model.name": "avro",
    }
    metadata |= footer.range_footer(footer.key_range(rows.column("_hoodie_record_key")))
    table = rows.replace_schema_metadata(metadata)
    others = [c for c in rows.column_names if c != NOTE]
    compression = {c: "snappy" for c in others} | {NOTE: "none"}
    pq.write_table(
        table, sink, compression=compression, use_dictionary=others, write_statistics=others,
    )
    return bytes(sink.getvalue().to_pybytes())


def write_padded(path: str, payload: bytes, size: int) -> int:
    """Write a Parquet `payload` that has no row groups, padded to `size` bytes.

    A footer without row groups points at no offsets, so a hole between the leading magic and the
    footer keeps the file valid; the hole is sparse on local disks, so large tiny-mode files cost
    no I/O. Returns the size written.
    """
    if not payload.startswith(_PARQUET_MAGIC):
        raise ValueError("write_padded expects a Parquet file")
    pad = max(0, size - len(payload))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.pwrite(fd, payload[len(_PARQUET_MAGIC):], len(_PARQUET_MAGIC) + pad)
        os.pwrite(fd, _PARQUET_MAGIC, 0)
    finally:
        os.close(fd)
    return len(payload) + pad


def unshare(path: str) -> None:
    """Replace a hard link by a file of its own with the same bytes: its data extents copied (a
    tiny-mode file is a few KiB of data around a hole), the holes left holes.

    A table copied as hard links (`cp -al`, seconds for 100,000 files, where a byte copy of their
    holes takes many minutes) can then have some files allocated (`allocate_blocks`) and deleted
    without touching the original's.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        extents = []
        at = 0
        while at < size:
            try:
                start = os.lseek(fd, at, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            extents.append((start, os.pread(fd, end - start, start)))
            at = end
    finally:
        os.close(fd)
    fresh = f"{path}.unshared"
    out = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.ftruncate(out, size)
        for start, data in extents:
            os.pwrite(out, data, start)
    finally:
        os.close(out)
    os.replace(fresh, path)


def allocate_blocks(path: str) -> int:
    """Give a file real disk blocks over its whole length without writing data; returns the bytes
    allocated (`st_blocks`).

    A tiny-mode file is a sparse hole, and unlinking a hole frees nothing, whereas deleting a real
    table's file frees its extents: `posix_fallocate` reserves them (ext4 marks them unwritten, so
    the hole still reads as zeros and the file's size and content stay as they are) in a fraction
    of the time writing them would take.

    Raises:
        OSError: the file system cannot allocate (out of space), or left part of the file a hole.
    """
    fd = os.open(path, os.O_WRONLY)
    try:
        size = os.fstat(fd).st_size
        if size:  # a length of 0 is an error to posix_fallocate, and there is nothing to allocate
            os.posix_fallocate(fd, 0, size)
        allocated = os.fstat(fd).st_blocks * 512
    finally:
        os.close(fd)
    if allocated < size:
        raise OSError(f"{path}: allocated {allocated} bytes of blocks for a file of {size} bytes; expected all of it")
    return allocated


def partition_value(partition: str) -> str:
    """The partition column's value: the text after `field=` for hive-style paths."""
    last = partition.rsplit("/", 1)[-1]
    return last.split("=", 1)[1] if "=" in last else last


def epoch_millis(instant: str) -> int:
    """The instant's wall-clock time in epoch milliseconds (instants are in the local timezone)."""
    return int(InstantTime(instant).to_datetime().timestamp() * 1000)


def _note(record: int, length: int) -> str:
    if length <= 0:
        return ""
    stem = f"record {record} "
    return (stem * (length // len(stem) + 1))[:length]
