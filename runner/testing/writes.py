"""The data files of one synthetic write operation, and their write stats.

A `WriteSet` writes files as soon as they are planned, the way Hudi's tasks write them before the
instant completes; it records them in the builder's history only on `commit()`, so the files of a
failed write are on disk but in no view.

What each kind of write produces:

* insert: a new file group whose first base file holds new records (`prevCommit` "null");
* update, copy-on-write: a new base file of the group with every record updated (`prevCommit` =
  the base instant of the slice it merged);
* update, merge-on-read: a log file on the latest slice with one Parquet data block of the updated
  records. Table version 6 names it after the slice's base instant with the next log version;
  version 8 after the writing instant, version 1;
* compaction: a new base file holding the merged slice;
* clustering: one new group holding every record of its input groups.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import pyarrow as pa

from runner.hudi.instant import InstantTime
from runner.hudi.metadata import ClusteringSlice, WriteStat
from runner.testing import data, layout
from runner.testing.expected import Group, Slice, SyntheticFile

if TYPE_CHECKING:
    from runner.testing.tables import TableBuilder


@dataclass(frozen=True, slots=True)
class Write:
    """One data file written by an operation.

    Args:
        kind: `insert` (new group), `base` (new base file of an existing group) or `log`.
        rows: the group's full row set after this write (None in tiny mode).
        count: records in the group after the write.
        written: records in the file itself (a log block holds only the updated ones).
        prev: base instant of the slice written on; None for a new group.
    """

    kind: str
    group: Group
    file: SyntheticFile
    rows: pa.Table | None
    count: int
    written: int
    prev: InstantTime | None


class WriteSet:
    """The files one instant writes, in task order."""

    def __init__(self, builder: TableBuilder, t: InstantTime) -> None:
        self._b = builder
        self._t = t
        self.writes: list[Write] = []

    def insert(self, partition: str, groups: int, rows: int, file_bytes: int | None) -> None:
        """`groups` new file groups of `rows` records each."""
        note = 0 if self._b.tiny or not file_bytes else _note_length(self._b.schema, rows, file_bytes)
        for _ in range(groups):
            group = self._b.new_group(partition, self._t)
            ids = self._b.next_records(rows)

            def make(name: str, task: int, ids: range = ids) -> pa.Table:
                return data.new_rows(
                    self._b.schema, ids=ids, partition=partition, instant=self._t, file_name=name,
                    task=task, seed=self._b.seed, note_bytes=note,
                )

            file, table = self._base(group, make, file_bytes or 0)
            self.writes.append(Write("insert", group, file, table, rows, rows, None))

    def update(self, groups: list[Group], *, log: bool) -> None:
        """Update every record of each group: a new base file, or a log file when `log`."""
        for group in groups:
            old, count = group.current
            prev = group.slices[-1].base_instant

            def make(name: str, task: int, old: pa.Table | None = old) -> pa.Table:
                assert old is not None
                return data.updated_rows(
                    self._b.schema, old, instant=self._t, file_name=name, task=task, seed=self._b.seed
                )

            if log:
                file, table = self._log(group, make)
            else:
                file, table = self._base(group, make, group.slices[-1].base.size)
            self.writes.append(Write("log" if log else "base", group, file, table, count, count, prev))

    def compact(self, groups: list[Group]) -> None:
        """Rewrite each group's latest slice (base plus logs) into a new base file."""
        for group in groups:
            rows, count = group.current
            file, table = self._base(group, _mover(rows), group.slices[-1].base.size)
            self.writes.append(Write("base", group, file, table, count, count, group.slices[-1].base_instant))

    def merge(self, partition: str, inputs: list[Group]) -> None:
        """Cluster `inputs` into one new group holding all their records."""
        tables = [g.current[0] for g in inputs]
        count = sum(g.current[1] for g in inputs)
        merged = None if self._b.tiny else pa.concat_tables([t for t in tables if t is not None])
        size = sum(g.slices[-1].base.size for g in inputs)
        group = self._b.new_group(partition, self._t)
        file, table = self._base(group, _mover(merged), size)
        self.writes.append(Write("insert", group, file, table, count, count, None))

    def stats(self) -> dict[str, tuple[WriteStat, ...]]:
        """Write stats by partition, in task order; a log append also names its log version, the
        slice's base file and the log file (`HoodieDeltaWriteStat`)."""
        result: dict[str, list[WriteStat]] = {}
        for w in self.writes:
            inserts = w.written if w.kind == "insert" else 0
            log = w.kind == "log"
            result.setdefault(w.group.partition, []).append(WriteStat(
                partition_path=w.group.partition, file_id=w.group.file_id, path=w.file.path,
                prev_commit=w.prev, num_writes=w.written, num_inserts=inserts,
                num_update_writes=w.written - inserts, total_write_bytes=w.file.size,
                file_size_in_bytes=w.file.size,
                log_version=_log_version(w.file.name) if log else None,
                log_offset=0 if log else None,
                base_file=w.group.slices[-1].base.name if log else None,
                log_files=(w.file.name,) if log else (),
            ))
        return {partition: tuple(stats) for partition, stats in result.items()}

    def commit(self) -> None:
        """Record every write in its group's history: the instant completed."""
        for w in self.writes:
            if w.kind == "insert":
                self._b.add_group(w.group)
            if w.kind == "log":
                w.group.slices[-1].logs.append((self._t, w.file))
            else:
                w.group.slices.append(Slice(self._t, w.file))
            w.group.history.append((self._t, w.rows, w.count))

    def _base(
        self, group: Group, make: Callable[[str, int], pa.Table | None], tiny_size: int
    ) -> tuple[SyntheticFile, pa.Table | None]:
        task = len(self.writes)
        name = f"{group.file_id}_{self._b.files.next_token(task)}_{self._t}.parquet"
        relative = _relative(group.partition, name)
        self._b.files.ensure_partition(group.partition, self._t)
        if self._b.tiny:
            target = os.path.join(self._b.path, relative)
            size = data.write_padded(target, self._b.schema.empty_parquet, tiny_size)
            return SyntheticFile(group.partition, group.file_id, name, size), None
        table = make(name, task)
        assert table is not None
        payload = data.parquet_bytes(self._b.schema, table)
        self._b.files.put(relative, payload)
        return SyntheticFile(group.partition, group.file_id, name, len(payload)), table

    def _log(
        self, group: Group, make: Callable[[str, int], pa.Table]
    ) -> tuple[SyntheticFile, pa.Table | None]:
        task = len(self.writes)
        piece = group.slices[-1]
        if self._b.files.layout == 1:
            stem, version = piece.base_instant, len(piece.logs) + 1
        else:
            stem, version = self._t, 1
        name = f".{group.file_id}_{stem}.log.{version}_{self._b.files.next_token(task)}"
        # Log records name their file group, not a file, in `_hoodie_file_name`.
        table = None if self._b.tiny else make(group.file_id, task)
        block_rows = self._b.schema.arrow.empty_table() if table is None else table
        payload = layout.parquet_log_block(
            instant=self._t, schema_json=self._b.schema.avro_json(with_meta=True),
            parquet=data.parquet_bytes(self._b.schema, block_rows),
        )
        self._b.files.put(_relative(group.partition, name), payload)
        return SyntheticFile(group.partition, group.file_id, name, len(payload)), table


def workload(
    inserts: Mapping[str, int], targets: Mapping[str, list[Group]], rows_per_file: int
) -> dict[str, tuple[WriteStat, ...]]:
    """Hudi's workload profile for the inflight file: inserted and updated record counts per
    partition, one entry per updated file group, without paths."""
    stats: dict[str, list[WriteStat]] = {}
    for partition, count in inserts.items():
        stats.setdefault(partition, []).append(
            WriteStat(partition, "", None, None, num_inserts=count * rows_per_file)
        )
    for partition, groups in targets.items():
        stats.setdefault(partition, []).extend(
            WriteStat(partition, g.file_id, None, g.slices[-1].base_instant, num_update_writes=g.current[1])
            for g in groups
        )
    return {partition: tuple(entries) for partition, entries in stats.items()}


def compaction_operation(group: Group) -> dict[str, object]:
    """A `HoodieCompactionOperation` for the group's latest slice: base and log file names."""
    piece = group.slices[-1]
    return {
        "baseInstantTime": piece.base_instant,
        "deltaFilePaths": [f.name for _, f in piece.logs],
        "dataFilePath": piece.base.name,
        "fileId": group.file_id,
        "partitionPath": group.partition,
        "metrics": {
            "TOTAL_LOG_FILES": float(len(piece.logs)),
            "TOTAL_LOG_FILES_SIZE": float(sum(f.size for _, f in piece.logs)),
        },
        "bootstrapFilePath": None,
    }


def clustering_slice(group: Group) -> ClusteringSlice:
    """The group's latest slice as an input of a clustering plan."""
    piece = group.slices[-1]
    logs = tuple(f.name for _, f in piece.logs)
    return ClusteringSlice(group.partition, group.file_id, piece.base.name, logs)


def _mover(rows: pa.Table | None) -> Callable[[str, int], pa.Table | None]:
    def move(name: str, task: int) -> pa.Table | None:
        return None if rows is None else data.moved_rows(rows, file_name=name)

    return move


def _relative(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


def _log_version(name: str) -> int:
    return int(name.split(".log.", 1)[1].split("_", 1)[0])


@lru_cache(maxsize=64)
def _note_length(schema: data.RowSchema, rows: int, file_bytes: int) -> int:
    """Characters of `note` per row that bring a file of `rows` records to about `file_bytes`."""
    sample = data.new_rows(
        schema, ids=range(1, rows + 1), partition="p", instant="20260101000000000", file_name="f",
        task=0, seed=0, note_bytes=0,
    )
    baseline = len(data.parquet_bytes(schema, sample))
    return max(0, (file_bytes - baseline) // max(rows, 1))
