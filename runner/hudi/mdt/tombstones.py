"""A clean's index tombstones as whole arrays, laid out as HFile cells (pure).

A clean of 100,000 files on a table with 16 indexed columns writes 1.6 million column-stats
tombstones, so anything done per tombstone in Python (microseconds each) costs seconds. The
records are regular, though:
- every key is `column id + partition id + file id` (12 + 12 + 24 ASCII characters; bloom-filter
  keys have no column id), so a key is a row of a byte matrix built from per-column and per-file
  rows, and its Java hash (the shard) combines the hash of the column id with that of the rest;
- keys sort by column id, then partition and file, so sorting means ordering the columns (a few)
  and the files (one argsort), and each shard's cells come as one run per column;
- every value is one encoded record but for the file name and the column, so a cell is
  `lengths + column id + [partition id + file id + key suffix + value head + file name] + value
  tail + 0`, where the bracket is one per-file row and the rest is the same for a whole column.

The cells are the bytes the per-record path gives (`keys.column_stats_key`,
`records.encode_record`, `hfile.CellRun.from_pairs`); tests/mdt/test_tombstones.py compares them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from runner.errors import RefusedError
from runner.hudi.mdt import keys
from runner.hudi.mdt.hfile import CELL_PREFIX, KEY_SUFFIX, Cells
from runner.hudi.mdt.records import avro_length

# partition id (12) + file id (24): the part of a key each deleted file contributes
_TAIL = 36
_PER_FILE = _TAIL + len(KEY_SUFFIX)  # ... followed by the key suffix, then the file's value part
_POWER = pow(31, _TAIL, 1 << 32)  # Java hash: h(head + tail) = h(head) * 31**len(tail) + h(tail)


class IndexTombstones(Mapping[str, bytes]):
    """One tombstone per (column, deleted file): key `key head + partition id + file id`, value
    `name_prefix + Avro string of the file name + value tail` (no name without a `name_prefix`).

    `files`: (MDT partition name, deleted file names) per data partition; `columns`: (key head,
    value tail) per indexed column, the key heads ASCII and all of one length (a 12-character
    column id, or "" for bloom filters). As a Mapping it is the per-record view (built on first
    use); the writer takes `runs` instead.
    """

    def __init__(
        self,
        files: Sequence[tuple[str, Sequence[str]]],
        columns: Sequence[tuple[str, bytes]],
        *,
        name_prefix: bytes | None,
    ) -> None:
        names: list[str] = []
        counts: list[int] = []
        for _partition, file_names in files:
            unique = list(dict.fromkeys(file_names))  # a file listed twice is one tombstone, as in a dict
            names += unique
            counts.append(len(unique))
        self._columns = sorted(dict(columns).items())  # key order: column id first
        head_lengths = {len(head) for head, _ in self._columns}
        if len(head_lengths) > 1 or not all(head.isascii() for head, _ in self._columns):
            raise ValueError(f"index key heads must be ASCII and of one length, found {sorted(head_lengths)}")
        self._head_length = head_lengths.pop() if head_lengths else 0
        encoded = [name.encode("utf-8") for name in names]
        tails = np.empty((len(names), _TAIL), np.uint8)
        partition_ids = "".join(keys.name_id(partition) for partition, _ in files).encode("ascii")
        tails[:, :12] = np.repeat(np.frombuffer(partition_ids, np.uint8).reshape(-1, 12), counts, axis=0)
        tails[:, 12:] = keys.file_id_rows(encoded)
        self._tails = tails
        self._order = _sorted_unique_rows(tails, files, counts)
        self._tail_hashes = keys.java_hash_rows(tails)
        self._rows, self._row_lengths = _file_rows(tails, encoded, name_prefix)
        self._value_lengths = self._row_lengths - _PER_FILE
        self._fixed = len(names) > 0 and int(self._row_lengths.min()) == int(self._row_lengths.max())
        self._records: dict[str, bytes] | None = None

    def runs(self, file_groups: int) -> list[Cells]:
        """The cells of each file group (shard), in key order."""
        segments: list[list[tuple[int, npt.NDArray[np.int64]]]] = [[] for _ in range(file_groups)]
        for c, (head, _) in enumerate(self._columns):
            if file_groups == 1:
                segments[0].append((c, self._order))
                continue
            head_hash = (keys.java_string_hash(head) & 0xFFFFFFFF) * _POWER & 0xFFFFFFFF
            hashes = self._tail_hashes[self._order] + np.uint32(head_hash)  # wraps, as Java's int does
            shard_ids = keys.shard_of_hashes(hashes, file_groups)
            by_shard = np.argsort(shard_ids, kind="stable")  # keeps key order within a shard
            bounds = np.searchsorted(shard_ids[by_shard], np.arange(file_groups + 1))
            for g in range(file_groups):
                segments[g].append((c, self._order[by_shard[bounds[g] : bounds[g + 1]]]))
        return [_ShardCells(self, [(c, rows) for c, rows in group if len(rows)]) for group in segments]

    def cell_sizes(self, c: int, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        sizes: npt.NDArray[np.int64] = self._row_lengths[rows] + (
            CELL_PREFIX + self._head_length + len(self._columns[c][1]) + 1
        )
        return sizes

    def key(self, c: int, file: int) -> bytes:
        return self._columns[c][0].encode("ascii") + bytes(self._tails[file])

    def value_bytes(self, c: int, rows: npt.NDArray[np.int64]) -> int:
        return int(self._value_lengths[rows].sum()) + len(rows) * len(self._columns[c][1])

    def lay_out(self, out: npt.NDArray[np.uint8], c: int, rows: npt.NDArray[np.int64]) -> None:
        """Write the cells of column `c` for files `rows` into `out`, back to back.

        When every per-file row has one length (file names of one length, the usual case) the
        cells are the rows of a matrix written in place; otherwise they are padded rows, and a
        mask drops the padding (numpy's boolean indexing keeps row order).
        """
        head, value_tail = self._columns[c]
        at = CELL_PREFIX + len(head)
        width = self._rows.shape[1]
        closing = np.frombuffer(value_tail + b"\x00", np.uint8)
        count = len(rows)
        cells = out.reshape(count, -1) if self._fixed else np.empty((count, at + width + len(closing)), np.uint8)
        row_length = self._head_length + _TAIL
        cells[:, 0:4] = np.frombuffer(struct.pack(">I", row_length + 12), np.uint8)
        value_lengths = self._value_lengths[rows] + len(value_tail)
        cells[:, 4:8] = value_lengths.astype(">u4").view(np.uint8).reshape(count, 4)
        cells[:, 8:10] = np.frombuffer(struct.pack(">H", row_length), np.uint8)
        cells[:, CELL_PREFIX:at] = np.frombuffer(head.encode("ascii"), np.uint8)
        cells[:, at : at + width] = np.take(self._rows, rows, axis=0)
        cells[:, at + width :] = closing
        if not self._fixed:
            keep = np.ones(cells.shape, bool)
            keep[:, at : at + width] = np.arange(width) < self._row_lengths[rows, None]
            out[:] = cells[keep]

    # --- the per-record view -------------------------------------------------------------------

    def _as_dict(self) -> dict[str, bytes]:
        if self._records is None:
            tails = [row.tobytes().decode("ascii") for row in self._tails]
            parts = [row[_PER_FILE:length].tobytes() for row, length in zip(self._rows, self._row_lengths, strict=True)]
            self._records = {
                head + tail: part + value_tail
                for head, value_tail in self._columns
                for tail, part in zip(tails, parts, strict=True)
            }
        return self._records

    def __getitem__(self, key: str) -> bytes:
        return self._as_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self._columns) * len(self._tails)


class LaterTombstones(Mapping[str, bytes]):
    """Index tombstones built only if something asks for them: a clean's, encoded ahead in another
    process (`runner.hudi.mdt.ahead`), are needed again only if the MDT partition's file groups
    changed since, so the driver does not build them beside work already done."""

    def __init__(self, build: Callable[[], Mapping[str, bytes]]) -> None:
        self._build = build
        self._built: Mapping[str, bytes] | None = None

    def built(self) -> Mapping[str, bytes]:
        if self._built is None:
            self._built = self._build()
        return self._built

    def __getitem__(self, key: str) -> bytes:
        return self.built()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.built())

    def __len__(self) -> int:
        return len(self.built())


class _ShardCells(Cells):
    """One file group's tombstones: per column in key order (a segment), that shard's files in key
    order; laid out range by range as the HFile writer cuts blocks."""

    def __init__(self, tombstones: IndexTombstones, segments: list[tuple[int, npt.NDArray[np.int64]]]) -> None:
        self._t = tombstones
        self._segments = segments
        sizes = [tombstones.cell_sizes(c, rows) for c, rows in segments]
        self.ends = np.cumsum(np.concatenate(sizes)) if sizes else np.zeros(0, np.int64)
        self._firsts = np.cumsum([0] + [len(rows) for _, rows in segments])  # first cell of each segment

    def _segment_of(self, i: int) -> int:
        return int(np.searchsorted(self._firsts, i, side="right")) - 1

    def row(self, i: int) -> bytes:
        s = self._segment_of(i)
        c, rows = self._segments[s]
        return self._t.key(c, int(rows[i - self._firsts[s]]))

    def row_and_value_bytes(self) -> tuple[int, int]:
        values = sum(self._t.value_bytes(c, rows) for c, rows in self._segments)
        return len(self) * (self._t._head_length + _TAIL), values

    def lay_out(self, first: int, end: int) -> memoryview:
        out = np.empty(self.start(end) - self.start(first), np.uint8)
        pos = 0
        for s in range(self._segment_of(first), len(self._segments)):
            if self._firsts[s] >= end:
                break
            c, rows = self._segments[s]
            part = rows[max(first - self._firsts[s], 0) : end - self._firsts[s]]
            if len(part):
                size = int(self._t.cell_sizes(c, part).sum())
                self._t.lay_out(out[pos : pos + size], c, part)
                pos += size
        return out.data


def _file_rows(
    tails: npt.NDArray[np.uint8], names: list[bytes], name_prefix: bytes | None
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Per file: key tail + KEY_SUFFIX + name_prefix + Avro string of the name, as rows padded to
    the longest, and each row's length."""
    count = len(names)
    if name_prefix is None:
        rows = np.empty((count, _PER_FILE), np.uint8)
        rows[:, :_TAIL] = tails
        rows[:, _TAIL:] = np.frombuffer(KEY_SUFFIX, np.uint8)
        return rows, np.full(count, _PER_FILE, np.int64)
    name_lengths = np.fromiter(map(len, names), np.int64, count)
    # An Avro string is a zig-zag varint length then the bytes; names share a handful of lengths.
    unique_lengths, which = np.unique(name_lengths, return_inverse=True)
    varints = [avro_length(int(n)) for n in unique_lengths]
    varint_lengths = np.array([len(v) for v in varints], np.int64)[which]
    widest_varint = int(varint_lengths.max()) if count else 0
    widest_name = int(name_lengths.max()) if count else 0
    pieces = np.zeros((count, widest_varint + widest_name), np.uint8)
    varint_rows = np.zeros((len(varints), widest_varint), np.uint8)
    for i, v in enumerate(varints):
        varint_rows[i, : len(v)] = np.frombuffer(v, np.uint8)
    pieces[:, :widest_varint] = varint_rows[which]
    pieces[:, widest_varint:][np.arange(widest_name) < name_lengths[:, None]] = np.frombuffer(b"".join(names), np.uint8)
    keep = np.concatenate(
        (np.arange(widest_varint) < varint_lengths[:, None], np.arange(widest_name) < name_lengths[:, None]), axis=1
    )
    string_lengths = varint_lengths + name_lengths
    fixed = _PER_FILE + len(name_prefix)
    rows = np.zeros((count, fixed + int(string_lengths.max(initial=0))), np.uint8)
    rows[:, :_TAIL] = tails
    rows[:, _TAIL:_PER_FILE] = np.frombuffer(KEY_SUFFIX, np.uint8)
    rows[:, _PER_FILE:fixed] = np.frombuffer(name_prefix, np.uint8)
    rows[:, fixed:][np.arange(rows.shape[1] - fixed) < string_lengths[:, None]] = pieces[keep]
    return rows, string_lengths + fixed


def _sorted_unique_rows(
    tails: npt.NDArray[np.uint8], files: Sequence[tuple[str, Sequence[str]]], counts: list[int]
) -> npt.NDArray[np.int64]:
    """The files in key order (their tails compared as bytes); two files with one key refused."""
    as_bytes = np.ascontiguousarray(tails).view(f"S{_TAIL}").ravel()
    order: npt.NDArray[np.int64] = np.argsort(as_bytes, kind="stable")
    ordered = as_bytes[order]
    clashes = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(clashes):
        owner = int(np.searchsorted(np.cumsum(counts), order[clashes[0]], side="right"))
        partition = files[owner][0] if owner < len(files) else "?"
        raise RefusedError(
            f"metadata-table partition {partition!r}: two deleted files map to one index key "
            f"{ordered[clashes[0]].decode()!r} (an MD5 or XXHash64 collision); the runner cannot record this clean",
            hint="set `metadata_table: disable` for this table, or let Hudi clean it.",
        )
    return order
