"""Plan one table from storage: read what its declaration needs, then plan it (pure).

The one place that turns a table on storage into a `TablePlan`: `runner plan` (through the
service layer) and apply, under the table's lock, both call `plan_one`, so a saved plan and the
fresh plan it narrows are made the same way.
"""

from __future__ import annotations

from datetime import datetime

from runner.allocation import bulk_allocation
from runner.declarations.model import MetadataTableMode, TableDeclaration
from runner.execute.clean import refuse_replaced_behind_links
from runner.hudi.pending_undo import refuse_pending_undo
from runner.hudi.state import TableMetadata, read_table_metadata, read_table_state
from runner.plan.build import metadata_table_mode, plan_table
from runner.plan.clean import clean_scope
from runner.plan.model import TablePlan
from runner.storage import Storage


def plan_one(decl: TableDeclaration, storage: Storage, *, now: datetime,
             metadata: TableMetadata | None = None, explain: bool = True) -> TablePlan:
    """Read what the declaration needs and plan it (incremental listing when sizing is off);
    `explain=False` leaves out the per-file reasons, which only people read (see `plan_table`)."""
    with bulk_allocation():  # a large table makes a few objects per file here, none in a cycle
        return _plan_one(decl, storage, now=now, metadata=metadata, explain=explain)


def _plan_one(decl: TableDeclaration, storage: Storage, *, now: datetime,
              metadata: TableMetadata | None, explain: bool) -> TablePlan:
    meta = metadata or read_table_metadata(storage)
    refuse_pending_undo(storage, meta)  # a rollback of a completed write changes which slices are latest
    scope = clean_scope(decl.clean, meta, now=now)
    needs_full = decl.file_sizing.small_file_limit > 0 or scope.partitions is None
    state = read_table_state(storage, partitions=None if needs_full else scope.partitions, metadata=meta)
    refusals: tuple[str, ...] = ()
    if metadata_table_mode(decl, meta) is MetadataTableMode.KEEP:
        resuming = frozenset(str(i.time) for i, p in meta.pending_cleans if p is not None)
        from runner.hudi.mdt.maintain import refusal_reasons  # heavy (numpy, pyarrow): MDT tables only

        refusals = tuple(refusal_reasons(storage, meta, resuming=resuming))
        if not refusals:  # a readable MDT in step with the timeline: does it list what storage holds?
            from runner.hudi.mdt.check import listing_problems

            refusals = tuple(listing_problems(storage, state))
    plan = plan_table(decl, state, scope, refusals, explain=explain)
    if plan.clean is not None:
        refuse_replaced_behind_links(storage, meta.replaced, plan.clean)
    return plan
