"""Runs a sizing step as a Hudi clustering: small base files rewritten into full-size ones.

Timeline, as Hudi writes a clustering (`hudi-format.md` §8):
- table version 6: `T.replacecommit.requested` (the plan) → `T.replacecommit.inflight` (empty) →
  `T.replacecommit` (JSON `HoodieReplaceCommitMetadata`);
- versions 8 and 9: `T.clustering.requested` → `T.clustering.inflight` (empty) →
  `T_C.replacecommit` (Avro).
The completed metadata has operation type `CLUSTER`, one write stat per new file (prevCommit
"null", numWrites = numInserts = rows, totalWriteBytes = fileSizeInBytes = the file's size, as
`HoodieRowCreateHandle` records them), the writer schema of the latest commit under `schema`, and
`partitionToReplaceFileIds` = every input file id.

On a table with a metadata table (MDT), the resize is recorded there as Hudi records a clustering
(`runner.hudi.mdt.clustering`): after the new files are written and before the replacecommit
completes, an MDT deltacommit with the same instant time adds the new files, their column and
partition stats and the record index's new locations. Readers ignore that deltacommit until the
replacecommit completes.

Readers see one consistent snapshot throughout: files named with T belong to a pending instant
and are ignored until the replacecommit exists, and from then on the input file groups are replaced
and the new ones are read. The rows are the same, only `_hoodie_file_name` differs (and not even
that on a table without meta fields, whose meta columns are kept as they are).

Crash safety: the plan carries the runner's marker (`resize_plan`). If the process dies after the
requested file, at any point of the rewrite, or before the completed file, the instant stays
pending; `finish_pending_resize` deletes whatever files the dead run wrote with T and executes the
same plan again, MDT deltacommit included: one that an earlier attempt completed names that
attempt's files, so it is taken back first (`undo_mdt_commit`), and a rolled-back resize takes its
MDT deltacommit with it before its own instant goes. Before completing, files named with T that
the job did not report (leftovers of failed or retried task attempts) are deleted, as Hudi's
marker reconciliation does, so exactly the reported files become visible.

A rewrite that fails while the process lives (a torn input file, a type no file can take, a worker
killed) rolls the instant back at once instead: left pending, it would make Hudi writers reject
every update of its file groups (`SparkRejectUpdateStrategy`) and hold back Hudi's cleaning and
archival, and a cause that does not go away would keep it pending for good.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import runner.progress as progress
from runner.errors import RefusedError, RunnerError, StepFailed
from runner.execute.attempt_fence import AttemptStorage, end_attempts, start_attempt
from runner.execute.resize_copy import BINARY_COPY, REWRITE
from runner.execute.resize_engine import EngineChoice, SparkOnDemand, choose_engine, run_in_driver, session_of
from runner.execute.resize_job import GroupRewrite, RewriteTask, RewrittenFile
from runner.execute.resize_plan import (
    PlannedGroup,
    decode_plan,
    encode_plan,
    groups_of_step,
    is_runner_plan,
    strategy_of_plan,
)
from runner.failpoints import failpoint
from runner.hudi.bootstrap import is_skeleton, skeleton_refusal
from runner.hudi.bucket_index import new_file_id
from runner.hudi.files import BaseFile, relative_path
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.mdt.maintain import ResizedFile, ResizeMaintenance, prepare_resize_maintenance, undo_mdt_commit
from runner.hudi.metadata import CLUSTER, CommitMetadata, WriteStat, decode_requested_replace, encode_commit_metadata
from runner.hudi.pending_undo import history_moved, rollbacks_of
from runner.hudi.state import TableMetadata, read_table_metadata, read_table_state, read_timeline
from runner.hudi.timeline_writer import TimelineWriter, new_instant_time
from runner.plan.model import SizingStep
from runner.plan.sizing import busy_groups, resize_refusal
from runner.spark_jobs import MAX_TASKS, run_tasks
from runner.storage import Storage
from runner.vocabulary import TableType

# A rewrite job larger than the task bound runs in about this many rounds, so its progress moves.
REWRITE_ROUNDS = 10

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class ResizeOutcome:
    """What one or more clustering instants did.

    Args:
        instants: requested times of the clustering instants executed.
        instants_written: timeline files created, in order.
        files_rewritten: input base files replaced.
        bytes_rewritten: their total size.
        output_files: the new base files, relative to the base path.
        bytes_written: their total size.
        records_written: rows in the new files (equal to the rows replaced).
        partial_files_deleted: files of a crashed or retried attempt that were removed.
        notes: interrupted resizes rolled back because the table changed meanwhile.
    """

    instants: tuple[str, ...] = ()
    instants_written: tuple[str, ...] = ()
    files_rewritten: int = 0
    bytes_rewritten: int = 0
    output_files: tuple[str, ...] = ()
    bytes_written: int = 0
    records_written: int = 0
    partial_files_deleted: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = ()

    def __add__(self, other: ResizeOutcome) -> ResizeOutcome:
        return ResizeOutcome(
            self.instants + other.instants,
            self.instants_written + other.instants_written,
            self.files_rewritten + other.files_rewritten,
            self.bytes_rewritten + other.bytes_rewritten,
            self.output_files + other.output_files,
            self.bytes_written + other.bytes_written,
            self.records_written + other.records_written,
            self.partial_files_deleted + other.partial_files_deleted,
            self.notes + other.notes,
        )


def run_resize(storage: Storage, meta: TableMetadata, step: SizingStep, *,
               spark: SparkSession | SparkOnDemand, clock: Clock, max_tasks: int | None = None) -> ResizeOutcome:
    """Schedule and execute `step` as one clustering instant (nothing is written for an empty step).

    Args:
        storage: rooted at the table's base path; the caller holds the table lock.
        meta: the table's metadata, read under the lock.
        step: the groups to rewrite, planned from that metadata.
        spark: the session whose master decides the engine (`runner.execute.resize_engine`): the
            driver's threads on a local master, one Spark task per group otherwise; a
            `SparkOnDemand` is started only if Spark is chosen.
        clock: the wall clock, for the instant and completion times.
        max_tasks: the table's `spark.resize_partitions`: at most this many tasks share the groups
            (None: one task per group, up to `runner.spark_jobs.MAX_TASKS`).

    Raises:
        RefusedError: the table's metadata table cannot be kept in step, or an input is no longer a
            rewritable latest base file; nothing was written.
        StepFailed: the rewrite job failed; the clustering was rolled back (nothing was replaced).
    """
    if step.is_empty:
        return ResizeOutcome()
    runner = ResizeRunner(storage, meta, spark=spark, clock=clock, max_tasks=max_tasks)
    runner.check(step)
    pending, written = runner.schedule(step)
    with progress.known_sizes({f.path: f.size for g in step.groups for f in g.files}):
        return runner.execute(pending, groups_of_step(step), written=written, strategy=str(step.strategy))


def finish_pending_resize(storage: Storage, meta: TableMetadata, *, spark: SparkSession | SparkOnDemand,
                          clock: Clock,
                          max_tasks: int | None = None, roll_back: str | None = None) -> ResizeOutcome | None:
    """Execute every pending clustering this runner scheduled, oldest first; None if there is none.

    Pending clustering written by anyone else is left alone (the planner already keeps its file
    groups out of new plans). `roll_back`: why the plan rolls each back instead
    (`FinishPendingResize.why`: the declaration no longer asks for resizes, or the metadata table
    rules them out). One the metadata table rules out is rolled back even if the plan did not see
    it: it could not be recorded there, and left pending it would block Hudi writers' updates of
    its file groups.
    """
    runner = ResizeRunner(storage, meta, spark=spark, clock=clock, max_tasks=max_tasks)
    outcomes = []
    for instant, groups in runner.pending_own():
        why = _why_not_finished(runner, instant.time, groups, roll_back=roll_back)
        if why is None:
            outcomes.append(runner.execute(instant, groups, strategy=runner.strategy_of(instant)))
            continue
        removed = runner.roll_back(instant.time, sorted({g.partition for g in groups}))
        outcomes.append(ResizeOutcome(partial_files_deleted=removed,
                                      notes=(_rolled_back_note(instant.time, removed, why),)))
    if not outcomes:
        return None
    total = outcomes[0]
    for outcome in outcomes[1:]:
        total = total + outcome
    return total


def _why_not_finished(runner: ResizeRunner, time: InstantTime, groups: Sequence[PlannedGroup], *,
                      roll_back: str | None) -> str | None:
    """Why the interrupted resize `time` must be rolled back rather than finished, or None."""
    if roll_back is not None:
        return roll_back
    if runner.refusal is not None:
        return f"{runner.refusal.message}; so it is not finished, and no new resize runs"
    # The table moved on while the resize was interrupted: finishing it would lose that write.
    return runner.table_problem(groups) or runner.conflict(groups, own=time) or runner.metadata_table_problem(groups)


def _rolled_back_note(time: InstantTime, removed: Sequence[str], why: str) -> str:
    files = f"the {len(removed)} file{'' if len(removed) == 1 else 's'} it had written" if removed \
        else "no file (it had written none)"
    return f"rolled back the interrupted resize {time}: removed {files}, no file group was replaced; {why}"


class ResizeRunner:
    """Schedules and executes clustering instants on one table.

    `refusal`: why the table's metadata table rules resizes out (then `maintenance` is None): a
    new resize is refused with it, an interrupted one rolled back.
    """

    def __init__(self, storage: Storage, meta: TableMetadata, *, spark: SparkSession | SparkOnDemand,
                 clock: Clock,
                 max_tasks: int | None = None) -> None:
        self.storage = storage
        self.meta = meta
        self.spark = spark
        self.clock = clock
        self.max_tasks = max_tasks
        self.layout = meta.config.timeline_layout_version
        self.action = Action.REPLACE_COMMIT if self.layout == 1 else Action.CLUSTERING
        self.writer = TimelineWriter(storage, meta.timeline_folder, self.layout)
        self.maintenance: ResizeMaintenance | None = None
        self.refusal: RefusedError | None = None
        try:
            self.maintenance = _metadata_table_maintenance(storage, meta)
        except RefusedError as refused:
            self.refusal = refused
        self._completions: list[InstantTime] = []

    def check(self, step: SizingStep) -> None:
        """Refuse a step that would hide data from readers or touch busy file groups.

        Run just before the requested instant is written, on a fresh read of the timeline and the
        partitions (planning may have been minutes ago).
        """
        if self.refusal is not None:
            raise RefusedError(f"{self.storage.uri}: {self.refusal.message}; nothing was rewritten",
                               hint=self.refusal.hint)
        groups = groups_of_step(step)
        refused = self.table_problem(groups)
        if refused is not None:
            raise RefusedError(f"{self.storage.uri}: {refused}; nothing was rewritten",
                               hint="remove `file_sizing` from this table's declaration.")
        problem = self.metadata_table_problem(groups)
        if problem is not None:
            raise RefusedError(f"{self.storage.uri}: the resize cannot be recorded in the metadata table: "
                               f"{problem}; nothing was rewritten",
                               hint="let Hudi rebuild the column_stats index, or set `metadata_table: disable`.")
        conflict = self.conflict(groups, own=None)
        if conflict is not None:
            raise RefusedError(f"{conflict}; nothing was rewritten",
                               hint="plan again with `runner plan` rather than editing a plan; a pending "
                               "write's groups are rewritten once it completes.")

    def conflict(self, groups: Sequence[PlannedGroup], *, own: InstantTime | None) -> str | None:
        """Why replacing `groups` now could lose data, or None.

        The checks of Hudi's conflict resolution for clustering, on a fresh read of the timeline:
        each input must still be the latest base file (no log files) of a group that is not
        replaced, and no other pending clustering, compaction or write may reach the group. No input
        may be a metadata-only bootstrap's skeleton (`runner.hudi.bootstrap`), whose rows are keys only.

        Args:
            groups: the groups to replace.
            own: the runner's pending clustering instant for `groups` (its plan and its files are
                not a conflict, a pending rollback of it is), or None before it is written.
        """
        meta = read_table_metadata(self.storage)
        # A rollback of a write the groups hold (or a restore) would be undone by the new file
        # groups, which copy its rows; Hudi writers start one without the runner's lock.
        moved = history_moved(self.storage, self.meta, savepoints=False, now=meta)
        if moved is not None:
            return moved
        undoing = self._pending_rollbacks_of(meta, own) if own is not None else []
        if undoing:  # another writer is undoing this very clustering: it is not to be completed
            return f"a rollback of it is in progress ({undoing[0]})"
        state = read_table_state(self.storage, partitions={g.partition for g in groups}, metadata=meta)
        busy = set(busy_groups(state)) - set(meta.pending_clustering)
        busy |= _foreign_clustering_groups(self.storage, meta, own)
        latest = {
            g.key: relative_path(g.partition, g.latest.base_file.name)
            for g in state.active_groups
            if g.latest is not None and g.latest.base_file is not None and not g.latest.log_files
        }
        for group in groups:
            for path, file_id in zip(group.inputs, group.file_ids, strict=True):
                key = (group.partition, file_id)
                base = BaseFile.parse(path.rpartition("/")[2])
                if base is not None and is_skeleton(base):  # planning skips them; a stale plan may not
                    return skeleton_refusal(path)
                why = meta.pending_writes.reason(key)
                if why is not None:
                    return f"{path} may still be changed by a write in flight: {why}"
                if key in busy:
                    return f"{path} belongs to a file group in a pending compaction or clustering"
                if latest.get(key) != path:
                    return (f"{path} is no longer the latest base file of an idle file group (it was "
                            "written to, replaced, got log files, or is gone)")
        return None

    def table_problem(self, groups: Sequence[PlannedGroup]) -> str | None:
        """Why no group of this table may leave its file group (`runner.plan.sizing.resize_refusal`:
        a bucket index, schema evolution on read), read afresh; None otherwise. The planner leaves
        such tables alone, but a resize scheduled before the evidence appeared must not finish either."""
        return resize_refusal(read_table_metadata(self.storage), [f for g in groups for f in g.file_ids])

    def metadata_table_problem(self, groups: Sequence[PlannedGroup]) -> str | None:
        """Why the MDT records of a resize of `groups` cannot be computed, or None."""
        if self.maintenance is None:
            return None
        problems = self.maintenance.input_problems(p for g in groups for p in g.inputs)
        return "; ".join(problems) if problems else None

    def schedule(self, step: SizingStep) -> tuple[Instant, tuple[str, ...]]:
        """Write the requested plan and the (empty) inflight file of a new instant."""
        _, timeline, _ = read_timeline(self.storage)
        time = new_instant_time(timeline, clock=self.clock(), table_timezone=self.meta.config.timezone)
        requested = self.writer.requested(time, self.action, encode_plan(step, base_uri=_qualified(self.storage.uri)))
        inflight = self.writer.inflight(time, self.action)
        failpoint("after_replace_requested")
        return inflight, (requested.file_name, inflight.file_name)

    def pending_own(self) -> list[tuple[Instant, tuple[PlannedGroup, ...]]]:
        """Pending clustering instants carrying this runner's marker, with their groups."""
        own = []
        for instant in self.meta.timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING):
            requested = self.meta.timeline.file_for(instant.time, instant.action, State.REQUESTED)
            if requested is None:
                continue
            path = f"{self.meta.timeline_folder}/{requested.file_name}"
            data = self.storage.read(path)
            if is_runner_plan(data, path=path):
                own.append((instant, decode_plan(data, path=path)))
        return own

    def strategy_of(self, instant: Instant) -> str:
        """The strategy the runner's pending plan for `instant` asked for (`rewrite` by default)."""
        requested = self.meta.timeline.file_for(instant.time, instant.action, State.REQUESTED)
        if requested is None:
            return REWRITE
        path = f"{self.meta.timeline_folder}/{requested.file_name}"
        return strategy_of_plan(self.storage.read(path), path=path)

    def execute(self, pending: Instant, groups: Sequence[PlannedGroup], *,
                written: tuple[str, ...] = (), strategy: str = REWRITE) -> ResizeOutcome:
        """Rewrite the groups of a pending instant and complete it (writing its inflight if missing).

        Args:
            strategy: `binary_copy` copies each group's row groups when its inputs qualify.
        """
        if pending.state is State.REQUESTED:
            pending = self.writer.inflight(pending.time, pending.action)
            written += (pending.file_name,)
        partitions = sorted({g.partition for g in groups})
        _, timeline, folder = read_timeline(self.storage)
        earlier = set(rollbacks_of(self.storage, timeline, folder, pending.time))  # of attempts before this one
        attempt = start_attempt(self.storage, str(pending.time))  # before the dead attempts' files go
        removed = self._delete_instant_files(pending.time, partitions, keep=frozenset())
        copy, strategy_notes = self._binary_copy(strategy)
        meta_fields = self.meta.config.populate_meta_fields
        tasks = [GroupRewrite(g.partition, new_file_id(), g.inputs, binary_copy=copy, meta_fields=meta_fields)
                 for g in _largest_first(groups)]
        try:
            results, engine = self._rewrite(pending.time, tasks, attempt)
        except StepFailed as failed:
            raise self._rolled_back(pending.time, partitions, failed) from failed.__cause__
        removed += self._delete_instant_files(pending.time, partitions, keep=frozenset(r.path for r in results))
        failpoint("after_rewrite")
        self._stop_if_taken_over(pending.time, results, earlier, mdt_written=False)
        self._roll_back_on_conflict(pending.time, groups, partitions)
        if self.maintenance is not None:
            inputs = {t.file_id: t.inputs for t in tasks}
            written += tuple(self.maintenance(
                pending.time, [ResizedFile(r.partition, r.path, r.size, inputs[r.file_id]) for r in results],
                self._completion_time))
            failpoint("after_resize_metadata_table_commit")
            # Again, as Hudi checks right before completing: a write may have landed while the
            # metadata table was written (the rollback takes that deltacommit back too).
            self._stop_if_taken_over(pending.time, results, earlier, mdt_written=True)
            self._roll_back_on_conflict(pending.time, groups, partitions)
        metadata = self._commit_metadata(groups, results)
        done = self.writer.complete(pending, encode_commit_metadata(metadata, layout=self.layout),
                                    completion=self._completion_time())
        end_attempts(self.storage, str(pending.time))
        return ResizeOutcome(
            instants=(str(pending.time),),
            instants_written=(*written, done.file_name),
            files_rewritten=sum(r.input_files for r in results),
            bytes_rewritten=sum(r.input_bytes for r in results),
            output_files=tuple(r.path for r in results),
            bytes_written=sum(r.size for r in results),
            records_written=sum(r.records for r in results),
            partial_files_deleted=removed,
            notes=(engine.describe(len(tasks)), *self._tasks_note(groups, results, engine)) + strategy_notes
            + (_strategy_notes(results) if copy else ()),
        )

    def _taken_over(self, time: InstantTime, results: Sequence[RewrittenFile],
                    earlier: set[InstantTime]) -> str | None:
        """Why the clustering `time` is no longer this run's to complete, or None.

        Hudi's table services take a pending clustering for theirs: async or inline clustering and
        `run_clustering` roll an inflight one back (its files deleted, its instant back to
        requested) before executing its plan themselves, and a writer set to roll back pending
        clusterings on conflict removes it. Completed anyway, its replacecommit would hide the
        groups it replaces behind files that are gone.
        """
        _, timeline, folder = read_timeline(self.storage)
        if timeline.file_for(time, self.action, State.INFLIGHT) is None:
            return (f"its inflight file {time}.{self.action}.inflight is gone: another writer rolled the "
                    "clustering back or took it over")
        pending = {i.time for i in timeline.pending(Action.ROLLBACK)}
        undoing = {t: f for t, f in rollbacks_of(self.storage, timeline, folder, time).items()
                   if t not in earlier or t in pending}  # a completed one of an earlier attempt is history
        if undoing:
            return f"another writer rolls the clustering back ({next(iter(undoing.values()))})"
        gone = [r.path for r in results if self.storage.stat(r.path) is None]
        if gone:
            return f"its new file {gone[0]} is gone: another writer rolled the clustering back"
        return None

    def _pending_rollbacks_of(self, meta: TableMetadata, time: InstantTime) -> list[str]:
        """The files of the pending rollbacks whose plan undoes instant `time`."""
        pending = {i.time for i in meta.timeline.pending(Action.ROLLBACK)}
        found = rollbacks_of(self.storage, meta.timeline, meta.timeline_folder, time)
        return [shown for t, shown in found.items() if t in pending]

    def _stop_if_taken_over(self, time: InstantTime, results: Sequence[RewrittenFile], earlier: set[InstantTime],
                            *, mdt_written: bool) -> None:
        """Stop before completing a clustering another writer rolled back or took over (`_taken_over`).

        Its instant is that writer's now, so only what this run wrote goes: its new files, by name
        (another attempt's files carry other write tokens), and its metadata-table deltacommit.
        """
        why = self._taken_over(time, results, earlier)
        if why is None:
            return
        if mdt_written and self.maintenance is not None:
            self.maintenance.roll_back(time)
        end_attempts(self.storage, str(time))
        for result in results:
            self.storage.delete(result.path)
        raise RefusedError(
            f"resize {time} on {self.storage.uri} was rolled back before completing: {why}; no file group was "
            "replaced, and the clustering's instant is left to that writer",
            hint="plan again once the other writer is done; `runner apply` resizes what is still small.",
        )

    def _roll_back_on_conflict(self, time: InstantTime, groups: Sequence[PlannedGroup],
                               partitions: Sequence[str]) -> None:
        conflict = self.conflict(groups, own=time)
        if conflict is not None:
            self.roll_back(time, partitions)
            raise RefusedError(
                f"resize {time} on {self.storage.uri} was rolled back before completing: {conflict}; "
                "no file group was replaced",
                hint="apply again once the concurrent write has completed; it plans from the new state.",
            )

    def _rolled_back(self, time: InstantTime, partitions: Sequence[str], failed: StepFailed) -> StepFailed:
        """`failed`, after rolling its clustering back (see the module's docstring); if even that
        fails (the lock was taken over, storage is gone), the instant stays for the next apply."""
        try:
            self.roll_back(time, partitions)
        except RunnerError as error:
            return StepFailed(f"{failed.message}; rolling the clustering back failed too ({error.message}), so "
                              "it stays pending", hint="fix the cause; the next `runner apply` rolls it back or "
                              "finishes it.")
        return StepFailed(f"{failed.message}; the clustering was rolled back, no file group was replaced",
                          hint="fix the cause (the error names the file or group), then apply again.")

    def _binary_copy(self, strategy: str) -> tuple[bool, tuple[str, ...]]:
        """Whether groups may be binary-copied, and why not when the table rules it out."""
        if strategy != BINARY_COPY:
            return False, ()
        if self.meta.config.table_type is not TableType.COPY_ON_WRITE:
            # Hudi's binary-copy clustering runs on copy-on-write tables only; so does this.
            return False, ("binary copy applies to copy-on-write tables only: every group was rewritten",)
        return True, ()

    def _tasks_note(self, groups: Sequence[PlannedGroup], results: Sequence[RewrittenFile],
                    engine: EngineChoice) -> tuple[str, ...]:
        """With `spark.resize_partitions` declared and Spark chosen, the most tasks one rewrite job
        really ran, counted from the write tokens (`<partitionId>-<stageId>-<attempt>`) in the new
        files' names (the driver's note already gives its threads, which the setting bounds too)."""
        if self.max_tasks is None or engine.engine != "spark":
            return ()
        by_stage: dict[str, set[str]] = {}
        for r in results:
            partition, stage, _ = r.path.rsplit("/", 1)[-1].split("_")[1].split("-")
            by_stage.setdefault(stage, set()).add(partition)
        most = max((len(ids) for ids in by_stage.values()), default=0)
        note = (f"rewrote {len(groups)} group{'' if len(groups) == 1 else 's'} in Spark jobs of at most {most} "
                f"task{'' if most == 1 else 's'} (spark.resize_partitions: {self.max_tasks})")
        return (note,)

    def roll_back(self, time: InstantTime, partitions: Sequence[str]) -> tuple[str, ...]:
        """Undo a pending clustering of this runner: its files, then its inflight and requested files.

        Nothing of it was ever visible (readers ignore files of a pending instant), so removing the
        files and then the instant leaves the table as it was before it was scheduled. Deleting in
        this order means a crash part way leaves a pending instant the next apply rolls back again.
        """
        if self.meta.has_metadata_table:
            # First: once its data instant is gone, a completed MDT deltacommit of it would count.
            # Also when the metadata table now rules resizes out: this only takes back the runner's own.
            undo_mdt_commit(self.storage, time, keep_pending=False)
            failpoint("after_resize_rollback_mdt")
        end_attempts(self.storage, str(time))  # no worker of any attempt publishes from here on
        removed = self._delete_instant_files(time, partitions, keep=frozenset())
        failpoint("after_resize_rollback_files")
        _, timeline, _ = read_timeline(self.storage)
        for state in (State.INFLIGHT, State.REQUESTED):
            instant = timeline.file_for(time, self.action, state)
            if instant is not None:
                self.storage.delete(f"{self.meta.timeline_folder}/{instant.file_name}")
        return removed

    def _rewrite(self, time: InstantTime, tasks: Sequence[GroupRewrite],
                 attempt: AttemptStorage) -> tuple[list[RewrittenFile], EngineChoice]:
        """The new files of `tasks`, in order, and which engine wrote them (for the report); the
        workers publish through `attempt`, so none of them publishes once a newer attempt began."""
        inputs = [path for t in tasks for path in t.inputs]
        progress.begin("rewriting small files", "files", len(inputs), progress.bytes_of(inputs))
        choice = choose_engine(self.spark, groups=len(tasks), max_tasks=self.max_tasks).with_pool(self.storage)
        note = choice.describe(len(tasks))
        _log.info("%s: %s", self.storage.uri, note)
        try:
            if choice.engine == "driver":
                results = run_in_driver(attempt, str(time), tasks, threads=choice.threads, pool=choice.pool,
                                        done=_advance)
            else:
                results = self._spark_job(time, tasks, attempt)
        except Exception as error:  # a Py4J/Spark error wraps the task's; `execute` rolls the instant back
            raise StepFailed(
                f"clustering {time} on {self.storage.uri}: rewriting {len(tasks)} group(s) failed: "
                f"{type(error).__name__}: {str(error)[:2000]}"
                + "".join(f" ({note})" for note in getattr(error, "__notes__", ())),
            ) from error
        if len(results) != len(tasks):
            raise StepFailed(f"clustering {time}: {len(tasks)} groups planned but {len(results)} files reported")
        return results, choice

    def _spark_job(self, time: InstantTime, tasks: Sequence[GroupRewrite],
                   attempt: AttemptStorage) -> list[RewrittenFile]:
        # Large jobs run in rounds so progress moves; each round still fills the task bound.
        cap = self.max_tasks or MAX_TASKS
        per_round = max(cap, -(-len(tasks) // REWRITE_ROUNDS))
        results: list[RewrittenFile] = []
        for start in range(0, len(tasks), per_round):
            part = tasks[start:start + per_round]
            results += run_tasks(session_of(self.spark), part, RewriteTask(attempt, str(time)),
                                 per_task=1, max_tasks=cap)
            done = [path for t in part for path in t.inputs]
            progress.advance(len(done), progress.bytes_of(done) or 0)
        return results

    def _delete_instant_files(self, time: InstantTime, partitions: Sequence[str], *,
                              keep: frozenset[str]) -> tuple[str, ...]:
        """Delete base files named with `time` (and their temp files) except `keep`."""
        removed = []
        for partition in partitions:
            for info in self.storage.list_dir(partition):
                name = info.path.rsplit("/", 1)[-1]
                if info.is_dir or not _written_at(name, time):
                    continue
                path = relative_path(partition, name)
                if path not in keep and self.storage.delete(path):
                    removed.append(path)
        return tuple(removed)

    def _commit_metadata(self, groups: Sequence[PlannedGroup], results: Sequence[RewrittenFile]) -> CommitMetadata:
        stats: dict[str, list[WriteStat]] = {}
        for r in results:
            stats.setdefault(r.partition, []).append(WriteStat(
                partition_path=r.partition, file_id=r.file_id, path=r.path, prev_commit=None,
                num_writes=r.records, num_inserts=r.records, total_write_bytes=r.size, file_size_in_bytes=r.size,
            ))
        replaced: dict[str, list[str]] = {}
        for g in groups:
            replaced.setdefault(g.partition, []).extend(g.file_ids)
        schema = _latest_schema(self.meta.commits)
        return CommitMetadata(
            operation_type=CLUSTER,
            partition_to_write_stats={p: tuple(s) for p, s in stats.items()},
            partition_to_replace_file_ids={p: tuple(ids) for p, ids in replaced.items()},
            extra_metadata={"schema": schema} if schema else {},
            is_replace=True,
        )

    def _completion_time(self) -> InstantTime:
        # Strictly increasing across calls: the MDT deltacommit must complete before the
        # replacecommit of the same instant, even within one millisecond.
        _, timeline, _ = read_timeline(self.storage)
        value = new_instant_time(timeline, clock=self.clock(), table_timezone=self.meta.config.timezone)
        if self._completions and value <= self._completions[-1]:
            value = InstantTime(self._completions[-1].normalized[:17]).plus_millis(1)
        self._completions.append(value)
        return value


def _advance(group: GroupRewrite) -> None:
    progress.advance(len(group.inputs), progress.bytes_of(group.inputs) or 0)


def _largest_first(groups: Sequence[PlannedGroup]) -> list[PlannedGroup]:
    """The groups in the order their tasks should start: Spark hands a job's tasks to free cores in
    partition order, so starting the largest first keeps a large group from running alone at the
    end while the other cores idle (longest job first). Ties keep the plan's order."""
    return sorted(groups, key=lambda g: (g.input_bytes, len(g.inputs)), reverse=True)


def _strategy_notes(results: Sequence[RewrittenFile]) -> tuple[str, ...]:
    """Which groups were binary-copied, and why the others were rewritten."""
    copied = [r for r in results if r.strategy == BINARY_COPY]
    notes = [f"binary copy: {len(copied)} of {len(results)} group{'' if len(results) == 1 else 's'} copied "
             "row group by row group"]
    notes += [f"rewrote {r.path} instead of copying: {r.fallback}" for r in results if r.fallback]
    return tuple(notes)


def _metadata_table_maintenance(storage: Storage, meta: TableMetadata) -> ResizeMaintenance | None:
    """The hooks that record a resize in the table's metadata table, or None when it has none.

    Raises:
        RefusedError: the metadata table cannot be kept in step (the reasons, without the table or
            what was done about them, and the fix).
    """
    if meta.has_metadata_table:
        return prepare_resize_maintenance(storage, meta, step=failpoint)
    if meta.config.metadata_partitions:
        raise RefusedError(
            "the table lists metadata partitions in hoodie.properties but has no .hoodie/metadata; "
            "readers may expect a metadata table",
            hint="let Hudi rebuild the metadata table, or set `metadata_table: disable` to clear the listing.",
        )
    return None


def _foreign_clustering_groups(storage: Storage, meta: TableMetadata,
                               own: InstantTime | None) -> set[tuple[str, str]]:
    """Input groups of every pending clustering plan except the runner's own instant `own`."""
    groups: set[tuple[str, str]] = set()
    for instant in meta.timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING):
        if own is not None and instant.time == own:
            continue
        requested = meta.timeline.file_for(instant.time, instant.action, State.REQUESTED)
        if requested is None:
            continue
        path = f"{meta.timeline_folder}/{requested.file_name}"
        plan = decode_requested_replace(storage.read(path), path=path)
        for group in plan.clustering_groups or ():
            groups.update((s.partition_path, s.file_id) for s in group.slices)
    return groups


def _written_at(name: str, time: InstantTime) -> bool:
    """A base file of instant `time`, or LocalStorage's hidden temp file for one (`.<name>.<hex>.tmp`)."""
    if name.startswith(".") and name.endswith(".tmp"):
        name = name[1:].rsplit(".", 2)[0]
    base = BaseFile.parse(name)
    return base is not None and base.instant_time == time


def _latest_schema(commits: Mapping[InstantTime, CommitMetadata]) -> str | None:
    """The writer schema of the newest commit that recorded one; readers take the table schema from it."""
    for time in sorted(commits, key=lambda t: t.normalized, reverse=True):
        schema = commits[time].extra_metadata.get("schema")
        if schema:
            return schema
    return None


def _qualified(uri: str) -> str:
    """The base path as Hudi records it in plans: with a scheme (`file:/...` on local disk)."""
    return uri.rstrip("/") if "://" in uri else f"file:{uri.rstrip('/')}"
