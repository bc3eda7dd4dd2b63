"""`runner ls`: the selected tables with their effective settings and where each value came from.

Every setting is shown with its source: the table's own file, the project's `defaults`, or
Hudi's default. Text output shows the retention field of each table's policy only (the others
have no effect); JSON output lists every effective setting.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from runner.commands._common import load, outside_project
from runner.commands.result import CommandResult, ExitCode
from runner.declarations.merge import SIZE_FIELDS
from runner.declarations.model import (
    CleanPolicy,
    FileSizing,
    Project,
    Source,
    TableDeclaration,
    TableSpark,
)
from runner.declarations.policies import POLICY_RULES
from runner.declarations.sizes import format_size
from runner.declarations.targets import RUNNER_DEFAULT
from runner.selection import select_tables


def run(args: argparse.Namespace) -> CommandResult:
    """List the tables `--select`/`--exclude` pick; invalid declarations raise `DeclarationError`."""
    project = load(args)
    tables = select_tables(project, args.select, args.exclude, args.state)
    run = {name: {"value": shown, "source": origin} for name, shown, origin in project.run_provenance}
    data = {"project": project.name, "target": project.target, "run_settings": run,
            "tables": [table_json(table) for table in tables]}
    # With --project-dir the user stands elsewhere: show declaration files by absolute path.
    where = project.directory if outside_project(args) else None
    text = _render(tables, where) if tables else "no tables selected"
    if any(origin != RUNNER_DEFAULT for _, _, origin in project.run_provenance):
        text = _render_run(project) + "\n\n" + text
    return CommandResult(ExitCode.OK, text, data)


def _render_run(project: Project) -> str:
    """How runs reach Spark, as written (secrets stay `${env:NAME}`), and where each came from."""
    rows = project.run_provenance
    width = max(len(name) for name, _, _ in rows)
    value_width = max(len(shown) for _, shown, _ in rows)
    title = f"run settings (target {project.target})" if project.target else "run settings"
    return "\n".join([title] + [f"  {name:<{width}}  {shown:<{value_width}}  {origin}" for name, shown, origin in rows])


def settings(table: TableDeclaration) -> list[tuple[str, object, Source]]:
    """`(setting, value, source)` for every effective setting, in provenance order."""
    blocks: dict[str, CleanPolicy | FileSizing | TableSpark] = {
        "clean": table.clean, "file_sizing": table.file_sizing, "spark": table.spark}
    rows = []
    for name, source in table.provenance:
        block, field = name.split(".", 1)
        rows.append((name, getattr(blocks[block], field), source))
    return rows


def table_json(table: TableDeclaration) -> dict[str, Any]:
    spec = table.table
    return {
        "name": table.name,
        "path": table.path,
        "source_file": table.source_file,
        "description": table.description,
        "owner": table.owner,
        "tags": list(table.tags),
        "metadata_table": str(table.metadata_table),
        "table": None if spec is None else {
            "type": str(spec.type),
            "record_key": list(spec.record_key),
            "partition_by": list(spec.partition_by),
            "precombine_field": spec.precombine_field,
            "meta_fields": spec.meta_fields,
        },
        "settings": {name: {"value": _json_value(value), "source": str(source)}
                     for name, value, source in settings(table)},
    }


def _json_value(value: object) -> object:
    return str(value) if isinstance(value, str) else value  # StrEnum → plain str


def _render(tables: tuple[TableDeclaration, ...], project_dir: str | None = None) -> str:
    """One block per table; the value and source columns line up across all tables."""
    blocks = [(table, _rows(table, project_dir)) for table in tables]
    width = max(len(name) for _, rows in blocks for name, _, _ in rows)
    value_width = max(len(value) for _, rows in blocks for _, value, source in rows if source)
    out = []
    for table, rows in blocks:
        lines = [table.name + (f"  ({table.description})" if table.description else "")]
        lines += [f"  {name:<{width}}  {value:<{value_width}}  {source}".rstrip() for name, value, source in rows]
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _rows(table: TableDeclaration, project_dir: str | None) -> list[tuple[str, str, str]]:
    hidden = {f"clean.{rule.field}" for rule in POLICY_RULES.values() if rule.name != table.clean.policy}
    declared = os.path.join(project_dir, table.source_file) if project_dir else table.source_file
    rows = [("path", table.path, ""), ("declared in", declared, "")]
    if table.owner:
        rows.append(("owner", table.owner, ""))
    if table.tags:
        rows.append(("tags", ", ".join(table.tags), ""))
    if table.table is not None:
        spec = table.table
        keys = f"; key {', '.join(spec.record_key)}" if spec.record_key else ""
        parts = f"; partitioned by {', '.join(spec.partition_by)}" if spec.partition_by else ""
        virtual = "; no meta fields (virtual keys)" if spec.meta_fields is False else ""
        rows.append(("table", f"{spec.type}{keys}{parts}{virtual}", ""))
    rows.append(("metadata_table", str(table.metadata_table), ""))
    # Spark settings a table leaves to the session are listed in JSON only: in text they would
    # add two lines of nothing to every table.
    rows += [(name, _text_value(name, value), str(source))
             for name, value, source in settings(table)
             if name not in hidden and not (name.startswith("spark.") and source is Source.RUNNER_DEFAULT)]
    return rows


def _text_value(name: str, value: object) -> str:
    if name.split(".")[-1] in SIZE_FIELDS and isinstance(value, int):
        return f"{format_size(value)} ({value:,} bytes)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:,}" if isinstance(value, int) else str(value)
