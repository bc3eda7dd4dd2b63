"""Apply one table's plan: lock, re-plan, re-check, then run each step's handler in order.

Each step kind of the plan (`runner.plan.steps`) has one handler here (`HANDLERS`). Safety rules
enforced here, whatever plan.json says:
- the table's timeline must be the one the plan was computed from (else fail);
- a saved plan only narrows a fresh plan computed under the lock with the real clock: it selects
  which of the fresh plan's files, partitions and rewrite groups to act on, and everything written
  to the timeline or the run report (policy, earliest commit to retain, savepoints, sizes, file
  ids, the metadata-table step) comes from the fresh plan (`runner.execute.narrow`), and work the
  saved plan never showed (a pending clean or metadata table that appeared since, an interrupted
  resize it does not list) is refused;
- a pending clean from the timeline is checked against what the planner protects, and may not
  reach into a nested table (`_refuse_needed_files`);
- `now` may not lie in the future;
- the metadata-table decision is the fresh plan's step: `update_metadata_table` records every clean
  in it (refused with the planner's reasons when that is not safe), `disable_metadata_table`
  removes it first. Handlers trust the step rather than deciding again.
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from runner.allocation import bulk_allocation, collecting
from runner.declarations.model import SparkSettings, TableDeclaration
from runner.errors import RefusedError, RequirementFailed, RunnerError
from runner.execute.clean import (
    CleanOutcome,
    CleanRunner,
    Deleter,
    HistoryCheck,
    files_of,
    refuse_links_out,
    refuse_scheme_partitions,
)
from runner.execute.metadata_table import disable_metadata_table
from runner.execute.narrow import PendingClean, narrow, refuse_unreviewed
from runner.execute.paths import partition_path
from runner.failpoints import failpoint
from runner.hudi.files import FileGroup, FileSlice, relative_path
from runner.hudi.instant import Action, InstantTime
from runner.hudi.metadata import CleanPlan
from runner.hudi.pending_undo import history_moved
from runner.hudi.state import TableMetadata, read_table_metadata, read_table_state, read_timeline
from runner.hudi.timeline_writer import TimelineWriter, new_instant_time
from runner.plan.build import timeline_fingerprint
from runner.plan.clean import savepoint_reads
from runner.plan.model import TablePlan, TableStatus
from runner.plan.policies import Protection
from runner.plan.sizing import plan_sizing
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
from runner.planner import plan_one
from runner.spark_jobs import executors_seen
from runner.storage import Storage, storage_for
from runner.storage.lock import TableLock

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runner.execute.resize_engine import SparkOnDemand
    from runner.hudi.mdt.maintain import CleanMaintenance

__all__ = ["HANDLERS", "TableResult", "apply_table"]


@dataclass
class TableResult:
    """What apply did to one table; serialised into target/run_results.json.

    `status` is the plan's status enum: in_sync, success or error.
    """

    name: str
    path: str
    status: TableStatus = TableStatus.IN_SYNC
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

    @classmethod
    def failed(cls, name: str, path: str, error: RunnerError) -> TableResult:
        return cls(name, path, status=TableStatus.ERROR, error=error.to_json())

    def fail(self, error: RunnerError) -> TableResult:
        """This result, marked failed with `error`; what it records as done so far stays."""
        self.status = TableStatus.ERROR
        self.error = error.to_json()
        return self

    @property
    def changed_anything(self) -> bool:
        return bool(self.files_deleted or self.files_rewritten or self.instants_written or self.partitions_deleted)

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "status": TableStatus(self.status).value}


def apply_table(
    decl: TableDeclaration,
    planned: TablePlan | None,
    *,
    now: datetime,
    spark_settings: SparkSettings,
    deleter_factory: Callable[[], Deleter],
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    spark: Callable[[], SparkSession] | None = None,
    into: TableResult | None = None,
) -> TableResult:
    """Apply `planned` (from plan.json) or, when None, plan and apply in one go under the lock.

    `into`: the result to fill as the steps complete. A step that fails raises, and what the
    steps before it did (a completed clean's deletes and instants, a rolled-back resize's note)
    is then still in `into`, for the report: the error alone would read as if nothing changed.

    `now` is the plan's or `--now`'s time. It may lie in the past (a KEEP_LATEST_BY_HOURS window
    measured from then keeps more), never in the future (it would delete files inside the window).
    A saved plan is re-planned under the lock with the real clock and only narrows that plan.
    `spark` returns the session for rewrites (default: `get_spark(spark_settings)`).
    """
    # The collector stays paused for the whole table (`bulk_allocation`): planning, the clean's
    # records and the delete results are a few acyclic objects per file, and each time the collector
    # came back between those steps it walked everything the step had left alive (three
    # collections, 44-80 ms of CPU per 40,100-file clean; bench/README.md, "clean: the in-process
    # round"). By the end of this call they are freed. Steps that run for minutes with garbage of
    # their own (a rewrite, a Spark delete job) turn it back on (`collecting`).
    with executors_seen() as seen, bulk_allocation():
        result = _apply_table(decl, planned, now=now, spark_settings=spark_settings,
                              deleter_factory=deleter_factory, clock=clock, spark=spark,
                              result=into or TableResult(decl.name, decl.path))
    result.executors = sorted(seen)
    return result


@dataclass
class _Run:
    """One table's apply in progress: what the handlers share."""

    decl: TableDeclaration
    storage: Storage
    meta: TableMetadata
    result: TableResult
    deleter_factory: Callable[[], Deleter]
    clock: Callable[[], datetime]
    plan_now: datetime
    spark_settings: SparkSettings
    spark_factory: Callable[[], SparkSession] | None
    maintenance: CleanMaintenance | None = None
    finished_cleans: bool = False
    finished_resize: bool = False
    _deleter: Deleter | None = None
    _cleaner: CleanRunner | None = None

    def deleter(self) -> Deleter:
        """The table's deleter, made on first call (making it may start Spark)."""
        if self._deleter is None:
            self._deleter = self.deleter_factory()
        return self._deleter

    @property
    def cleaner(self) -> CleanRunner:
        # Built on first use, after the metadata-table step decided how cleans are recorded.
        if self._cleaner is None:
            self._cleaner = _runner(self.storage, self.meta, self.deleter(), self.clock, self.maintenance,
                                    # against the table read under the lock, which the plan was made from
                                    history=lambda: history_moved(self.storage, self.meta, savepoints=True))
        return self._cleaner

    def spark_on_demand(self) -> SparkOnDemand:
        """The session for a rewrite, started only if the rewrite runs on Spark (not on a local master)."""
        from runner.execute.resize_engine import SparkOnDemand

        return SparkOnDemand(self.spark_settings, self.spark)

    def spark(self) -> SparkSession:
        if self.spark_factory is not None:
            return self.spark_factory()
        from runner.execute.spark import get_spark

        return get_spark(self.spark_settings)


def _apply_table(
    decl: TableDeclaration,
    planned: TablePlan | None,
    *,
    now: datetime,
    spark_settings: SparkSettings,
    deleter_factory: Callable[[], Deleter],
    clock: Callable[[], datetime],
    spark: Callable[[], SparkSession] | None,
    result: TableResult,
) -> TableResult:
    real_now = clock()
    _refuse_future(decl.name, now, real_now)
    storage = storage_for(decl.path)
    started = time.monotonic()
    plan_now = real_now if planned is not None else now
    with TableLock(storage, owner=f"runner apply ({getpass.getuser()})"):
        failpoint("after_lock")
        meta = read_table_metadata(storage)
        fresh = plan_one(decl, storage, now=plan_now, metadata=meta, explain=False)
        plan = _checked(planned, fresh, meta, storage) if planned is not None else fresh
        if not plan.has_work:  # in sync, or drift, which is for a person, not apply
            result.duration_s = round(time.monotonic() - started, 3)
            return result
        run = _Run(decl, storage, meta, result, deleter_factory, clock, plan_now, spark_settings, spark)
        for kind, handler in HANDLERS.items():
            step = plan.step(kind)
            if step is not None and not step.is_empty:
                handler(step, run)
            if kind is StepKind.UPDATE_METADATA_TABLE:
                # Once the metadata table is settled (a refusal must not wait for Spark to start),
                # whatever steps follow: `runner apply` shows its progress from here.
                run.deleter()
            elif kind is StepKind.FINISH_PENDING_CLEAN:
                failpoint("after_pending_finished")
            elif kind is StepKind.CLEAN:  # which engine deleted (threads or Spark)
                result.notes.extend(getattr(run.deleter(), "notes", ()))
        result.status = TableStatus.SUCCESS
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
    plan = narrow(planned, fresh, exists=lambda path: storage.stat(path) is not None, replaced=meta.replaced,
                  savepoint_reads=_savepoint_reads(storage, meta))
    refuse_unreviewed(planned, plan, _pending_clean_paths(meta, storage))
    return replace(plan, status=TableStatus.CHANGES if plan.has_work else TableStatus.IN_SYNC)


def _pending_clean_paths(meta: TableMetadata, storage: Storage) -> dict[str, PendingClean]:
    """What each pending clean on the timeline deletes: (files, partitions), canonical."""
    found: dict[str, PendingClean] = {}
    for instant, clean_plan in meta.pending_cleans:
        if clean_plan is not None:
            files = files_of(clean_plan, storage.uri)
            found[str(instant.time)] = ([f for paths in files.values() for f in paths],
                                        [partition_path(p) for p in clean_plan.partitions_to_delete])
    return found


def _disable_metadata_table(step: DisableMetadataTable, run: _Run) -> None:
    disable_metadata_table(run.storage, run.meta)
    # The table the later steps are checked against (`history_moved`) is the one this step left.
    config = replace(run.meta.config, metadata_partitions=(), metadata_partitions_inflight=())
    run.meta = replace(run.meta, config=config, has_metadata_table=False)
    run.result.notes.append("disabled the metadata table before cleaning")


def _update_metadata_table(step: UpdateMetadataTable, run: _Run) -> None:
    """Check the metadata table and install the hook that records each clean in it."""
    if step.refusals:
        raise RefusedError(
            f"{run.storage.uri}: the runner will not clean this table while keeping its metadata table, because "
            + "; ".join(step.refusals),
            hint="run a Hudi write or `hudi-cli metadata` to let Hudi settle its metadata table, or set "
            "`metadata_table: disable` to remove it (readers then list files; indexes are lost).",
        )
    resuming = frozenset(str(i.time) for i, p in run.meta.pending_cleans if p is not None)
    from runner.hudi.mdt.maintain import prepare_clean_maintenance  # heavy (numpy, pyarrow): MDT tables only

    run.maintenance = prepare_clean_maintenance(run.storage, run.meta, resuming=resuming, step=failpoint)


def _finish_pending_cleans(step: FinishPendingClean, run: _Run) -> None:
    pending = {str(instant.time): (instant, plan) for instant, plan in run.meta.pending_cleans if plan is not None}
    for time_ in step.instants:
        instant, pending_plan = pending[time_]
        _refuse_needed_files(run.storage, run.meta, time_, pending_plan)
        _record(run.result, run.cleaner.finish(instant, pending_plan))
    run.finished_cleans = True


def _clean(step: Clean, run: _Run) -> None:
    if run.finished_cleans:  # what the pending cleans removed is no longer ours to delete
        narrowed = _narrowed(step, plan_one(run.decl, run.storage, now=run.plan_now, explain=False), run.storage)
        if narrowed is None:
            return
        step = narrowed
    refuse_scheme_partitions(step, run.storage.uri)  # as `runner plan` refuses it, in the table's terms
    _, timeline, _ = read_timeline(run.storage)
    start = new_instant_time(timeline, clock=run.clock(), table_timezone=run.meta.config.timezone)
    inflight, clean_plan = run.cleaner.start(start, step)
    sizes = {f.path: f.size for f in step.files_to_delete}
    _record(run.result, run.cleaner.finish(inflight, clean_plan, sizes=sizes, withdraw=True), started=str(start))


def _finish_pending_resizes(step: FinishPendingResize, run: _Run) -> None:
    """Finish (or roll back) the resizes a crash interrupted."""
    from runner.execute.resize import finish_pending_resize

    with collecting():  # a rewrite: see apply_table
        finished = finish_pending_resize(run.storage, read_table_metadata(run.storage), spark=run.spark_on_demand(),
                                         clock=run.clock, max_tasks=run.decl.spark.resize_partitions,
                                         roll_back=step.why or RESIZES_NOT_ASKED if step.roll_back else None)
    if finished is not None:
        _record_resize(run.result, finished)
        run.finished_resize = True


def _resize(step: Resize, run: _Run) -> None:
    """Rewrite the plan's small files as a clustering."""
    from runner.execute.resize import run_resize

    meta = read_table_metadata(run.storage)
    if run.finished_resize:  # the finished resize may have taken some of these files
        step = _still_rewritable(step, plan_sizing(run.decl.file_sizing, read_table_state(run.storage, metadata=meta)))
    tasks = run.decl.spark.resize_partitions  # the table's own bound on the rewrite job's tasks
    with collecting():  # a rewrite: see apply_table
        outcome = run_resize(run.storage, meta, step, spark=run.spark_on_demand(), clock=run.clock, max_tasks=tasks)
    _record_resize(run.result, outcome)


Handler = Callable[[Any, _Run], None]

# One handler per step kind, in the order apply runs them (`runner.plan.steps.STEP_ORDER`).
HANDLERS: dict[StepKind, Handler] = {
    StepKind.DISABLE_METADATA_TABLE: _disable_metadata_table,
    StepKind.UPDATE_METADATA_TABLE: _update_metadata_table,
    StepKind.FINISH_PENDING_CLEAN: _finish_pending_cleans,
    StepKind.CLEAN: _clean,
    StepKind.FINISH_PENDING_RESIZE: _finish_pending_resizes,
    StepKind.RESIZE: _resize,
}


def _refuse_needed_files(storage: Storage, meta: TableMetadata, instant: str, plan: CleanPlan) -> None:
    """Refuse a pending clean from the timeline that would delete what readers still need.

    Hudi's planner never lists a latest slice of an active file group, a savepointed file, a slice
    a pending (log) compaction reads or a file no completed write has committed, but a pending plan
    may be older than the table's present (or hand-written), so it is checked against the table as
    it is now, with the planner's own protections, before any of it runs. A pending compaction
    gives its group a new, empty latest slice; the slice it reads stays what readers merge until it
    completes, hence protected by `Protection.needed_for_compaction`, not by being latest.
    """
    files = files_of(plan, storage.uri)
    _refuse_nested_tables(storage, instant, [*files, *plan.partitions_to_delete])
    refuse_links_out(storage, [p for paths in files.values() for p in paths], f"pending clean {instant}")
    listed = {path for paths in files.values() for path in paths}
    state = read_table_state(storage, partitions=[partition_path(p) for p in files], metadata=meta)
    protected = Protection(state)
    why: dict[str, str] = {}
    for group in state.file_groups:
        for file_slice in group.slices:
            reason = _why_needed(group, file_slice, protected, active=group.key not in meta.replaced)
            if reason is not None:
                why.update((relative_path(group.partition, name), reason) for name in file_slice.file_names)
    why.update((path, "a file of a write not committed yet (it may still commit)") for path in state.uncommitted_files)
    hit = sorted(listed.intersection(why))
    if hit:
        raise RefusedError(
            f"pending clean {instant} on {storage.uri} would delete {len(hit)} file(s) readers still need, "
            f"e.g. {hit[0]} ({why[hit[0]]}); nothing was deleted",
            hint="check who wrote this clean plan; remove the pending clean only after making sure no data "
            "is lost, or let Hudi's own cleaner decide.",
        )


def _refuse_nested_tables(storage: Storage, instant: str, partitions: list[str]) -> None:
    """Refuse a pending clean reaching into a table nested in this one: Hudi's file-system listing
    takes any folder with `.hoodie_partition_metadata` for a partition, the inner table's too, but
    those files are the inner table's, whose slices this table's timeline knows nothing about."""
    folders: set[str] = set()
    for partition in partitions:
        parts = partition_path(partition).split("/")
        if parts[0]:  # the table root is this table's own
            folders.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    nested = sorted(f for f in folders if storage.stat(f"{f}/.hoodie") is not None)
    if nested:
        raise RefusedError(
            f"pending clean {instant} on {storage.uri} reaches into {nested[0]}, a nested table with its own "
            ".hoodie folder, whose files are not this table's to delete; nothing was deleted",
            hint="check who wrote this clean plan; clean the nested table through its own declaration.",
        )


def _why_needed(group: FileGroup, file_slice: FileSlice, protected: Protection, *, active: bool) -> str | None:
    if active and file_slice is group.latest:
        return "the latest file slice"
    if protected.needed_for_compaction(group, file_slice):
        return "a file slice a pending compaction reads"
    if protected.savepointed_slice(file_slice):
        return "a savepointed file slice"
    return None


def _narrowed(step: Clean, fresh: TablePlan, storage: Storage) -> Clean | None:
    """The clean minus what is already done, after pending cleans ran (values from `fresh`)."""
    meta = read_table_metadata(storage)
    narrowed = narrow(TablePlan(fresh.name, fresh.path, TableStatus.CHANGES, steps=(step,)),
                      fresh.with_steps(without=(StepKind.RESIZE,)), exists=lambda _: False,
                      replaced=meta.replaced, savepoint_reads=_savepoint_reads(storage, meta))
    return narrowed.clean


def _savepoint_reads(storage: Storage, meta: TableMetadata) -> Callable[[InstantTime, Collection[str]], frozenset[str]]:
    """What a savepoint from an instant on reads in some partitions, listed only when asked (a
    narrowed clean that keeps replaced groups)."""
    return lambda bound, partitions: savepoint_reads(
        read_table_state(storage, partitions=partitions, metadata=meta), bound)


def _still_rewritable(step: Resize, fresh: Resize | None) -> Resize:
    """The groups of `step` whose every input a fresh plan would still rewrite (never more)."""
    candidates = {f.path for g in (fresh.groups if fresh else ()) for f in g.files}
    return replace(step, groups=tuple(g for g in step.groups if all(f.path in candidates for f in g.files)))


def _record_resize(result: TableResult, outcome: Any) -> None:
    result.notes.extend(outcome.notes)
    result.instants_written.extend(outcome.instants_written)
    result.files_rewritten += outcome.files_rewritten
    result.bytes_rewritten += outcome.bytes_rewritten


def _runner(storage: Storage, meta: TableMetadata, deleter: Any, clock: Callable[[], datetime],
            maintenance: CleanMaintenance | None = None, history: HistoryCheck | None = None) -> CleanRunner:
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

    known = frozenset(i.time.normalized for i in meta.timeline.instants if i.family is Action.REPLACE_COMMIT)
    return CleanRunner(storage, writer, deleter, completion_time=completion, before_complete=maintenance,
                       history=history, before_deletes=maintenance.ahead if maintenance is not None else None,
                       known_replaces=known)


def _record(result: TableResult, outcome: CleanOutcome, *, started: str | None = None) -> None:
    result.instants_written.extend(outcome.instants_written if started is None else
                                   [f"{started}.clean.requested", f"{started}.clean.inflight",
                                    *outcome.instants_written])
    result.files_deleted += outcome.files_deleted
    result.bytes_deleted += outcome.bytes_deleted
    result.files_already_gone += outcome.files_already_gone
    result.partitions_deleted.extend(outcome.partitions_deleted)
    if outcome.left_pending:
        raise RunnerError(
            f"clean {outcome.instant}: {len(outcome.left_pending)} file(s) of replaced file groups could not be "
            f"deleted, e.g. {outcome.left_pending[0]}; expected each deleted, since Hudi's archiver takes the groups "
            "a completed clean was planned to delete for cleaned and may then archive the replacecommit hiding "
            f"them (readers would read their records twice); clean {outcome.instant} is left pending "
            "(requested and inflight), not completed; the other files it lists were deleted",
            hint="fix what refused the delete (permissions, a retention lock), then apply again: it finishes "
            "the pending clean.")
    if outcome.failed:
        raise RunnerError(f"clean {outcome.instant}: {len(outcome.failed)} file(s) could not be deleted, "
                          f"e.g. {outcome.failed[0]}; the clean is recorded with them as failed")
