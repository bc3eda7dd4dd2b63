"""Assemble one table's plan from its declaration and state (pure): one planner per step kind.

Planners run in `PLANNERS` order, each seeing the steps planned before it, and the plan lists the
steps in the order apply runs them (`runner.plan.steps.STEP_ORDER`). The metadata-table decision
is made here and only here (`metadata_table_step`); apply trusts the step it finds.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from runner.declarations.model import MetadataTableMode, TableDeclaration
from runner.hudi.bootstrap import is_skeleton
from runner.hudi.instant import Action
from runner.hudi.mdt.partitions import BLOOM_FILTERS, COLUMN_STATS, EXPRESSION_INDEX_PREFIX, FILES
from runner.hudi.state import TableMetadata, TableState
from runner.plan.clean import CleanScope, plan_clean
from runner.plan.model import Requirements, TablePlan, TableStatus, ordered
from runner.plan.reasons import explain_clean
from runner.plan.sizing import plan_sizing, resize_blocked_notes, small_files_note
from runner.plan.steps import (
    ACCOMPANYING,
    RESIZES_NOT_ASKED,
    DisableMetadataTable,
    FinishPendingClean,
    FinishPendingResize,
    Step,
    StepKind,
    UpdateMetadataTable,
)
from runner.summary import declaration_drift

CLEAN_UPDATES = (FILES, COLUMN_STATS, BLOOM_FILTERS)


@dataclass(frozen=True, slots=True)
class PlanningInput:
    """Everything a planner may look at: values only, read by the caller.

    Args:
        mdt_refusals: why the table's metadata table cannot be kept in step now (read by the
            caller only when `metadata_table_mode` says `keep`).
    """

    decl: TableDeclaration
    state: TableState
    scope: CleanScope
    mdt_refusals: tuple[str, ...] = ()
    # Give every planned file its reason and list the files protections keep, for people reading
    # the plan. Apply's own plans under the lock skip it: it re-derives every slice (about as
    # costly as planning itself) and nothing apply writes uses it.
    explain: bool = True


def timeline_fingerprint(meta: TableMetadata) -> str:
    """Digest of every non-clean instant file: any new write, compaction, clustering, rollback or
    savepoint since planning changes it. Cleans are left out because apply writes them itself."""
    names = sorted(i.file_name for i in meta.timeline.files if i.action is not Action.CLEAN)
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:32]


def requirements(meta: TableMetadata) -> Requirements:
    return Requirements(timeline_fingerprint=timeline_fingerprint(meta))


def metadata_table_mode(decl: TableDeclaration, meta: TableMetadata) -> MetadataTableMode | None:
    """What the declaration asks for this table's metadata table; None when it has none.

    The one test of "has a metadata table" for planning and apply alike.
    """
    return decl.metadata_table if meta.metadata_table_enabled else None


def plan_pending_cleans(inp: PlanningInput, _: tuple[Step, ...]) -> Step | None:
    pending = tuple(str(i.time) for i, p in inp.state.metadata.pending_cleans if p is not None)
    return FinishPendingClean(pending) if pending else None


def plan_new_clean(inp: PlanningInput, _: tuple[Step, ...]) -> Step:
    policy = inp.decl.clean
    clean = plan_clean(policy, inp.state, inp.scope)
    return explain_clean(policy, inp.state, inp.scope, clean) if inp.explain else clean


def plan_pending_resizes(inp: PlanningInput, _: tuple[Step, ...]) -> Step | None:
    resumes = tuple(str(t) for t in inp.state.metadata.runner_pending_clustering)
    if not resumes:
        return None
    # Rewriting data is never implied: without a declared resize, an interrupted one is undone.
    asked = inp.decl.file_sizing_declared and inp.decl.file_sizing.small_file_limit > 0
    why = RESIZES_NOT_ASKED if not asked else _metadata_table_rules_out_resizes(inp)
    return FinishPendingResize(resumes, roll_back=why is not None, why=why or "")


def _metadata_table_rules_out_resizes(inp: PlanningInput) -> str | None:
    """Why the metadata table kept alongside the table could not record a resize, or None. Only
    the table's own settings count here (its partitions, version, meta fields): the metadata
    table's transient states refuse the clean's step first, before any resize is touched."""
    if metadata_table_mode(inp.decl, inp.state.metadata) is not MetadataTableMode.KEEP:
        return None
    from runner.hudi.mdt.clustering import resize_refusals, will_not_resize  # only for tables with an MDT

    refusals = resize_refusals(inp.state.metadata.config)
    return f"{will_not_resize(refusals)}; so it is not finished, and no new resize runs" if refusals else None


def plan_resize(inp: PlanningInput, _: tuple[Step, ...]) -> Step | None:
    # Rewriting data is never implied: only a declared `file_sizing` block asks for it.
    if not inp.decl.file_sizing_declared:
        return None
    return plan_sizing(inp.decl.file_sizing, inp.state)


def metadata_table_step(inp: PlanningInput, planned: tuple[Step, ...]) -> Step | None:
    """Keep (record every clean in it), refuse (it cannot be kept in step now) or disable it;
    nothing when the table has none or apply has nothing else to do."""
    mode = metadata_table_mode(inp.decl, inp.state.metadata)
    if mode is None or all(s.is_empty for s in planned):
        return None
    partitions = inp.state.metadata.config.metadata_partitions
    if mode is MetadataTableMode.DISABLE:
        return DisableMetadataTable(partitions)
    # The partitions Hudi's metadata writer updates for a clean; the others map keys or
    # partitions, not files (and one the runner cannot update is among the refusals).
    updated = tuple(p for p in partitions if p in CLEAN_UPDATES or p.startswith(EXPRESSION_INDEX_PREFIX))
    return UpdateMetadataTable(updated, refusals=inp.mdt_refusals)


Planner = Callable[[PlanningInput, tuple[Step, ...]], Step | None]

# Data steps first: the metadata-table planner needs to know whether there is any work.
PLANNERS: dict[StepKind, Planner] = {
    StepKind.FINISH_PENDING_CLEAN: plan_pending_cleans,
    StepKind.CLEAN: plan_new_clean,
    StepKind.FINISH_PENDING_RESIZE: plan_pending_resizes,
    StepKind.RESIZE: plan_resize,
    StepKind.UPDATE_METADATA_TABLE: metadata_table_step,  # decides DISABLE_METADATA_TABLE too
}


def plan_steps(inp: PlanningInput) -> tuple[Step, ...]:
    steps: list[Step] = []
    for planner in PLANNERS.values():
        step = planner(inp, tuple(steps))
        if step is not None:
            steps.append(step)
    return ordered(steps)


def plan_table(decl: TableDeclaration, state: TableState, scope: CleanScope,
               mdt_refusals: tuple[str, ...] = (), *, explain: bool = True) -> TablePlan:
    """The steps for one table, with the notes and the requirements apply will re-check.

    `explain=False` leaves out the per-file reasons (see `PlanningInput.explain`).
    """
    steps = plan_steps(PlanningInput(decl, state, scope, mdt_refusals, explain))
    drift = declaration_drift(decl, state)
    changes = any(not s.is_empty and s.kind not in ACCOMPANYING for s in steps)
    resize = next((s for s in steps if s.kind is StepKind.RESIZE), None)
    notes: list[str] = []
    if decl.file_sizing_declared:
        notes += unresizable_notes(decl, state)
        notes += resize_blocked_notes(state) if resize is not None else []
    elif info := small_files_note(decl.file_sizing, state):
        notes.append(info)
    mdt = metadata_table_mode(decl, state.metadata)
    if mdt is MetadataTableMode.KEEP and resize is not None and not resize.is_empty:
        from runner.hudi.mdt.clustering import resize_refusals  # only for tables with an MDT

        notes.append(_resize_mdt_note(resize_refusals(state.metadata.config)))
    return TablePlan(
        name=decl.name,
        path=decl.path,
        status=TableStatus.CHANGES if changes else TableStatus.DRIFT if drift else TableStatus.IN_SYNC,
        requirements=requirements(state.metadata),
        steps=steps,
        notes=tuple(notes),
        drift=tuple(drift),
    )


def unresizable_notes(decl: TableDeclaration, state: TableState) -> list[str]:
    """Small latest base files the resize cannot rewrite: its job writes parquet only, and a
    metadata-only bootstrap's skeletons hold keys without their records' data."""
    limit = decl.file_sizing.small_file_limit
    small = [s.base_file for g in state.active_groups
             if (s := g.latest) is not None and s.base_file is not None and 0 <= s.base_file.size < limit]
    formats = Counter(base.extension for base in small if base.extension != "parquet")
    notes = [
        f"{number} small {extension} base file{'' if number == 1 else 's'} cannot be resized: "
        "the runner rewrites parquet base files only"
        for extension, number in sorted(formats.items())
    ]
    skeletons = sum(1 for base in small if base.extension == "parquet" and is_skeleton(base))
    if skeletons:
        notes.append(f"{skeletons} small skeleton base file{'' if skeletons == 1 else 's'} of Hudi's metadata-only "
                     "bootstrap cannot be resized: readers take their records' data columns from the bootstrap "
                     "source files, which a rewrite would not carry over (Hudi's clustering can rewrite them)")
    return notes


def _resize_mdt_note(refusals: list[str]) -> str:
    if not refusals:
        return ("apply records the resize in the metadata table as Hudi records a clustering: one deltacommit "
                "with the clustering's instant time (new files, their column and partition stats and bloom "
                "filters, the record index's new locations), completed before the replacecommit")
    return ("apply will refuse the resize, because " + "; ".join(refusals)
            + " (run Hudi's clustering for this table, or set `metadata_table: disable` to remove the metadata table)")
