"""Typed, validated declarations: what `project.yml` and `tables/*.yml` say once they passed the schema.

Defaults live here and only here; `schemas/*.json` repeats them as `default` for editors, and a test
asserts the two agree. Nothing downstream re-checks shape: these values are trusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from runner.vocabulary import TableType


class CleanPolicyName(StrEnum):
    """Hudi's `hoodie.cleaner.policy` values, spelled as Hudi spells them."""

    KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
    KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
    KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"


class Source(StrEnum):
    """Where an effective setting came from, shown by `runner ls`."""

    TABLE = "table"
    PROJECT_DEFAULT = "project default"
    HUDI_DEFAULT = "hudi default"
    RUNNER_DEFAULT = "runner default"


# Hudi's own defaults (HoodieCleanConfig, HoodieStorageConfig, HoodieCompactionConfig).
DEFAULT_POLICY = CleanPolicyName.KEEP_LATEST_COMMITS
DEFAULT_COMMITS_RETAINED = 10
DEFAULT_FILE_VERSIONS_RETAINED = 3
DEFAULT_HOURS_RETAINED = 24
DEFAULT_INCREMENTAL = True
DEFAULT_MAX_FILE_SIZE = 120 * 1024 * 1024
DEFAULT_SMALL_FILE_LIMIT = 100 * 1024 * 1024
DEFAULT_INSERT_SPLIT_SIZE = 500_000


class ResizeStrategy(StrEnum):
    """How a resize writes a group's new file.

    REWRITE decodes the inputs and encodes them again in row groups of about 120 MiB. BINARY_COPY
    copies the inputs' row groups without decoding (Hudi 1.1's binary-copy clustering): much
    faster, but the new file keeps the inputs' small row groups and their compression, so readers
    scan more row groups. Groups whose inputs do not qualify are rewritten.
    """

    REWRITE = "rewrite"
    BINARY_COPY = "binary_copy"


DEFAULT_RESIZE_STRATEGY = ResizeStrategy.REWRITE


@dataclass(frozen=True, slots=True)
class CleanPolicy:
    """How many old file versions a table keeps.

    Args:
        policy: which of Hudi's three cleaning policies applies.
        commits_retained: KEEP_LATEST_COMMITS: keep every file version a query on any of the last
            N completed commits may read.
        file_versions_retained: KEEP_LATEST_FILE_VERSIONS: keep the newest N slices per file group.
        hours_retained: KEEP_LATEST_BY_HOURS: keep every version readable by a query started in the
            last N hours.
        incremental: plan only the partitions written since the last clean's earliest commit to
            retain (Hudi's `hoodie.cleaner.incremental.mode`), with Hudi's fallbacks to a full listing.
    """

    policy: CleanPolicyName = DEFAULT_POLICY
    commits_retained: int = DEFAULT_COMMITS_RETAINED
    file_versions_retained: int = DEFAULT_FILE_VERSIONS_RETAINED
    hours_retained: int = DEFAULT_HOURS_RETAINED
    incremental: bool = DEFAULT_INCREMENTAL


@dataclass(frozen=True, slots=True)
class FileSizing:
    """Target file sizes, used both by the writer (at write time) and by reconcile (clustering).

    Args:
        max_file_size: bytes a base file may grow to (`hoodie.parquet.max.file.size`).
        small_file_limit: base files below this many bytes are small; 0 turns small-file handling
            off (`hoodie.parquet.small.file.limit`).
        insert_split_size: records per new file group when inserts overflow the small files
            (`hoodie.copyonwrite.insert.split.size`).
        strategy: how a resize writes the new files (the runner's choice; see `ResizeStrategy`).
    """

    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    small_file_limit: int = DEFAULT_SMALL_FILE_LIMIT
    insert_split_size: int = DEFAULT_INSERT_SPLIT_SIZE
    strategy: ResizeStrategy = DEFAULT_RESIZE_STRATEGY


@dataclass(frozen=True, slots=True)
class TableSpark:
    """What one table asks of Spark when apply works on it (None: the session's own setting).

    One Spark session serves a whole run, so the two kinds of setting differ
    (`runner.execute.session`):

    Args:
        executor_memory: session-level (`spark.executor.memory`, Spark's size text such as `8g`):
            a run that starts Spark sizes its executors for the largest value among the selected
            tables, and says which table set it.
        resize_partitions: per job: at most this many Spark tasks rewrite this table's small files
            (by default one task per rewrite group, up to `runner.spark_jobs.MAX_TASKS`).
    """

    executor_memory: str | None = None
    resize_partitions: int | None = None


class MetadataTableMode(StrEnum):
    """What apply may do about a Hudi metadata table it cannot update.

    KEEP refuses to delete data files while `.hoodie/metadata` exists; DISABLE removes the metadata
    table first, the way Hudi does when a writer turns `hoodie.metadata.enable` off.
    """

    KEEP = "keep"
    DISABLE = "disable"


@dataclass(frozen=True, slots=True)
class TableSpec:
    """What a writer needs to create the table; must agree with hoodie.properties when it exists."""

    type: TableType = TableType.COPY_ON_WRITE
    record_key: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    precombine_field: str | None = None
    # `hoodie.populate.meta.fields`; None when not declared (new tables get Hudi's default, true).
    meta_fields: bool | None = None


@dataclass(frozen=True, slots=True)
class TableDeclaration:
    """One `tables/**/*.yml` file after validation, with project defaults merged in.

    Args:
        name: unique table name.
        path: the table's base path, resolved: an absolute local path or a URI (`s3://...`).
        source_file: the YAML file, relative to the project directory (used in messages).
        provenance: for each effective setting (`clean.commits_retained`, ...), where it came from.
        file_sizing_declared: the table or the project defaults has a `file_sizing` block; only then
            may apply rewrite small files after the fact (the writer uses `file_sizing` either way).
        spark: what the table asks of Spark during apply (see `TableSpark`).
    """

    name: str
    path: str
    source_file: str
    clean: CleanPolicy = field(default_factory=CleanPolicy)
    file_sizing: FileSizing = field(default_factory=FileSizing)
    table: TableSpec | None = None
    metadata_table: MetadataTableMode = MetadataTableMode.KEEP
    description: str | None = None
    owner: str | None = None
    tags: tuple[str, ...] = ()
    provenance: tuple[tuple[str, Source], ...] = ()
    file_sizing_declared: bool = False
    spark: TableSpark = field(default_factory=TableSpark)


@dataclass(frozen=True, slots=True)
class SparkSettings:
    """How apply and the writer reach Spark.

    Args:
        master: the master URL of a session started in-process (`local[*]`, `spark://host:7077`, `yarn`).
        remote: a Spark Connect endpoint (`sc://host:15002`); when set, `master` is not used.
        conf: extra Spark configuration, in declaration order.
    """

    master: str = "local[*]"
    conf: tuple[tuple[str, str], ...] = ()
    remote: str | None = None


@dataclass(frozen=True, slots=True)
class Project:
    """`project.yml` plus every table declaration under `tables_dir`.

    Args:
        directory: absolute path of the project directory (where project.yml lives).
        spark, threads: the chosen target's settings (see `runner.declarations.targets`).
        target: the chosen target's name, None when the project has no targets.
    """

    name: str
    directory: str
    tables_dir: str = "tables"
    allowed_roots: tuple[str, ...] = ()
    spark: SparkSettings = field(default_factory=SparkSettings)
    tables: tuple[TableDeclaration, ...] = ()
    target: str | None = None
    threads: int = 1
    # (setting, value as written with ${env:...} unresolved, where it came from), for `runner ls`.
    run_provenance: tuple[tuple[str, str, str], ...] = ()
