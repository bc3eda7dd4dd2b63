"""The versioned run report, `target/run_results.json`: one `TableResult` per table applied."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner import __version__
from runner.declarations.model import Project
from runner.execute.apply import TableResult
from runner.output_paths import replace_text
from runner.plan.model import TableStatus

REPORT_VERSION = 1
RUN_RESULTS = Path("target") / "run_results.json"


@dataclass
class RunReport:
    project: str
    run_id: str
    started_at: str
    finished_at: str | None = None
    tables: list[TableResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # about the run as a whole (the Spark session)
    unwritten: bool = False  # the report could not be written (`write_once_applied`)

    @classmethod
    def start(cls, project: Project) -> RunReport:
        return cls(project.name, uuid.uuid4().hex, _now())

    @property
    def failed(self) -> bool:
        """Whether any table failed, or the report could not be written; `runner apply` then exits 1."""
        return self.unwritten or any(t.status == TableStatus.ERROR for t in self.tables)

    def finish(self) -> None:
        self.finished_at = _now()

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": REPORT_VERSION,
            "runner_version": __version__,
            "command": "apply",
            "project": self.project,
            "run_id": self.run_id,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "tables": [t.to_json() for t in self.tables],
            "notes": list(self.notes),
        }

    def write(self, path: Path) -> None:
        """Replace `path` with this report in one rename (`replace_text`): with two applies at once
        in one project, the file holds the run that wrote last, complete (as dbt's
        run_results.json holds its last invocation)."""
        replace_text(path, json.dumps(self.to_json(), indent=2) + "\n")

    def write_once_applied(self, path: Path) -> None:
        """`write`, after the tables were applied: a failure (a full disk, a folder that went read-only)
        becomes a note of the failed run instead of an error that would hide what was done to them."""
        try:
            self.write(path)
        except OSError as error:
            self.unwritten = True
            self.notes.append(f"the run report could not be written to {path}: {error.strerror or error}; "
                              "what was applied is shown here only")

def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
