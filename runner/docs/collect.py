"""Everything the report shows, gathered read-only: declarations, table state, plan, last run.

Each table is read once in full (the histogram needs every latest slice) and planned with the same
scope and planner as `runner plan`, so the report's "reclaimable" figures are exactly what
`runner plan` would delete as of the same `now`. Nothing is written to any table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from runner import __version__
from runner.declarations.fingerprint import declaration_fingerprint
from runner.declarations.merge import SIZE_FIELDS
from runner.declarations.model import Project, TableDeclaration
from runner.docs import charts
from runner.errors import RunnerError
from runner.hudi.state import read_table_metadata, read_table_state
from runner.plan.build import plan_table
from runner.plan.clean import clean_scope
from runner.plan.model import Plan
from runner.storage import storage_for

RUN_RESULTS = Path("target") / "run_results.json"

DeclarationJson = Callable[[TableDeclaration], dict[str, Any]]
# The table's real location, checked against allowed_roots (raises RunnerError when refused).
Locate = Callable[[TableDeclaration], str]


def collect_site(
    project: Project,
    tables: Sequence[TableDeclaration],
    *,
    now: datetime,
    now_text: str,
    generated_at: str,
    declaration_json: DeclarationJson,
    locate: Locate,
) -> dict[str, Any]:
    """The report's data: one entry per selected table, plus the last run's results if any."""
    return {
        "project": project.name,
        "project_dir": project.directory,
        "runner_version": __version__,
        "generated_at": generated_at,
        "now": now_text,
        "tables": [_table(project, decl, now=now, declaration_json=declaration_json, locate=locate)
                   for decl in tables],
        "run_results": last_run(Path(project.directory)),
        # Settings whose values are byte counts (shown as KiB/MiB); insert_split_size counts records.
        "byte_settings": sorted(f"file_sizing.{name}" for name in SIZE_FIELDS),
    }


def _table(project: Project, decl: TableDeclaration, *, now: datetime,
           declaration_json: DeclarationJson, locate: Locate) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": decl.name,
        "declaration": declaration_json(decl),
        "source_yaml": _source_text(Path(project.directory) / decl.source_file),
    }
    try:
        real = locate(decl)  # as `runner plan` does: read only the real path inside allowed_roots
        storage = storage_for(real)
        meta = read_table_metadata(storage)
        state = read_table_state(storage, metadata=meta)
        planned = plan_table(replace(decl, path=real), state, clean_scope(decl.clean, meta, now=now))
        plan = replace(planned, path=decl.path, declaration_fingerprint=declaration_fingerprint(decl))
        timeline = charts.timeline_points(state)
    except RunnerError as error:
        entry["error"] = error.to_json()
        return entry
    sizing = decl.file_sizing
    entry.update(
        table_type=meta.config.table_type.value,
        table_version=meta.config.version,
        plan=Plan(generated_at="", now="", tables=(plan,)).to_json()["tables"][0],
        histogram=charts.size_histogram(
            state, small_file_limit=sizing.small_file_limit, max_file_size=sizing.max_file_size
        ),
        versions=charts.versions_per_group(state),
        reclaimable=charts.reclaimable_by_partition(plan),
        timeline=timeline,
    )
    return entry


def last_run(project_dir: Path) -> dict[str, Any] | None:
    """`target/run_results.json` as written by `runner apply`, or None; a broken file is reported."""
    path = project_dir / RUN_RESULTS
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return {"error": f"cannot read {path}: {error}"}
    return data if isinstance(data, dict) else {"error": f"{path}: expected a JSON object"}


def _source_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
