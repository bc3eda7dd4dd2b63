"""Effective settings of one table: its own values, else the project's defaults, else Hudi's.

Merging is field by field: a table that sets only `clean.commits_retained` still takes
`clean.incremental` from the project default. Every effective setting remembers where it came
from, which `runner ls` shows and error messages cite ("100MiB, the project default at
project.yml:9:5").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from runner.declarations import model
from runner.declarations.model import (
    CleanPolicy,
    CleanPolicyName,
    FileSizing,
    MetadataTableMode,
    ResizeStrategy,
    Source,
    TableDeclaration,
    TableSpark,
    TableSpec,
)
from runner.declarations.policies import POLICY_RULES
from runner.declarations.sizes import parse_size
from runner.declarations.yaml_io import FieldPath, Loaded
from runner.vocabulary import TableType

# (block, field, Hudi's default, or the runner's for `spark`); the order is the order `runner ls`
# shows them in.
SETTINGS: tuple[tuple[str, str, object], ...] = (
    ("clean", "policy", model.DEFAULT_POLICY),
    *(("clean", rule.field, rule.default) for rule in POLICY_RULES.values()),
    ("clean", "incremental", model.DEFAULT_INCREMENTAL),
    ("file_sizing", "max_file_size", model.DEFAULT_MAX_FILE_SIZE),
    ("file_sizing", "small_file_limit", model.DEFAULT_SMALL_FILE_LIMIT),
    ("file_sizing", "insert_split_size", model.DEFAULT_INSERT_SPLIT_SIZE),
    ("file_sizing", "strategy", model.DEFAULT_RESIZE_STRATEGY),
    ("spark", "executor_memory", None),  # None: whatever the session was started with
    ("spark", "resize_partitions", None),  # None: one task per rewrite group, up to MAX_TASKS
)
# Blocks whose defaults are the runner's rather than Hudi's (Hudi has no per-table Spark settings).
_RUNNER_BLOCKS = frozenset({"spark"})
# Settings Hudi has no counterpart of, in blocks that otherwise mirror Hudi's.
_RUNNER_FIELDS = frozenset({"file_sizing.strategy"})
SIZE_FIELDS = frozenset({"max_file_size", "small_file_limit"})
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Setting:
    """One effective value and its origin.

    Args:
        value: the value, sizes already in bytes and the policy as a `CleanPolicyName`.
        source: table, project default or Hudi default.
        doc: the file that set it (None for Hudi's defaults).
        path: where in `doc` it was set.
    """

    value: object
    source: Source
    doc: Loaded | None = None
    path: FieldPath = ()

    def origin(self) -> str:
        """Where the value came from, for messages: `the project default at project.yml:9:5`."""
        if self.doc is None:
            return "the runner's default" if self.source is Source.RUNNER_DEFAULT else "Hudi's default"
        mark = self.doc.where(self.path)
        where = f"{self.doc.file}:{mark.line}:{mark.column}"
        return f"set at {where}" if self.source is Source.TABLE else f"the project default at {where}"


def lookup(data: object, path: FieldPath) -> object:
    """The value at `path` in nested mappings, or `MISSING`."""
    for part in path:
        if not isinstance(data, Mapping) or part not in data:
            return _MISSING
        data = data[part]
    return data


def is_missing(value: object) -> bool:
    return value is _MISSING


def effective_settings(table: Loaded | None, project: Loaded | None,
                       inherited: Mapping[str, Setting] | None = None) -> dict[str, Setting]:
    """Merge one schema-valid table with the project's (schema-valid) defaults and Hudi's.

    Args:
        table: the table file, whose own values win; None for the project defaults alone.
        project: project.yml, or None when it is invalid (then only Hudi's defaults apply).
        inherited: `effective_settings(None, project)` when the caller has it already, so that
            project.yml's defaults are not looked up and parsed again for every table.

    Returns:
        `clean.policy`, `clean.commits_retained`, ... → `Setting`, in `SETTINGS` order.
    """
    if inherited is None:
        inherited = _inherited(project)
    data = table.data if table is not None else None
    if not isinstance(data, Mapping):
        return dict(inherited)
    merged: dict[str, Setting] = {}
    for block, key, _ in SETTINGS:
        name = f"{block}.{key}"
        section = data.get(block)
        if isinstance(section, Mapping) and key in section:
            merged[name] = Setting(_typed(key, section[key]), Source.TABLE, table, (block, key))
        else:
            merged[name] = inherited[name]
    return merged


def _inherited(project: Loaded | None) -> dict[str, Setting]:
    """What a table that sets nothing gets: the project's defaults, else Hudi's (or the runner's)."""
    merged: dict[str, Setting] = {}
    for block, key, hudi_default in SETTINGS:
        path = ("defaults", block, key)
        value = lookup(project.data, path) if project is not None else _MISSING
        runners = block in _RUNNER_BLOCKS or f"{block}.{key}" in _RUNNER_FIELDS
        fallback = Source.RUNNER_DEFAULT if runners else Source.HUDI_DEFAULT
        merged[f"{block}.{key}"] = (Setting(hudi_default, fallback) if is_missing(value)
                                    else Setting(_typed(key, value), Source.PROJECT_DEFAULT, project, path))
    return merged


def _typed(key: str, value: object) -> object:
    if key in SIZE_FIELDS:
        return parse_size(value)
    if key == "policy":
        return CleanPolicyName(str(value))
    return value


def build_table(doc: Loaded, settings: Mapping[str, Setting], location: str,
                project: Loaded | None = None) -> TableDeclaration:
    """Build the frozen declaration of one schema-valid table file.

    Args:
        doc: the table file (its shape already checked by the schema).
        settings: from `effective_settings`.
        location: the resolved table path.
        project: project.yml when valid; its `defaults.file_sizing` block also declares sizing.
    """
    data = doc.data
    assert isinstance(data, Mapping)
    value = {name: setting.value for name, setting in settings.items()}
    retention: dict[str, Any] = {rule.field: _int(value[f"clean.{rule.field}"]) for rule in POLICY_RULES.values()}
    clean = replace(CleanPolicy(policy=CleanPolicyName(str(value["clean.policy"])),
                                incremental=value["clean.incremental"] is True), **retention)
    sizing = FileSizing(
        max_file_size=_int(value["file_sizing.max_file_size"]),
        small_file_limit=_int(value["file_sizing.small_file_limit"]),
        insert_split_size=_int(value["file_sizing.insert_split_size"]),
        strategy=ResizeStrategy(str(value["file_sizing.strategy"])),
    )
    memory, tasks = value["spark.executor_memory"], value["spark.resize_partitions"]
    return TableDeclaration(
        name=str(data["name"]),
        path=location,
        source_file=doc.file,
        clean=clean,
        file_sizing=sizing,
        table=_table_spec(data.get("table")),
        metadata_table=MetadataTableMode(data.get("metadata_table", MetadataTableMode.KEEP)),
        description=data.get("description"),
        owner=data.get("owner"),
        tags=tuple(data.get("tags", ())),
        provenance=tuple((name, setting.source) for name, setting in settings.items()),
        file_sizing_declared="file_sizing" in data
        or (project is not None and not is_missing(lookup(project.data, ("defaults", "file_sizing")))),
        spark=TableSpark(executor_memory=memory if isinstance(memory, str) else None,
                         resize_partitions=None if tasks is None else _int(tasks)),
    )


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value


def _table_spec(block: object) -> TableSpec | None:
    if not isinstance(block, Mapping):
        return None
    return TableSpec(
        type=TableType(block.get("type", TableType.COPY_ON_WRITE)),
        record_key=_fields(block.get("record_key", ())),
        partition_by=_fields(block.get("partition_by", ())),
        precombine_field=block.get("precombine_field"),
        meta_fields=block.get("meta_fields"),
    )


def _fields(value: object) -> tuple[str, ...]:
    """`record_key: id` is shorthand for `record_key: [id]`."""
    if isinstance(value, str):
        return (value,)
    assert isinstance(value, list | tuple)
    return tuple(str(item) for item in value)
