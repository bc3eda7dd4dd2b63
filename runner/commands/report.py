"""The versioned run report, `target/run_results.json`, and its text view."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner import __version__
from runner.commands._common import human_bytes
from runner.commands.render import count
from runner.declarations.model import Project
from runner.execute.apply import TableResult

REPORT_VERSION = 1


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
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".json.tmp")
        temp.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        temp.replace(path)


def render_report(report: RunReport, report_path: str = "target/run_results.json") -> str:
    lines = [f"runner apply: project {report.project}", ""]
    if not report.tables:
        lines.append("  no tables selected")
    for t in report.tables:
        if t.status == "error":
            lines.append(f"! {t.name}: failed")
            lines.extend(f"    {line}" for line in (t.error or {}).get("message", "").splitlines())
            continue
        if t.status == "in_sync":
            lines.append(f"= {t.name}: in sync, nothing to do")
            continue
        lines.append(f"~ {t.name}: {count(t.files_deleted, 'file')} deleted ({human_bytes(t.bytes_deleted)}), "
                     f"{count(t.files_rewritten, 'file')} rewritten, in {t.duration_s:.1f}s")
        lines.extend(f"    note: {n}" for n in t.notes)
        lines.extend(f"    wrote {name}" for name in t.instants_written)
    failed = sum(t.status == "error" for t in report.tables)
    lines += [f"note: {n}" for n in report.notes]
    lines += ["", f"Apply: {len(report.tables) - failed} ok, {failed} failed. Report: {report_path}"]
    return "\n".join(lines)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
