"""The versioned run report, `target/run_results.json`: one `TableResult` per table applied."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner import __version__
from runner.declarations.model import Project
from runner.execute.apply import TableResult
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

    @classmethod
    def start(cls, project: Project) -> RunReport:
        return cls(project.name, uuid.uuid4().hex, _now())

    @property
    def failed(self) -> bool:
        """Whether any table failed; `runner apply` then exits 1."""
        return any(t.status == TableStatus.ERROR for t in self.tables)

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
        """Replace `path` with this report, whole, in one rename.

        Two applies in one project (other tables, or another selection) may write at once. Each
        writes a temporary file of its own beside `path` and renames it into place, so a reader
        finds the previous report or this one, never a truncated or interleaved file, and the
        report that stays is the run that wrote last, complete (as dbt's run_results.json holds its
        last invocation).
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_json(), indent=2) + "\n"
        # A name no other run picks; created as any file is (the umask's mode, not mkstemp's 0600).
        temp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
        try:
            with temp.open("x", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())  # the rename must not publish a file whose bytes are not yet on disk
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
