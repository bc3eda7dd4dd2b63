"""Text views of plans, rendered from the same objects the JSON comes from: one renderer per step kind."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from runner.commands._common import human_bytes
from runner.declarations.model import ResizeStrategy
from runner.declarations.text import shown
from runner.plan.model import Plan, TablePlan, TableStatus
from runner.plan.steps import (
    RESIZES_NOT_ASKED,
    Clean,
    DisableMetadataTable,
    FinishPendingClean,
    FinishPendingResize,
    Resize,
    StepKind,
    UpdateMetadataTable,
)

MAX_FILES_SHOWN = 10


def count(number: int, noun: str) -> str:
    """`1 file`, `2 files`: every count the user reads goes through here."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"

_MARK = {TableStatus.CHANGES: "~", TableStatus.IN_SYNC: "=", TableStatus.ERROR: "!", TableStatus.DRIFT: "?"}


# Text order: what a reviewer must act on first, the tables that need nothing last (and folded).
_ORDER = (TableStatus.CHANGES, TableStatus.DRIFT, TableStatus.ERROR, TableStatus.IN_SYNC)


def render_plan(plan: Plan, project: str, *, verbose: bool = False, apply_command: str | None = None,
                next_step: bool = True, declared_in: Mapping[str, str] | None = None) -> str:
    """The plan as text; `verbose` lists every file and in-sync table instead of the first
    MAX_FILES_SHOWN.

    The summary comes first (what a reviewer reads) and again last, followed by what to do next
    (`next_step`; the confirmation prompt of `runner apply` asks its own question instead).
    Tables are grouped: changes, drift, failures, then the tables in sync, folded into one line
    when there are more than MAX_FILES_SHOWN of them. `apply_command` applies the saved plan (`--out`);
    `declared_in` (table name -> declaration file) names the file to fix beside a failed table.
    """
    summary = _summary(plan)
    lines = [f"runner plan: project {project}, as of {plan.now}"]
    if not plan.tables:
        return "\n".join([*lines, "", "  no tables selected", "", summary])
    lines += [summary, ""]
    by_status = {status: [t for t in plan.tables if t.status is status] for status in _ORDER}
    in_sync = by_status[TableStatus.IN_SYNC]
    folded = not verbose and len(in_sync) > MAX_FILES_SHOWN
    for status in _ORDER[:-1] if folded else _ORDER:
        for table in by_status[status]:
            lines += [*_table_lines(table, verbose), *_declared(table, declared_in), ""]
    if folded:
        lines += [_folded(in_sync), ""]
    lines.append(summary)
    if next_step:
        lines.append(_next(plan, apply_command))
    return "\n".join(lines)


def _declared(table: TablePlan, declared_in: Mapping[str, str] | None) -> list[str]:
    """Beside a failed table, the declaration whose `path` (or settings) to check."""
    source = (declared_in or {}).get(table.name) if table.status is TableStatus.ERROR else None
    return [f"    declared in {source}"] if source else []


def _summary(plan: Plan) -> str:
    changed = [t for t in plan.tables if t.status is TableStatus.CHANGES]
    files = sum(len(t.clean.files_to_delete) for t in changed if t.clean)
    reclaim = sum(t.clean.bytes_to_reclaim for t in changed if t.clean)
    groups = [g for t in changed if t.sizing for g in t.sizing.groups]
    rewritten = sum(len(g.files) for g in groups)
    rewrite = f", {count(rewritten, 'file')} ({human_bytes(sum(g.total_bytes for g in groups))}) to rewrite" \
        if groups else ""
    return (f"Plan: {len(changed)} to change, {_tally(plan, TableStatus.IN_SYNC)} in sync, "
            f"{_tally(plan, TableStatus.DRIFT)} drifted, {_tally(plan, TableStatus.ERROR)} failed; "
            f"{count(files, 'file')} ({human_bytes(reclaim)}) to delete{rewrite}.")


def _tally(plan: Plan, status: TableStatus) -> int:
    return sum(t.status is status for t in plan.tables)


def _folded(in_sync: list[TablePlan]) -> str:
    names = ", ".join(t.name for t in in_sync[:MAX_FILES_SHOWN])
    return (f"= {count(len(in_sync), 'table')} in sync: {names}, ... and {len(in_sync) - MAX_FILES_SHOWN:,} more "
            "(--verbose lists each with why)")


def _next(plan: Plan, apply_command: str | None) -> str:
    """The last line: what to do now, given what the plan found."""
    failed = _tally(plan, TableStatus.ERROR)
    if failed:
        them = "it" if failed == 1 else "them"
        return (f"Next: fix the {count(failed, 'table')} that could not be planned (marked !) and plan again; "
                f"apply would report {them} failed and leave {them} untouched.")
    if plan.has_changes:
        if apply_command:
            return f"Next: review the plan, then `{apply_command}` applies exactly this plan."
        return ("Next: save it for review with `runner plan --out target/plan.json` and apply that with "
                "`runner apply target/plan.json` (or plan and apply in one go with `runner apply --auto-approve`).")
    if plan.has_drift:
        return ("Next: nothing to apply; make the `table:` block of each drifted table (marked ?) match the "
                "table, or fix the table.")
    return "Nothing to do: every table matches its declaration."


def _table_lines(t: TablePlan, verbose: bool) -> list[str]:
    head = f"{_MARK[t.status]} {t.name} ({t.path})"
    if t.status is TableStatus.ERROR:
        return [head, *(f"    {line}" for line in (t.error or {}).get("message", "").splitlines())]
    if t.status is TableStatus.IN_SYNC:
        return [head + ": in sync" + (f"; {t.clean.why}" if t.clean and t.clean.why else ""),
                *(f"    note: {n}" for n in t.notes), *_kept_lines(t.clean, verbose)]
    if t.status is TableStatus.DRIFT:
        return [head + ": nothing to apply, but the table differs from its declaration's `table:` block "
                "(apply cannot change a table's type or keys: fix the declaration or the table)",
                *(f"    drift: {d}" for d in t.drift), *_kept_lines(t.clean, verbose)]
    lines = [head]
    lines.extend(f"    note: {n}" for n in t.notes)
    lines.extend(f"    drift: {d}" for d in t.drift)
    for step in t.steps:
        lines += STEP_RENDERERS[step.kind](step, verbose)
    return lines


def _disable_lines(step: DisableMetadataTable, verbose: bool) -> list[str]:
    lost = f"; indexes lost: {', '.join(step.partitions)}" if step.partitions else ""
    return ["    metadata table: apply will first disable the metadata table (remove .hoodie/metadata and clear "
            f"hoodie.table.metadata.partitions), as Hudi does when hoodie.metadata.enable=false{lost}"]


def _update_lines(step: UpdateMetadataTable, verbose: bool) -> list[str]:
    if step.refusals:
        return ["    metadata table: apply will refuse, because the metadata table (.hoodie/metadata) cannot be "
                "kept in step (let Hudi settle it with its next write, or set `metadata_table: disable` to "
                "remove it): " + "; ".join(step.refusals)]
    return [f"    metadata table: apply records each {' and '.join(step.actions)} in it (partitions "
            f"{', '.join(step.partitions) or 'none'}) as Hudi does: one deltacommit with the instant time "
            "of the data action, completed before it"]


def _pending_clean_lines(step: FinishPendingClean, verbose: bool) -> list[str]:
    return [f"    finish pending clean {t} first (its own plan, checked against the table now)" for t in step.instants]


def _clean_lines(c: Clean, verbose: bool) -> list[str]:
    lines: list[str] = []
    if not c.is_empty:
        lines.append(f"    clean ({c.policy}): {c.why or 'earliest commit to retain ' + _ectr(c)}; {c.scope}")
        lines += _listed([f"      - {shown(f.path)}  ({human_bytes(f.size)})" + (f"  {f.reason}" if f.reason else "")
                          for f in c.files_to_delete], "      - ", "file", verbose)
        lines.extend(f"      - partition {shown(p)}/  (no file group left)" for p in c.partitions_to_delete)
        lines.append(f"      = {count(len(c.files_to_delete), 'file')}, {human_bytes(c.bytes_to_reclaim)} reclaimed")
    return lines + _kept_lines(c, verbose)


def _pending_resize_lines(step: FinishPendingResize, verbose: bool) -> list[str]:
    if step.roll_back:
        why = step.why or RESIZES_NOT_ASKED
        return [f"    roll back the interrupted resize (clustering {t}): {why}" for t in step.instants]
    return [f"    finish the interrupted resize (clustering {t})" for t in step.instants]


def _resize_lines(s: Resize, verbose: bool) -> list[str]:
    if s.is_empty:
        return []
    small = sum(len(g.files) for g in s.groups)
    lines = [f"    resize: {count(small, 'small file')} ({human_bytes(s.bytes_to_rewrite)}) rewritten into "
             f"{count(len(s.groups), 'file')} of at most {human_bytes(s.max_file_size)}"]
    if s.strategy is ResizeStrategy.BINARY_COPY:
        lines.append("      strategy: binary copy (row groups copied as they are; groups that do not "
                     "qualify are rewritten)")
    return lines + _listed([f"      ~ {shown(g.partition) or '(table)'}: {count(len(g.files), 'file')} rewritten "
                            f"into 1 ({human_bytes(g.total_bytes)})" for g in s.groups], "      ~ ", "group", verbose)


# One text renderer per step kind (the JSON form is `runner.plan.steps.step_to_json`).
STEP_RENDERERS: dict[StepKind, Callable[[Any, bool], list[str]]] = {
    StepKind.DISABLE_METADATA_TABLE: _disable_lines,
    StepKind.UPDATE_METADATA_TABLE: _update_lines,
    StepKind.FINISH_PENDING_CLEAN: _pending_clean_lines,
    StepKind.CLEAN: _clean_lines,
    StepKind.FINISH_PENDING_RESIZE: _pending_resize_lines,
    StepKind.RESIZE: _resize_lines,
}


def _kept_lines(clean: Clean | None, verbose: bool) -> list[str]:
    kept = clean.kept if clean else ()
    return _listed([f"      keep {shown(f.path)}  ({human_bytes(f.size)})  {f.reason}" for f in kept],
                   "      keep ", "file", verbose)


def _listed(lines: list[str], prefix: str, noun: str, verbose: bool) -> list[str]:
    if verbose or len(lines) <= MAX_FILES_SHOWN:
        return lines
    rest = len(lines) - MAX_FILES_SHOWN
    return [*lines[:MAX_FILES_SHOWN], f"{prefix}... and {count(rest, 'more ' + noun)} (--verbose lists them all)"]


def _ectr(c: Clean) -> str:
    return str(c.earliest_commit_to_retain.time) if c.earliest_commit_to_retain else "none"


_ROW_STYLE = {TableStatus.CHANGES: "yellow", TableStatus.IN_SYNC: "green", TableStatus.ERROR: "red",
              TableStatus.DRIFT: "magenta"}


def plan_table_view(plan: Plan) -> Any:
    """The terminal's one-row-per-table summary under the plan text."""
    from runner.commands.terminal import summary_table

    rows, styles = [], []
    in_sync = [t for t in plan.tables if t.status is TableStatus.IN_SYNC]
    folded = len(in_sync) > MAX_FILES_SHOWN  # as in the text: one row for them, not hundreds
    for t in plan.tables:
        if folded and t.status is TableStatus.IN_SYNC:
            continue
        clean = t.clean if t.clean is not None and t.status is not TableStatus.ERROR else None
        sizing = t.sizing if t.sizing is not None and t.status is not TableStatus.ERROR else None
        rewrite = sum(len(g.files) for g in sizing.groups) if sizing else 0
        rows.append([
            t.name, t.status.value.replace("_", " "),
            f"{len(clean.files_to_delete):,}" if clean else "", human_bytes(clean.bytes_to_reclaim) if clean else "",
            f"{rewrite:,}" if sizing else "",
        ])
        styles.append(_ROW_STYLE.get(t.status, ""))
    if folded:
        rows.append([f"({count(len(in_sync), 'table')})", "in sync", "0", "0 B", ""])
        styles.append(_ROW_STYLE[TableStatus.IN_SYNC])
    return summary_table("Plan", ["table", "status", "files to delete", "reclaimed", "files to rewrite"],
                         rows, styles=styles)
