"""`TableState`: everything the planners need about one table, read once, then immutable.

`read_table_state` is the only function on the read side that lists or reads files. It can list
every partition or only the ones a planner asked for (incremental cleaning), so that planning stays
a pure function of `(declaration, state, now)` while not listing a whole table it does not need.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from runner.errors import NotAHudiTableError, StorageError, TableError
from runner.hudi import timeline_metadata as tm
from runner.hudi.archived_timeline import archived_completion_times, history_folder
from runner.hudi.bucket_index import BUCKET_INDEX_FOLDER
from runner.hudi.files import FileGroup
from runner.hudi.instant import Action, Instant, InstantTime
from runner.hudi.metadata import (
    CleanMetadata,
    CleanPlan,
    CommitMetadata,
    CompactionOperation,
    SavepointMetadata,
)
from runner.hudi.pending_writes import NONE as NO_PENDING_WRITES
from runner.hudi.pending_writes import PendingWrites, read_pending_writes
from runner.hudi.properties import TableConfig, read_properties
from runner.hudi.schema_on_read import SCHEMA_HISTORY_FOLDER
from runner.hudi.timeline import Timeline
from runner.hudi.view import ListedFiles, build_file_groups, discover_partitions, list_partitions

if TYPE_CHECKING:  # annotations only: the Hudi model reads through whatever Storage it is given
    from runner.storage import Storage

HOODIE = ".hoodie"
PROPERTIES = f"{HOODIE}/hoodie.properties"
METADATA_TABLE = f"{HOODIE}/metadata"

FileGroupKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class TableMetadata:
    """Everything about a table that its timeline says, without listing any partition.

    Args:
        base_path: the table's root as given to the storage.
        config: hoodie.properties.
        timeline: the active timeline.
        timeline_folder: `.hoodie` (layout 1) or `.hoodie/timeline` (layout 2).
        commits: metadata of every completed commit, deltacommit and replacecommit, decoded on
            first access (`timeline_metadata.LazyCommits`).
        replaced: file group → requested time of the completed replacecommit that replaced it.
        compaction_plans: each pending compaction instant with its operations.
        pending_compaction: file group → base instant of its pending compaction operation.
        pending_log_compaction: the same for pending log compactions.
        pending_clustering: file groups that are inputs of a pending clustering plan.
        runner_pending_clustering: pending clustering instants this runner scheduled (a resize a
            crash interrupted); apply finishes them.
        savepoints: savepoint instant time → its metadata.
        last_clean: the latest completed clean with content, and its metadata.
        empty_completed_cleans: completed clean files with no content (Hudi deletes these).
        pending_cleans: requested or inflight cleans with their plans (None if the plan is empty).
        has_metadata_table: `.hoodie/metadata` exists (the folder; whether the metadata table is
            in use is `metadata_table_enabled`).
        pending_writes: what pending commits, deltacommits and overwrites may still change.
        has_bucket_index_folder: `.hoodie/.bucket_index` exists (a consistent-hashing bucket index
            keeps its buckets there; see `runner.hudi.bucket_index`).
        has_schema_history: `.hoodie/.schema` holds files (Hudi's schema-on-read history; see
            `runner.hudi.schema_on_read`).
    """

    base_path: str
    config: TableConfig
    timeline: Timeline
    timeline_folder: str
    commits: Mapping[InstantTime, CommitMetadata]
    replaced: Mapping[FileGroupKey, InstantTime]
    compaction_plans: Mapping[Instant, tuple[CompactionOperation, ...]]
    pending_compaction: Mapping[FileGroupKey, InstantTime]
    pending_log_compaction: Mapping[FileGroupKey, InstantTime]
    pending_clustering: frozenset[FileGroupKey]
    runner_pending_clustering: tuple[InstantTime, ...]
    savepoints: Mapping[InstantTime, SavepointMetadata]
    last_clean: tuple[Instant, CleanMetadata] | None
    empty_completed_cleans: tuple[Instant, ...]
    pending_cleans: tuple[tuple[Instant, CleanPlan | None], ...]
    has_metadata_table: bool
    pending_writes: PendingWrites = NO_PENDING_WRITES
    has_bucket_index_folder: bool = False
    has_schema_history: bool = False

    @property
    def savepointed_files(self) -> frozenset[str]:
        """File names listed by any completed savepoint."""
        return frozenset(
            name for meta in self.savepoints.values() for names in meta.partition_files.values() for name in names
        )

    @property
    def metadata_table_enabled(self) -> bool:
        """Whether readers may list this table's files through its metadata table (see
        `metadata_table_enabled`); every "is there a metadata table" decision asks this."""
        return metadata_table_enabled(folder_exists=self.has_metadata_table, config=self.config)


def metadata_table_enabled(*, folder_exists: bool, config: TableConfig) -> bool:
    """A metadata table a reader may use: `.hoodie/metadata` exists, or `hoodie.properties` lists
    built metadata partitions (`hoodie.table.metadata.partitions`, which Hudi's
    `HoodieTableConfig.isMetadataTableAvailable` reads). Either one alone is enough to refuse a
    change the metadata table would not see."""
    return folder_exists or bool(config.metadata_partitions)


@dataclass(frozen=True, slots=True)
class TableState:
    """A table's metadata plus the committed file groups of its listed partitions.

    Args:
        partitions: every partition (folders holding `.hoodie_partition_metadata`, never inside a
            nested table's folder) when `fully_listed`, else only those asked for that exist.
        file_groups: committed slices of every file group there, replaced groups included.
        uncommitted_files: data files (relative paths) of pending or failed writes: never deleted.
        unrecognized_files: files outside partitions or of unknown kinds: ignored, never deleted.
        crowded_partitions: partitions whose folder holds more than Hudi's marker and data files
            (another kind of file, a folder): never deleted, since that deletes the folder whole.
    """

    metadata: TableMetadata
    partitions: tuple[str, ...]
    fully_listed: bool
    file_groups: tuple[FileGroup, ...]
    uncommitted_files: tuple[str, ...] = ()
    unrecognized_files: tuple[str, ...] = ()
    crowded_partitions: frozenset[str] = frozenset()

    @property
    def config(self) -> TableConfig:
        return self.metadata.config

    @property
    def timeline(self) -> Timeline:
        return self.metadata.timeline

    @property
    def active_groups(self) -> tuple[FileGroup, ...]:
        return tuple(g for g in self.file_groups if g.key not in self.metadata.replaced)


def read_timeline(storage: Storage) -> tuple[TableConfig, Timeline, str]:
    """Read hoodie.properties and the timeline folder, refusing non-Hudi folders and unknown versions."""
    config, timeline, folder, _, _ = _read_timeline(storage)
    return config, timeline, folder


def read_timeline_with_mdt(storage: Storage) -> tuple[TableConfig, Timeline, str, bool]:
    """`read_timeline`, and whether `.hoodie` holds a metadata table, decided as
    `read_table_metadata` decides it (on layout 1 from the timeline's own listing)."""
    config, timeline, folder, _, listed = _read_timeline(storage)
    return config, timeline, folder, _name(METADATA_TABLE) in _hoodie_children(storage, listed)


def _read_timeline(storage: Storage) -> tuple[TableConfig, Timeline, str, dict[str, tm.FileStamp], set[str] | None]:
    """`read_timeline`, plus each instant file's size and modification time from the same listing
    (they key the cache of decoded instants), and the names of what `.hoodie` holds when that
    listing is `.hoodie` itself (timeline layout 1), else None."""
    try:
        raw = storage.read(PROPERTIES)
    except StorageError as error:
        if storage.stat(PROPERTIES) is not None:  # there, but not readable (permissions, a folder)
            cause = error.__cause__
            reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else error.message
            raise TableError(
                f"{storage.uri}/{PROPERTIES} is there but cannot be read ({reason}); nothing was changed",
                path=f"{storage.uri}/{PROPERTIES}",
                hint="make it a file the runner can read (check its permissions: the runner reads the table's "
                "files, and writes them to apply).",
            ) from None
        if storage.stat(HOODIE) is None:
            raise NotAHudiTableError(
                f"{storage.uri} is not a Hudi table: {NotAHudiTableError.found(_root_is_dir(storage))}",
                path=storage.uri,
                hint="check the table's `path` in its declaration.",
            ) from None
        raise NotAHudiTableError(
            f"{storage.uri}/{PROPERTIES} is missing, so the table's type and version are unknown",
            path=f"{storage.uri}/{PROPERTIES}",
            hint="restore hoodie.properties (Hudi keeps a hoodie.properties.backup while updating it).",
        ) from None
    config = TableConfig.from_properties(
        read_properties(raw, path=PROPERTIES), path=PROPERTIES
    )
    folder = HOODIE if config.timeline_layout_version == 1 else f"{HOODIE}/{config.timeline_path}"
    listed = storage.list_dir(folder)
    stamps = {_name(f.path): (f.size, f.mtime_ms) for f in listed if not f.is_dir}
    children = {_name(f.path) for f in listed} if folder == HOODIE else None
    return config, Timeline.from_file_names(list(stamps), folder=folder), folder, stamps, children


def _hoodie_children(storage: Storage, listed: set[str] | None) -> set[str]:
    """Names of what `.hoodie` holds: one listing answers for the metadata table, the bucket index
    and the schema history, where a `stat` each would cost a request each (two on S3 for a folder)."""
    return listed if listed is not None else {_name(f.path) for f in storage.list_dir(HOODIE)}


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _root_is_dir(storage: Storage) -> bool | None:
    root = storage.stat("")
    return None if root is None else root.is_dir


def read_table_metadata(storage: Storage) -> TableMetadata:
    """Read hoodie.properties, the timeline and the instant contents the planners need."""
    config, timeline, folder, stamps, listed = _read_timeline(storage)
    hoodie = _hoodie_children(storage, listed)
    reader = tm.InstantReader(storage, folder, timeline, stamps=stamps)
    commits = reader.completed_commits()  # lazy: a plan decodes only the commits it looks at
    compactions = reader.pending_operations(Action.COMPACTION)
    last_clean, empty_cleans = reader.last_completed_clean()
    clustering, own_clustering = reader.pending_clustering()
    return TableMetadata(
        base_path=storage.uri,
        config=config,
        timeline=timeline,
        timeline_folder=folder,
        commits=commits,  # read-only already, and lazy
        replaced=MappingProxyType(replaced_groups(timeline, commits)),
        compaction_plans=MappingProxyType(compactions),
        pending_compaction=MappingProxyType(pending_operation_bases(compactions)),
        pending_log_compaction=MappingProxyType(pending_operation_bases(reader.pending_operations(Action.LOG_COMPACTION))),
        pending_clustering=clustering,
        runner_pending_clustering=own_clustering,
        savepoints=MappingProxyType(reader.savepoints()),
        last_clean=last_clean,
        empty_completed_cleans=empty_cleans,
        pending_cleans=reader.pending_cleans(),
        has_metadata_table=_name(METADATA_TABLE) in hoodie,
        pending_writes=read_pending_writes(storage, folder, timeline),
        has_bucket_index_folder=_name(BUCKET_INDEX_FOLDER) in hoodie,
        # Hudi creates the folder empty with every table; only its files are a history.
        has_schema_history=_name(SCHEMA_HISTORY_FOLDER) in hoodie
        and any(not f.is_dir for f in storage.list_dir(SCHEMA_HISTORY_FOLDER)),
    )


def read_table_state(
    storage: Storage,
    *,
    partitions: Collection[str] | None = None,
    metadata: TableMetadata | None = None,
) -> TableState:
    """Read a table's metadata (unless given) and the file groups of its partitions.

    Args:
        storage: rooted at the table's base path.
        partitions: list only these partitions (those that exist); None lists the whole table.
        metadata: reuse metadata read moments ago (planning reads it first to choose partitions).
    """
    meta = metadata or read_table_metadata(storage)
    listed: ListedFiles = (
        discover_partitions(storage) if partitions is None else list_partitions(storage, partitions)
    )
    view = build_file_groups(
        listed,
        timeline=meta.timeline,
        layout=meta.config.timeline_layout_version,
        commits=meta.commits,
        pending_compaction=meta.compaction_plans,
        archived_completions=lambda times: archived_completion_times(
            storage, history_folder(meta.timeline_folder, meta.config.raw), times),
    )
    return TableState(
        metadata=meta,
        partitions=listed.partitions,
        fully_listed=partitions is None,
        file_groups=view.groups,
        uncommitted_files=view.uncommitted,
        unrecognized_files=listed.unrecognized,
        crowded_partitions=view.crowded,
    )


def replaced_groups(
    timeline: Timeline, commits: Mapping[InstantTime, CommitMetadata]
) -> dict[FileGroupKey, InstantTime]:
    """File groups replaced by completed replacecommits (overwrite, delete_partition, clustering)."""
    replaced: dict[FileGroupKey, InstantTime] = {}
    for instant in timeline.completed(Action.REPLACE_COMMIT):
        meta = commits.get(instant.time)
        for partition, file_ids in (meta.partition_to_replace_file_ids.items() if meta else ()):
            for file_id in file_ids:
                replaced.setdefault((partition, file_id), instant.time)
    return replaced


def pending_operation_bases(ops: Mapping[Instant, tuple[CompactionOperation, ...]]) -> dict[FileGroupKey, InstantTime]:
    """The base instant of every file slice that pending (log) compaction plans will merge."""
    return {
        (op.partition_path, op.file_id): InstantTime(op.base_instant_time)
        for operations in ops.values()
        for op in operations
    }

