"""Keeping a table's metadata table in step with the runner's cleans: checks, then one hook.

`prepare_clean_maintenance` reads the MDT once (under the table lock, before anything is written),
refuses when it is not safe to extend, and returns the hook the clean runner calls after the
deletes and before the data clean completes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from runner.errors import RefusedError, StorageError
from runner.hudi.instant import InstantTime
from runner.hudi.mdt.actions import COLUMN_STATS, clean_commit, unsupported_partitions
from runner.hudi.mdt.check import consistency_problems
from runner.hudi.mdt.reader import MetadataTable, read_files_listing, read_metadata_table
from runner.hudi.mdt.writer import write_mdt_commit
from runner.hudi.metadata import CleanMetadata
from runner.hudi.state import TableMetadata
from runner.storage import Storage

INDEX_DEFS_KEY = "hoodie.table.index.defs.path"
DEFAULT_INDEX_DEFS = ".hoodie/.index_defs/index.json"

@dataclass(frozen=True, slots=True)
class CleanMaintenance:
    """What the clean hook needs, read once: the MDT, its record schema and indexed columns."""

    storage: Storage
    mdt: MetadataTable
    partitions: tuple[str, ...]
    schema: str
    stats_columns: tuple[str, ...]
    step: Callable[[str], None] = lambda _: None

    def __call__(self, instant: InstantTime, clean: CleanMetadata, completion_time: Callable[[], InstantTime]) -> list[str]:
        commit = clean_commit(str(instant), clean, mdt_partitions=self.partitions, stats_columns=self.stats_columns,
                              schema=self.schema)
        mdt = read_metadata_table(self.storage)  # a retry may find its own pending instant
        return write_mdt_commit(self.storage, mdt, commit, schema=self.schema, completion_time=completion_time,
                                created_ms=int(time.time() * 1000), step=self.step)


def refusal_reasons(storage: Storage, data: TableMetadata, *, resuming: frozenset[str] = frozenset()) -> list[str]:
    """Why the runner must not write to this table's MDT now (empty when it may).

    `resuming` are data instants the runner itself is about to finish (pending cleans): their own
    pending or completed MDT deltacommit is the runner's interrupted work, not a foreign failure.
    """
    if data.config.version < 8:
        return [f"the table has version {data.config.version}; the runner maintains metadata tables "
                "only for table versions 8 and 9"]
    if "files" not in data.config.metadata_partitions:
        return ["hoodie.table.metadata.partitions does not list `files`, so readers do not use this "
                "metadata table; the runner will not write to it"]
    mdt = read_metadata_table(storage)
    reasons = consistency_problems(data, mdt, resuming=resuming)
    missing = unsupported_partitions(data.config.metadata_partitions)
    if missing:
        reasons.append(f"the runner cannot update the metadata partitions {', '.join(missing)} for a clean")
    return reasons


def prepare_clean_maintenance(storage: Storage, data: TableMetadata, *, resuming: frozenset[str] = frozenset(),
                              step: Callable[[str], None] = lambda _: None) -> CleanMaintenance:
    """Check the MDT and read what every clean hook call needs; raises RefusedError with the reasons."""
    reasons = refusal_reasons(storage, data, resuming=resuming)
    if reasons:
        raise RefusedError(
            f"{storage.uri}: the runner will not clean this table while keeping its metadata table, because "
            + "; ".join(reasons),
            hint="run a Hudi write or `hudi-cli metadata` to let Hudi settle its metadata table, or set "
            "`metadata_table: disable` to remove it (readers then list files; indexes are lost).",
        )
    mdt = read_metadata_table(storage)
    schema = read_files_listing(storage, data, mdt).schema
    if not schema:
        raise RefusedError(f"{storage.uri}: the metadata table's files partition has no record schema to write with")
    columns = _stats_columns(storage, data) if COLUMN_STATS in data.config.metadata_partitions else ()
    return CleanMaintenance(storage, mdt, data.config.metadata_partitions, schema, columns, step)


def _stats_columns(storage: Storage, data: TableMetadata) -> tuple[str, ...]:
    """Columns of the column_stats index, from the table's index definitions (Hudi 1.x)."""
    path = data.config.raw.get(INDEX_DEFS_KEY) or DEFAULT_INDEX_DEFS
    try:
        definitions = json.loads(storage.read(path))["indexDefinitions"]
        fields = definitions[COLUMN_STATS]["sourceFields"]
    except (StorageError, ValueError, KeyError, TypeError) as error:
        raise RefusedError(
            f"{storage.uri}/{path}: cannot tell which columns the column_stats index covers "
            f"(expected indexDefinitions.column_stats.sourceFields): {error}",
            hint="set `metadata_table: disable`, or let Hudi rewrite its index definitions.",
        ) from error
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise RefusedError(f"{storage.uri}/{path}: indexDefinitions.column_stats.sourceFields is not a list of names")
    return tuple(fields)
