"""What a `TableBuilder` has written, and what a correct Hudi reader must therefore see.

The builder records every committed write per file group. From that record this module answers the
questions tests ask a reader: which file slice of each group is the latest as of an instant, and
which rows a snapshot or time-travel query returns. The rules are Hudi's: a file group appears from
the instant that created it; a completed replacecommit (insert_overwrite, delete_partition,
clustering) removes the groups it replaced from every view at or after its requested time; the
slice read as of `t` is the one with the greatest base instant `<= t`. Writes that never completed
are not recorded here at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from runner.hudi.files import relative_path
from runner.hudi.instant import Action, InstantTime


@dataclass(frozen=True, slots=True)
class SyntheticFile:
    """A data file the builder wrote: a base file or a log file, with its size on disk."""

    partition: str
    file_id: str
    name: str
    size: int

    @property
    def path(self) -> str:
        """Relative to the table's base path, as Hudi records it in write stats."""
        return relative_path(self.partition, self.name)


@dataclass(frozen=True, slots=True)
class ExpectedSlice:
    """One file slice as a reader lists it (hudi-rs `HudiFileSlice`).

    Args:
        partition: relative partition path, `""` for a non-partitioned table.
        file_id: the file group.
        base_instant: the instant that wrote the base file.
        base_file: the base file name.
        log_files: names of the log files on top of it, sorted.
    """

    partition: str
    file_id: str
    base_instant: str
    base_file: str
    log_files: tuple[str, ...] = ()

    @property
    def file_names(self) -> tuple[str, ...]:
        return (self.base_file, *self.log_files)


@dataclass(slots=True)
class Slice:
    """A committed base file and the committed log files appended to it (by writing instant)."""

    base_instant: InstantTime
    base: SyntheticFile
    logs: list[tuple[InstantTime, SyntheticFile]] = field(default_factory=list)


@dataclass(slots=True)
class Group:
    """A file group's committed history. Mutable: only the builder appends to it.

    Args:
        created: the instant that created the group.
        slices: committed slices, oldest first.
        history: the group's full row set after each committed write that touched it, as
            `(instant, rows, row count)`; rows are None for tiny-mode tables.
        replaced_at: requested time of the completed replacecommit that replaced the group.
        pending: `Action.COMPACTION` or `Action.CLUSTERING` while a pending plan includes the group.
    """

    partition: str
    file_id: str
    created: InstantTime
    slices: list[Slice] = field(default_factory=list)
    history: list[tuple[InstantTime, pa.Table | None, int]] = field(default_factory=list)
    replaced_at: InstantTime | None = None
    pending: Action | None = None

    @property
    def is_live(self) -> bool:
        return self.replaced_at is None

    @property
    def current(self) -> tuple[pa.Table | None, int]:
        _, rows, count = self.history[-1]
        return rows, count

    def visible_at(self, as_of: InstantTime | None) -> bool:
        """True if a query as of `as_of` (None: latest) sees this group."""
        if as_of is None:
            return self.replaced_at is None
        return self.created <= as_of and (self.replaced_at is None or self.replaced_at > as_of)

    def slice_at(self, as_of: InstantTime | None) -> Slice:
        if as_of is None:
            return self.slices[-1]
        return [s for s in self.slices if s.base_instant <= as_of][-1]

    def rows_at(self, as_of: InstantTime | None) -> pa.Table | None:
        if as_of is None:
            return self.history[-1][1]
        return [rows for t, rows, _ in self.history if t <= as_of][-1]


def expected_slices(groups: list[Group], as_of: InstantTime | None = None) -> list[ExpectedSlice]:
    """The slice of every visible group as of `as_of` (latest when None), sorted by partition and id.

    Log files are those committed at or before `as_of` (hudi-rs lists later ones too in a time-travel
    listing and skips their blocks when reading; see docs/hudi-rs-reader.md §4.1).
    """
    result = []
    for group in groups:
        if not group.visible_at(as_of):
            continue
        piece = group.slice_at(as_of)
        logs = sorted(f.name for t, f in piece.logs if as_of is None or t <= as_of)
        result.append(
            ExpectedSlice(group.partition, group.file_id, piece.base_instant, piece.base.name, tuple(logs))
        )
    return sorted(result, key=lambda s: (s.partition, s.file_id))


def expected_rows(
    groups: list[Group], schema: pa.Schema, record_key: str, as_of: InstantTime | None = None
) -> pa.Table:
    """Every row a snapshot query as of `as_of` returns, sorted by record key.

    Raises:
        ValueError: the table was built in tiny mode, whose files hold no rows.
    """
    tables = []
    for group in groups:
        if group.visible_at(as_of):
            rows = group.rows_at(as_of)
            if rows is None:
                raise ValueError("tiny-mode tables hold no rows: their base files are empty Parquet files")
            tables.append(rows)
    if not tables:
        return schema.empty_table()
    table = pa.concat_tables(tables)
    return table.sort_by([(record_key, "ascending")])
