"""Apply one table's plan: lock, re-check, finish pending cleans, clean, resize, record.

Safety rules enforced here, whatever plan.json says:
- the table's timeline must be the one the plan was computed from (else fail, or re-plan when
  planning and applying in one run);
- a saved plan only narrows a fresh plan computed under the lock with the real clock: it selects
  which of the fresh plan's files, partitions and rewrite groups to act on, and everything written
  to the timeline or the run report (policy, earliest commit to retain, savepoints, sizes, file
  ids) comes from the fresh plan (`runner.execute.narrow`);
- `now` may not lie in the future;
- a table with a metadata table gets every clean recorded in it (`metadata_table: keep`, the
  default), checked first and refused with the reasons when that is not safe; `disable` removes it.
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from runner.declarations.model import MetadataTableMode, SparkSettings, TableDeclaration
from runner.errors import RefusedError, RequirementFailed, RunnerError
from runner.execute.clean import CleanOutcome, CleanRunner, DeleteOutcome, files_of
from runner.execute.metadata_table import disable_metadata_table
from runner.execute.narrow import narrow
from runner.execute.paths import partition_path
from runner.failpoints import failpoint
from runner.hudi.files import relative_path
from runner.hudi.instant import InstantTime
from runner.hudi.mdt.maintain import CleanMaintenance, prepare_clean_maintenance
from runner.hudi.mdt.maintain import refusal_reasons as metadata_table_refusals
from runner.hudi.metadata import CleanPlan
from runner.hudi.state import TableMetadata, read_table_metadata, read_table_state, read_timeline
from runner.hudi.timeline_writer import TimelineWriter, new_instant_time
from runner.plan.build import plan_table, timeline_fingerprint
from runner.plan.clean import clean_scope
from runner.plan.model import SizingStep, TablePlan, TableStatus
from runner.plan.sizing import plan_sizing
from runner.spark_jobs import executors_seen
from runner.storage import Storage, storage_for
from runner.storage.lock import TableLock


@dataclass
class TableResult:
    """What apply did to one table; serialised into target/run_results.json."""

    name: str
    path: str
    status: str = "in_sync"  # in_sync | success | error
    instants_written: list[str] = field(default_factory=list)
    files_deleted: int = 0
    bytes_deleted: int = 0
    files_already_gone: int = 0
    partitions_deleted: list[str] = field(default_factory=list)
    files_rewritten: int = 0
    bytes_rewritten: int = 0
    notes: list[str] = field(default_factory=list)
    error: dict[str, str] | None = None
    executors: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def plan_one(decl: TableDeclaration, storage: Storage, *, now: datetime,
             metadata: TableMetadata | None = None, explain: bool = True) -> TablePlan:
    """Read what the declaration needs and plan it (incremental listing when sizing is off);
    `explain=False` leaves out the per-file reasons, which only people read (see `plan_table`)."""
    meta = metadata or read_table_metadata(storage)
    scope = clean_scope(decl.clean, meta, now=now)
    needs_full = decl.file_sizing.small_file_limit > 0 or scope.partitions is None
    state = read_table_state(storage, partitions=None if needs_full else scope.partitions, metadata=meta)
    refusals: tuple[str, ...] = ()
    if meta.has_metadata_table and decl.metadata_table is MetadataTableMode.KEEP:
        resuming = frozenset(str(i.time) for i, p in meta.pending_cleans if p is not None)
        refusals = tuple(metadata_table_refusals(storage, meta, resuming=resuming))
    return plan_table(decl, state, scope, refusals, explain=explain)


def apply_table(
    decl: TableDeclaration,
    planned: TablePlan | None,
    *,
    now: datetime,
    spark_settings: SparkSettings,
    deleter_factory: Callable[[], Callable[[Storage, list[str]], list[DeleteOutcome]]],
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> TableResult:
    """Apply `planned` (from plan.json) or, when None, plan and apply in one go under the lock.

    `now` is the plan's or `--now`'s time. It may lie in the past (a KEEP_LATEST_BY_HOURS window
    measured from then keeps more), never in the future (it would delete files inside the window).
    A saved plan is re-planned under the lock with the real clock and only narrows that plan.
    """
    with executors_seen() as seen:
        result = _apply_table(decl, planned, now=now, spark_settings=spark_settings,
                              deleter_factory=deleter_factory, clock=clock)
    result.executors = sorted(seen)
    return result


def _apply_table(
    decl: TableDeclaration,
    planned: TablePlan | None,
    *,
    now: datetime,
    spark_settings: SparkSettings,
    deleter_factory: Callable[[], Callable[[Storage, list[str]], list[DeleteOutcome]]],
    clock: Callable[[], datetime],
) -> TableResult:
    real_now = clock()
    _refuse_future(decl.name, now, real_now)
    storage = storage_for(decl.path)
    result = TableResult(decl.name, decl.path)
    started = time.monotonic()
    plan_now = real_now if planned is not None else now
    with TableLock(storage, owner=f"runner apply ({getpass.getuser()})"):
        failpoint("after_lock")
        meta = read_table_metadata(storage)
        fresh = plan_one(decl, storage, now=plan_now, metadata=meta, explain=False)
        plan = _checked(planned, fresh, meta, storage) if planned is not None else fresh
        if plan.status in (TableStatus.IN_SYNC, TableStatus.DRIFT):  # drift is for a person, not apply
            result.duration_s = round(time.monotonic() - started, 3)
            return result
        maintenance = _handle_metadata_table(decl, storage, meta, result)
        deleter = deleter_factory()
        runner = _runner(storage, meta, deleter, clock, maintenance)
        finished = [p for _, p in meta.pending_cleans if p is not None]
        for instant, pending_plan in meta.pending_cleans:
            if pending_plan is not None:
                _refuse_needed_files(storage, meta, str(instant.time), pending_plan)
                _record(result, runner.finish(instant, pending_plan))
        failpoint("after_pending_finished")
        if finished:  # what the pending cleans removed is no longer ours to delete
            plan = _narrowed(plan, plan_one(decl, storage, now=plan_now, explain=False))
        if plan.clean is not None and not plan.clean.is_empty:
            _, timeline, _ = read_timeline(storage)
            start = new_instant_time(timeline, clock=clock(), table_timezone=meta.config.timezone)
            inflight, clean_plan = runner.start(start, plan.clean)
            sizes = {f.path: f.size for f in plan.clean.files_to_delete}
            _record(result, runner.finish(inflight, clean_plan, sizes=sizes), started=str(start))
        result.notes.extend(getattr(deleter, "notes", ()))  # which engine deleted (threads or Spark)
        _resize(decl, storage, plan, result, spark_settings, clock)
        result.status = "success"
        # The plan's notes about what apply "will" do are replaced by what it did (see above).
        result.notes.extend(n for n in plan.notes if not n.startswith("apply will"))
    result.duration_s = round(time.monotonic() - started, 3)
    return result


def _refuse_future(name: str, now: datetime, real_now: datetime) -> None:
    aware = now if now.tzinfo else now.replace(tzinfo=UTC)
    if aware > real_now:
        raise RefusedError(
            f"table {name}: the plan's time (now) {aware.isoformat(timespec='seconds')} is later than the current "
            f"time {real_now.isoformat(timespec='seconds')}; a future time would delete files the "
            "KEEP_LATEST_BY_HOURS window keeps; nothing was changed",
            hint="plan and apply without --now (or with a time in the past).",
        )


def _checked(planned: TablePlan, fresh: TablePlan, meta: TableMetadata, storage: Storage) -> TablePlan:
    """The fresh plan narrowed to what the saved plan selects, if the timeline is unchanged.

    Files the saved plan lists that are already gone (the plan was applied before) are dropped, so
    applying the same plan twice is a no-op rather than an error.
    """
    if planned.requirements is None or planned.requirements.timeline_fingerprint != timeline_fingerprint(meta):
        raise RequirementFailed(
            f"table {planned.name}: the timeline changed since the plan was made "
            f"(expected fingerprint {planned.requirements.timeline_fingerprint if planned.requirements else None}, "
            f"found {timeline_fingerprint(meta)}); nothing was written",
            hint="run `runner plan` again and apply the new plan.",
        )
    plan = narrow(planned, fresh, exists=lambda path: storage.stat(path) is not None)
    pending_now = {str(i.time) for i, p in meta.pending_cleans if p is not None}
    status = TableStatus.CHANGES if (pending_now or _has_work(plan)) else TableStatus.IN_SYNC
    return replace(plan, status=status)


def _refuse_needed_files(storage: Storage, meta: TableMetadata, instant: str, plan: CleanPlan) -> None:
    """Refuse a pending clean from the timeline that would delete what readers still need.

    Hudi's planner never lists a latest slice of an active file group or a savepointed file, but a
    pending plan may be older than the table's present (or hand-written), so it is checked against
    the table as it is now before any of it runs.
    """
    files = files_of(plan, storage.uri)
    state = read_table_state(storage, partitions=[partition_path(p) for p in files], metadata=meta)
    needed = {relative_path(g.partition, name) for g in state.active_groups if g.latest is not None
              for name in g.latest.file_names}
    needed |= {relative_path(g.partition, name) for g in state.file_groups for s in g.slices
               for name in s.file_names if name in meta.savepointed_files}
    hit = sorted(needed.intersection(path for paths in files.values() for path in paths))
    if hit:
        raise RefusedError(
            f"pending clean {instant} on {storage.uri} would delete {len(hit)} file(s) readers still need "
            f"(a latest file slice or a savepointed file), e.g. {hit[0]}; nothing was deleted",
            hint="check who wrote this clean plan; remove the pending clean only after making sure no data "
            "is lost, or let Hudi's own cleaner decide.",
        )


def _narrowed(plan: TablePlan, fresh: TablePlan) -> TablePlan:
    """The plan minus what is already done, after pending cleans ran (values from `fresh`)."""
    if plan.clean is None:
        return plan
    narrowed = narrow(replace(plan, sizing=None), fresh, exists=lambda _: False)
    return replace(narrowed, sizing=plan.sizing, notes=plan.notes)


def _has_work(plan: TablePlan) -> bool:
    return bool((plan.clean and not plan.clean.is_empty) or (plan.sizing and not plan.sizing.is_empty))


def _resize(decl: TableDeclaration, storage: Storage, plan: TablePlan, result: TableResult,
            spark_settings: SparkSettings, clock: Callable[[], datetime]) -> None:
    """Finish a resize a crash interrupted, then rewrite the plan's small files as a clustering."""
    meta = read_table_metadata(storage)
    wanted = plan.sizing is not None and not plan.sizing.is_empty
    if not (wanted or meta.runner_pending_clustering):
        return
    from runner.execute.resize import finish_pending_resize, run_resize
    from runner.execute.spark import get_spark

    spark = get_spark(spark_settings)
    tasks = decl.spark.resize_partitions  # the table's own bound on the rewrite job's tasks
    finished = finish_pending_resize(storage, meta, spark=spark, clock=clock, max_tasks=tasks)
    if finished is not None:
        _record_resize(result, finished)
        meta = read_table_metadata(storage)
    if wanted and plan.sizing is not None:
        step = plan.sizing
        if finished is not None:  # the finished resize may have taken some of these files
            step = _still_rewritable(step, plan_sizing(decl.file_sizing, read_table_state(storage, metadata=meta)))
        _record_resize(result, run_resize(storage, meta, step, spark=spark, clock=clock, max_tasks=tasks))


def _still_rewritable(step: SizingStep, fresh: SizingStep | None) -> SizingStep:
    """The groups of `step` whose every input a fresh plan would still rewrite (never more)."""
    candidates = {f.path for g in (fresh.groups if fresh else ()) for f in g.files}
    return replace(step, groups=tuple(g for g in step.groups if all(f.path in candidates for f in g.files)))


def _record_resize(result: TableResult, outcome: Any) -> None:
    result.notes.extend(outcome.notes)
    result.instants_written.extend(outcome.instants_written)
    result.files_rewritten += outcome.files_rewritten
    result.bytes_rewritten += outcome.bytes_rewritten


def _handle_metadata_table(decl: TableDeclaration, storage: Storage, meta: TableMetadata,
                           result: TableResult) -> CleanMaintenance | None:
    """`keep`: check the metadata table and return the hook that records each clean in it."""
    if not meta.has_metadata_table:
        return None
    if decl.metadata_table is not MetadataTableMode.DISABLE:
        resuming = frozenset(str(i.time) for i, p in meta.pending_cleans if p is not None)
        return prepare_clean_maintenance(storage, meta, resuming=resuming, step=failpoint)
    disable_metadata_table(storage, meta)
    result.notes.append("disabled the metadata table before cleaning")
    return None


def _runner(storage: Storage, meta: TableMetadata, deleter: Any, clock: Callable[[], datetime],
            maintenance: CleanMaintenance | None = None) -> CleanRunner:
    writer = TimelineWriter(storage, meta.timeline_folder, meta.config.timeline_layout_version)
    last: list[InstantTime] = []

    def completion() -> Any:
        # Strictly increasing across calls: the metadata table's deltacommit must complete before
        # the data instant of the same time, even within one millisecond.
        _, timeline, _ = read_timeline(storage)
        value = new_instant_time(timeline, clock=clock(), table_timezone=meta.config.timezone)
        if last and value <= last[-1]:
            value = InstantTime(last[-1].normalized[:17]).plus_millis(1)
        last.append(value)
        return value

    return CleanRunner(storage, writer, deleter, completion_time=completion, before_complete=maintenance)


def _record(result: TableResult, outcome: CleanOutcome, *, started: str | None = None) -> None:
    result.instants_written.extend(outcome.instants_written if started is None else
                                   [f"{started}.clean.requested", f"{started}.clean.inflight",
                                    *outcome.instants_written])
    result.files_deleted += outcome.files_deleted
    result.bytes_deleted += outcome.bytes_deleted
    result.files_already_gone += outcome.files_already_gone
    result.partitions_deleted.extend(outcome.partitions_deleted)
    if outcome.failed:
        raise RunnerError(f"clean {outcome.instant}: {len(outcome.failed)} file(s) could not be deleted, "
                          f"e.g. {outcome.failed[0]}; the clean is recorded with them as failed")
