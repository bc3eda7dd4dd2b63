"""The text view of the run report (`runner.service.report.RunReport`)."""

from __future__ import annotations

from collections.abc import Mapping

from runner.commands._common import human_bytes
from runner.commands.render import MAX_FILES_SHOWN, count
from runner.execute.apply import TableResult
from runner.plan.model import TableStatus
from runner.service.report import RunReport

__all__ = ["RunReport", "render_report"]


def render_report(report: RunReport, report_path: str = "target/run_results.json",
                  declared_in: Mapping[str, str] | None = None) -> str:
    """The run report as text; `declared_in` (table name → declaration file) names, beside each
    failed table, the declaration to check, as `runner plan` does."""
    lines = [f"runner apply: project {report.project}", ""]
    if not report.tables:
        lines.append("  no tables selected")
    in_sync = [t.name for t in report.tables if t.status == TableStatus.IN_SYNC]
    folded = len(in_sync) > MAX_FILES_SHOWN  # hundreds of "nothing to do" lines would bury the rest
    for t in report.tables:
        if t.status == TableStatus.IN_SYNC and folded:
            continue
        if t.status == TableStatus.ERROR:
            lines.append(f"! {t.name}: failed")
            lines.extend(f"    {line}" for line in (t.error or {}).get("message", "").splitlines())
            lines.extend(f"    declared in {source}" for source in [(declared_in or {}).get(t.name)] if source)
            lines.extend(_done_before_failing(t))
            continue
        if t.status == TableStatus.IN_SYNC:
            lines.append(f"= {t.name}: in sync, nothing to do")
            continue
        lines.append(f"~ {t.name}: {_counts(t)}, in {t.duration_s:.1f}s")
        lines.extend(_notes_and_instants(t))
    if folded:
        names = ", ".join(in_sync[:MAX_FILES_SHOWN])
        lines.append(f"= {count(len(in_sync), 'table')} in sync, nothing to do: {names}, "
                     f"... and {len(in_sync) - MAX_FILES_SHOWN:,} more ({report_path} lists every table)")
    failed = sum(t.status == TableStatus.ERROR for t in report.tables)
    lines += [f"note: {n}" for n in report.notes]
    written = "No report: it could not be written (see the note above)" if report.unwritten else \
        f"Report: {report_path}"
    lines += ["", f"Apply: {len(report.tables) - failed} ok, {failed} failed. {written}"]
    if failed:
        lines.append(f"Next: fix what stopped the {count(failed, 'failed table')} (marked ! above, with why), then "
                     "run `runner plan` again; the next apply finishes any clean or resize a failure left pending.")
    return "\n".join(lines)


def _counts(t: TableResult) -> str:
    return (f"{count(t.files_deleted, 'file')} deleted ({human_bytes(t.bytes_deleted)}), "
            f"{count(t.files_rewritten, 'file')} rewritten")


def _notes_and_instants(t: TableResult) -> list[str]:
    return [f"    note: {n}" for n in t.notes] + [f"    wrote {name}" for name in t.instants_written]


def _done_before_failing(t: TableResult) -> list[str]:
    """What a failed table's earlier steps did (a clean that completed before the resize was
    refused): the error's "nothing was rewritten" is about its own step, not the table."""
    if not t.changed_anything and not t.notes:
        return []
    return [f"    done before it failed: {_counts(t)}", *_notes_and_instants(t)]
