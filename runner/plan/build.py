"""Assemble one table's plan from its declaration and state (pure)."""

from __future__ import annotations

import hashlib
from collections import Counter

from runner.declarations.model import MetadataTableMode, TableDeclaration
from runner.hudi.instant import Action
from runner.hudi.mdt.clustering import resize_refusals
from runner.hudi.state import TableMetadata, TableState
from runner.plan.clean import CleanScope, plan_clean
from runner.plan.model import Requirements, TablePlan, TableStatus
from runner.plan.reasons import explain_clean
from runner.plan.sizing import plan_sizing, resize_blocked_notes, small_files_note
from runner.summary import declaration_drift


def timeline_fingerprint(meta: TableMetadata) -> str:
    """Digest of every non-clean instant file: any new write, compaction, clustering, rollback or
    savepoint since planning changes it. Cleans are left out because apply writes them itself."""
    names = sorted(i.file_name for i in meta.timeline.files if i.action is not Action.CLEAN)
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:32]


def requirements(meta: TableMetadata) -> Requirements:
    return Requirements(
        timeline_fingerprint=timeline_fingerprint(meta),
        pending_cleans=tuple(str(i.time) for i, p in meta.pending_cleans if p is not None),
    )


def plan_table(decl: TableDeclaration, state: TableState, scope: CleanScope,
               mdt_refusals: tuple[str, ...] = (), *, explain: bool = True) -> TablePlan:
    """The clean and sizing steps for one table, with the requirements apply will re-check.

    `mdt_refusals`: why the table's metadata table cannot be maintained now (read by the caller).
    `explain`: give every planned file its reason and list the files protections keep, for people
    reading the plan; apply's own plans under the lock skip it (it re-derives every slice, about as
    costly as planning itself, and nothing apply writes uses it).
    """
    meta = state.metadata
    clean = plan_clean(decl.clean, state, scope)
    if explain:
        clean = explain_clean(decl.clean, state, scope, clean)
    # Rewriting data is never implied: only a declared `file_sizing` block asks for it.
    declared = decl.file_sizing_declared
    sizing = plan_sizing(decl.file_sizing, state) if declared else None
    pending = tuple(str(i.time) for i, p in meta.pending_cleans if p is not None)
    resumes = tuple(str(t) for t in meta.runner_pending_clustering)
    drift = declaration_drift(decl, state)
    changes = bool(pending or resumes) or not clean.is_empty or (sizing is not None and not sizing.is_empty)
    notes = [f"finish pending clean {t} first" for t in pending]
    if declared:
        notes += unresizable_notes(decl, state)
        notes += resize_blocked_notes(state) if sizing is not None else []
    elif info := small_files_note(decl.file_sizing, state):
        notes.append(info)
    notes += [f"finish the interrupted resize (clustering {t})" for t in resumes]
    mdt = None
    if meta.has_metadata_table:
        if decl.metadata_table is MetadataTableMode.DISABLE:
            mdt = "disable"
        else:
            mdt = "refuse" if mdt_refusals else "keep"
        if changes:
            notes.append(_MDT_NOTES[mdt] + ("; ".join(mdt_refusals) if mdt == "refuse" else ""))
        if mdt != "disable" and sizing is not None and not sizing.is_empty:
            notes.append(_resize_mdt_note(resize_refusals(meta.config)))
    return TablePlan(
        name=decl.name,
        path=decl.path,
        status=TableStatus.CHANGES if changes else TableStatus.DRIFT if drift else TableStatus.IN_SYNC,
        requirements=requirements(meta),
        clean=clean,
        sizing=sizing,
        metadata_table=mdt,
        notes=tuple(notes),
        drift=tuple(drift),
    )


def unresizable_notes(decl: TableDeclaration, state: TableState) -> list[str]:
    """Small latest base files the resize cannot rewrite, because its job writes parquet only."""
    limit = decl.file_sizing.small_file_limit
    formats = Counter(
        s.base_file.extension for g in state.active_groups
        if (s := g.latest) is not None and s.base_file is not None
        and s.base_file.extension != "parquet" and 0 <= s.base_file.size < limit
    )
    return [
        f"{number} small {extension} base file{'' if number == 1 else 's'} cannot be resized: "
        "the runner rewrites parquet base files only"
        for extension, number in sorted(formats.items())
    ]


def _resize_mdt_note(refusals: list[str]) -> str:
    if not refusals:
        return ("apply records the resize in the metadata table as Hudi records a clustering: one deltacommit "
                "with the clustering's instant time (new files, their column and partition stats, the record "
                "index's new locations), completed before the replacecommit")
    return ("apply will refuse the resize, because " + "; ".join(refusals)
            + " (run Hudi's clustering for this table, or set `metadata_table: disable` to remove the metadata table)")


_MDT_NOTES = {
    "keep": "apply records each clean in the metadata table (.hoodie/metadata) as Hudi does: one "
    "deltacommit with the clean's instant time, completed before the clean",
    "refuse": "apply will refuse, because the metadata table (.hoodie/metadata) cannot be kept in step "
    "(let Hudi settle it with its next write, or set `metadata_table: disable` to remove it): ",
    "disable": "apply will first disable the metadata table (remove .hoodie/metadata and clear "
    "hoodie.table.metadata.partitions), as Hudi does when hoodie.metadata.enable=false",
}
