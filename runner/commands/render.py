"""Text views of plans and run results, rendered from the same objects the JSON comes from."""

from __future__ import annotations

from typing import Any

from runner.commands._common import human_bytes
from runner.plan.model import Plan, TablePlan, TableStatus

MAX_FILES_SHOWN = 10


def count(number: int, noun: str) -> str:
    """`1 file`, `2 files`: every count the user reads goes through here."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"

_MARK = {TableStatus.CHANGES: "~", TableStatus.IN_SYNC: "=", TableStatus.ERROR: "!"}


def render_plan(plan: Plan, project: str) -> str:
    lines = [f"runner plan: project {project}, as of {plan.now}", ""]
    if not plan.tables:
        lines.append("  no tables selected")
    for table in plan.tables:
        lines.extend(_table_lines(table))
        lines.append("")
    changed = [t for t in plan.tables if t.status is TableStatus.CHANGES]
    files = sum(len(t.clean.files_to_delete) for t in changed if t.clean)
    reclaim = sum(t.clean.bytes_to_reclaim for t in changed if t.clean)
    failed = sum(t.status is TableStatus.ERROR for t in plan.tables)
    lines.append(
        f"Plan: {len(changed)} to change, {len(plan.tables) - len(changed) - failed} in sync, {failed} failed; "
        f"{files} files ({human_bytes(reclaim)}) to delete."
    )
    return "\n".join(lines)


def _table_lines(t: TablePlan) -> list[str]:
    head = f"{_MARK[t.status]} {t.name} ({t.path})"
    if t.status is TableStatus.ERROR:
        return [head, *(f"    {line}" for line in (t.error or {}).get("message", "").splitlines())]
    if t.status is TableStatus.IN_SYNC:
        return [head + ": in sync"]
    lines = [head]
    lines.extend(f"    note: {n}" for n in t.notes)
    if t.clean and not t.clean.is_empty:
        c = t.clean
        ectr = c.earliest_commit_to_retain.time if c.earliest_commit_to_retain else "none"
        lines.append(f"    clean ({c.policy}): earliest commit to retain {ectr}; {c.scope}")
        for f in c.files_to_delete[:MAX_FILES_SHOWN]:
            lines.append(f"      - {f.path}  ({human_bytes(f.size)})")
        if len(c.files_to_delete) > MAX_FILES_SHOWN:
            lines.append(f"      - ... and {len(c.files_to_delete) - MAX_FILES_SHOWN} more files")
        lines.extend(f"      - partition {p}/" for p in c.partitions_to_delete)
        lines.append(f"      = {len(c.files_to_delete)} files, {human_bytes(c.bytes_to_reclaim)} reclaimed")
    if t.sizing and not t.sizing.is_empty:
        s = t.sizing
        count = sum(len(g.files) for g in s.groups)
        total = sum(g.total_bytes for g in s.groups)
        lines.append(f"    resize: {count} small files ({human_bytes(total)}) rewritten into {len(s.groups)} "
                     f"files of at most {human_bytes(s.max_file_size)}")
        for g in s.groups[:MAX_FILES_SHOWN]:
            lines.append(f"      ~ {g.partition or '(table)'}: {count(len(g.files), 'file')} rewritten into 1 "
                         f"({human_bytes(g.total_bytes)})")
    return lines


_ROW_STYLE = {TableStatus.CHANGES: "yellow", TableStatus.IN_SYNC: "green", TableStatus.ERROR: "red"}


def plan_table_view(plan: Plan) -> Any:
    """The terminal's one-row-per-table summary under the plan text."""
    from runner.commands.terminal import summary_table

    rows, styles = [], []
    for t in plan.tables:
        clean = t.clean if t.clean is not None and t.status is not TableStatus.ERROR else None
        sizing = t.sizing if t.sizing is not None and t.status is not TableStatus.ERROR else None
        rewrite = sum(len(g.files) for g in sizing.groups) if sizing else 0
        rows.append([
            t.name, t.status.value.replace("_", " "),
            f"{len(clean.files_to_delete):,}" if clean else "", human_bytes(clean.bytes_to_reclaim) if clean else "",
            f"{rewrite:,}" if sizing else "",
        ])
        styles.append(_ROW_STYLE.get(t.status, ""))
    return summary_table("Plan", ["table", "status", "files to delete", "reclaimed", "files to rewrite"],
                         rows, styles=styles)
