"""Runs cleans on the timeline exactly as Hudi's `CleanActionExecutor` does.

Order: `<t>.clean.requested` (the HoodieCleanerPlan), `<t>.clean.inflight` (a copy of the plan, as
Hudi 0.x writes it), the deletes, then the completed clean with HoodieCleanMetadata. A crash at any
point leaves a pending clean; the next apply finishes it first, and files already gone count as
deleted, so the end result is the same as an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat

import runner.progress as progress
from runner.allocation import bulk_allocation
from runner.errors import RefusedError
from runner.execute.paths import partition_path, plain_paths_in, relativize
from runner.failpoints import failpoint
from runner.hudi.files import BaseFile, LogFile
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.metadata import (
    ActionInstant,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    CleanPlan,
    encode_clean_metadata,
    encode_clean_plan,
)
from runner.hudi.pending_writes import read_pending_writes
from runner.hudi.state import read_table_metadata, read_timeline
from runner.hudi.timeline_writer import TimelineWriter
from runner.plan.clean import BEFORE_THE_TIMELINE, NARROWED, SAVEPOINTED_TIMESTAMPS
from runner.plan.model import CleanStep
from runner.storage import AlreadyExists, DeleteResult, Storage

# Storage's own per-path result is what every deleter returns (threads, Spark, tests).
Deleter = Callable[[Storage, Sequence[str]], list[DeleteResult]]
# (clean instant, its HoodieCleanMetadata, completion-time source) -> files written
BeforeComplete = Callable[[InstantTime, CleanMetadata, Callable[[], InstantTime]], list[str]]
# Why the table no longer supports the plan (`runner.hudi.pending_undo.history_moved`), or None
HistoryCheck = Callable[[], str | None]
# (clean instant, data partition -> names of the files it deletes): told before the deletes start;
# returns what stops the work it started, called when the clean stops before `before_complete`
BeforeDeletes = Callable[[InstantTime, Mapping[str, tuple[str, ...]]], Callable[[], None]]


@dataclass(frozen=True, slots=True)
class CleanOutcome:
    """What one clean instant did."""

    instant: str
    files_deleted: int
    bytes_deleted: int
    files_already_gone: int
    failed: tuple[str, ...] = ()
    partitions_deleted: tuple[str, ...] = ()
    instants_written: tuple[str, ...] = field(default=())
    # Left pending, not completed: a file of a replaced group could not be deleted (`_left_replaced`).
    left_pending: tuple[str, ...] = ()


def to_plan(step: CleanStep, base_uri: str) -> CleanPlan:
    """The HoodieCleanerPlan (version 2) for a clean step; file paths are fully qualified."""
    ectr = step.earliest_commit_to_retain
    root = qualify(base_uri, "")  # once, not once per file: a clean may list 400,000
    by_partition: dict[str, list[CleanFileInfo]] = {}
    for f in step.files_to_delete:
        by_partition.setdefault(f.partition, []).append(CleanFileInfo(root + f.path, False))
    extra = {SAVEPOINTED_TIMESTAMPS: ",".join(step.savepointed_timestamps)} if step.savepointed_timestamps else {}
    if step.narrowed:
        extra[NARROWED] = "true"
    return CleanPlan(
        earliest_instant_to_retain=(
            ActionInstant(str(ectr.time), ectr.action.value, "COMPLETED") if ectr is not None else None
        ),
        last_completed_commit_timestamp=step.last_completed_commit,
        policy=step.policy.value,
        file_paths_to_delete={p: tuple(files) for p, files in sorted(by_partition.items())},
        partitions_to_delete=tuple(step.partitions_to_delete),
        extra_metadata=extra,
        version=2,
    )


def qualify(base_uri: str, relative: str) -> str:
    """A path as Hudi records it: with a scheme (`file:/...` on local disk)."""
    root = base_uri.rstrip("/")
    return f"{root}/{relative}" if "://" in root else f"file:{root}/{relative}"


def files_of(plan: CleanPlan, base_uri: str) -> dict[str, list[str]]:
    """The plan's files per partition as canonical table-relative paths, each checked and listed once.

    Raises:
        RefusedError: a path outside the table, in `.hoodie`, not a Hudi data file, not in the
            partition it is listed under, or listed twice; nothing is deleted.
    """
    listed = {partition: [info.file_path for info in infos if not info.is_bootstrap_base_file]
              for partition, infos in plan.file_paths_to_delete.items()}
    return _checked_paths(listed, plan.partitions_to_delete, base_uri)


def _checked_paths(listed: Mapping[str, list[str]], partitions_to_delete: Iterable[str],
                   base_uri: str) -> dict[str, list[str]]:
    """`files_of` from each partition's fully qualified paths."""
    files: dict[str, list[str]] = {}
    seen: set[str] = set()
    for partition, full_paths in listed.items():
        folder = partition_path(partition, what="clean plan partition")
        batch = plain_paths_in(base_uri, folder, full_paths)  # the common case, checked a partition at once
        if batch is not None and len(fresh := set(batch)) == len(batch) and seen.isdisjoint(fresh):
            seen |= fresh
            if batch:
                files.setdefault(partition, []).extend(batch)
            continue
        for full_path in full_paths:  # path by path, with the full checks and their messages
            # The expected folder lets a plain `<folder>/<data file>` skip the full normalisation;
            # anything else still takes it, and is refused just below if it lies elsewhere.
            path = relativize(base_uri, full_path, folder=folder)
            if path.rpartition("/")[0] != folder:
                raise RefusedError(
                    f"clean plan lists {full_path!r} under partition {partition!r}, but the file lies in "
                    f"{path.rpartition('/')[0]!r}; nothing was deleted",
                    hint="check who wrote this clean plan.",
                )
            if path in seen:
                raise RefusedError(f"clean plan lists {full_path!r} twice; nothing was deleted",
                                   hint="check who wrote this clean plan.")
            seen.add(path)
            files.setdefault(partition, []).append(path)
    for partition in partitions_to_delete:
        if not partition_path(partition, what="clean plan partition to delete"):
            raise RefusedError("refusing to delete the table root as a partition; nothing was deleted")
    return files


def check_recordable(step: CleanStep, storage: Storage) -> None:
    """Refuse, when planning, a clean that apply would refuse to record or carry out: its paths
    fail `files_of` (a partition whose first folder holds ':', which Hudi's paths read as a URI
    scheme), or a file it deletes is a symbolic link out of the table (`refuse_links_out`). Plan
    shows what apply will do; such a clean would otherwise be shown as work and fail every apply.

    Raises:
        RefusedError: naming the path and why; nothing was written.
    """
    refuse_scheme_partitions(step, storage.uri)
    root = qualify(storage.uri, "")
    listed: dict[str, list[str]] = {}
    for f in step.files_to_delete:
        listed.setdefault(f.partition, []).append(root + f.path)
    _checked_paths(listed, step.partitions_to_delete, storage.uri)
    refuse_links_out(storage, [f.path for f in step.files_to_delete], "the clean")


def check_pending_recordable(storage: Storage, instants: Iterable[str]) -> None:
    """`check_recordable` for the pending cleans apply would finish (`instants`): their plans'
    paths pass `files_of`, and none of their files is a symbolic link out of the table.

    Raises:
        RefusedError: naming the pending clean and the path; nothing was written.
    """
    wanted = set(instants)
    for instant, plan in read_table_metadata(storage).pending_cleans:
        if plan is not None and str(instant.time) in wanted:
            files = files_of(plan, storage.uri)
            refuse_links_out(storage, [p for paths in files.values() for p in paths], f"pending clean {instant.time}")


def refuse_scheme_partitions(step: CleanStep, base_uri: str) -> None:
    """Refuse a clean of a partition whose first folder holds ':' (`hh=10:00`, written by another
    writer or an older runner): Hudi's paths read the text before it as a URI scheme, so a clean
    plan naming it could be neither read by Hudi nor checked by apply (`files_of`). Said here in
    the table's terms, before `files_of` would refuse it as a forged plan path. One test per
    partition, not per file.

    Raises:
        RefusedError: naming the partition and how many of its files the clean would delete.
    """
    counts: dict[str, int] = {}
    for f in step.files_to_delete:
        counts[f.partition] = counts.get(f.partition, 0) + 1
    for partition in step.partitions_to_delete:
        counts.setdefault(partition, 0)
    for partition, count in sorted(counts.items()):
        first = partition.split("/", 1)[0]
        if ":" in first:
            folder_too = " and the folder" if partition in step.partitions_to_delete else ""
            raise RefusedError(
                f"table {base_uri}: the clean would delete {count} file(s){folder_too} of partition "
                f"{partition!r}, whose first folder holds ':'; "
                f"Hudi's paths read {first.split(':', 1)[0]!r} before it as a URI scheme, so a clean plan naming "
                "the partition could not be read by Hudi or checked by apply; expected no ':' in the first "
                "partition folder; nothing was deleted or recorded",
                hint="rewrite its records into partitions whose first value holds no ':' (Hudi cannot use this "
                "one either; URL-encoded partition paths write it as %3A), then plan again.",
            )


def refuse_replaced_behind_links(storage: Storage, replaced: Mapping[tuple[str, str], InstantTime],
                                 step: CleanStep) -> None:
    """Refuse a clean whose bound would let Hudi's archiver drop a replacecommit whose replaced
    groups still hold files in a partition folder reached through a symbolic link.

    Such a partition is never listed, so the clean leaves those groups' files; but Hudi's archiver
    takes every group replaced before the last clean's earliest commit to retain (before the clean
    itself when it records none) for cleaned, and may archive the replacecommit, after which readers
    (which follow links) read the replaced groups beside the ones that replaced them. A linked
    folder is only read here (its names), never entered for a plan.

    Raises:
        RefusedError: naming the partition and the replacecommit; nothing was written.
    """
    linked = getattr(storage, "through_link", None)
    if linked is None or step.is_empty:
        return
    ectr = step.earliest_commit_to_retain
    left = replaces_left(storage, replaced, ectr.time if ectr is not None else None, where=linked)
    for partition in sorted(left):
        bound = f"earliest commit to retain {ectr.time}" if ectr else "no earliest commit to retain"
        raise RefusedError(
            f"table {storage.uri}: the clean would record {bound}, past replacecommit {left[partition][0]}, whose "
            f"replaced file groups in partition {partition!r} still hold files; that partition's folder is "
            "a symbolic link, which the runner never lists or cleans, and once the clean is recorded Hudi's "
            "archiver may archive the replacecommit, after which readers read those groups' records again "
            "beside the ones that replaced them; expected no replaced groups left behind a link; nothing was "
            "deleted or recorded",
            hint="move the partition's folder back into the table (the clean then deletes the replaced "
            "groups), or let Hudi's own cleaner clean this table.",
        )


def replaces_left(storage: Storage, replaced: Mapping[tuple[str, str], InstantTime], before: InstantTime | None,
                  *, where: Callable[[str], bool] = lambda _: True,
                  unless: frozenset[str] = frozenset()) -> dict[str, list[InstantTime]]:
    """Per partition `where` accepts, the replacecommits requested before `before` (every one when
    None) whose replaced file groups there still hold a file, by its name (one of `unless` aside:
    a savepoint's). Each such partition folder is listed once, through a link too (readers follow it).
    """
    behind: dict[str, dict[str, InstantTime]] = {}
    for (partition, file_id), replaced_at in replaced.items():
        if before is None or replaced_at < before:
            behind.setdefault(partition, {})[file_id] = replaced_at
    found: dict[str, list[InstantTime]] = {}
    for partition in sorted(behind):
        if not where(partition):
            continue
        ids = behind[partition]
        times = {ids[fid] for info in storage.list_dir(partition) if not info.is_dir
                 if (fid := file_id_of(info.path)) in ids and info.path.rsplit("/", 1)[-1] not in unless}
        if times:
            found[partition] = sorted(times, key=lambda t: t.normalized)
    return found


def file_id_of(path: str) -> str | None:
    """The file id a data file's name gives (base or log), or None for any other name."""
    name = path.rsplit("/", 1)[-1]
    base = BaseFile.parse(name, 0)
    if base is not None:
        return base.file_id
    log = LogFile.parse(name, 0)
    return log.file_id if log is not None else None


def refuse_links_out(storage: Storage, paths: Sequence[str], what: str) -> None:
    """Refuse deleting files that are symbolic links out of the table: the store refuses each such
    delete, so a clean naming one could never complete as recorded, and removing only the link
    would not reclaim what the plan shows (the file lives elsewhere, perhaps another table's).

    Raises:
        RefusedError: naming the first such file and where it leads; nothing was deleted.
    """
    linked = getattr(storage, "links_out", None)
    found = linked(paths) if linked is not None and paths else []
    if found:
        path, real = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise RefusedError(
            f"table {storage.uri}: {what} would delete {path}{more}, which is a symbolic link to {real}, "
            "outside the table; expected a data file inside the table, since the runner never deletes "
            "through a link out of it; nothing was deleted or recorded",
            hint="move the file back into the table in place of the link (or remove the link yourself, "
            "if what it leads to is not this table's data), then plan again.",
        )


def _tally(outcomes: Iterable[DeleteResult]) -> tuple[list[str], int, list[str]]:
    """The paths deleted by this run, the number already gone and the paths that failed, in one
    pass (a clean has a result per file)."""
    deleted: list[str] = []
    gone = 0
    failed: list[str] = []
    for outcome in outcomes:
        if outcome.error is None:
            if outcome.deleted:
                deleted.append(outcome.path)
            else:
                gone += 1
        elif outcome.error:
            failed.append(outcome.path)
    return deleted, gone, failed


def _nothing() -> None:
    """What stops no work (no `before_deletes`)."""


def _reached_by_pending_writes(storage: Storage) -> Callable[[str], bool]:
    """Whether a pending write may still write into a partition: its folder must stay, or file-listing
    readers would not find the partition (they know one by its `.hoodie_partition_metadata`)."""
    _, timeline, folder = read_timeline(storage)
    reached = read_pending_writes(storage, folder, timeline).reached_partitions()
    return lambda partition: reached is None or partition in reached


class CleanRunner:
    """Executes clean plans against one table."""

    def __init__(self, storage: Storage, writer: TimelineWriter, deleter: Deleter, *,
                 completion_time: Callable[[], InstantTime],
                 before_complete: BeforeComplete | None = None,
                 history: HistoryCheck | None = None,
                 before_deletes: BeforeDeletes | None = None,
                 known_replaces: frozenset[str] | None = None) -> None:
        self.storage = storage
        self.writer = writer
        self.deleter = deleter
        self.completion_time = completion_time
        # Records the clean in the metadata table (same instant time) before the clean completes.
        self.before_complete = before_complete
        # Asked before anything is recorded and again before the first delete: Hudi writers do not
        # take the runner's lock, and a rollback or savepoint landing after the plan changes which
        # slices readers need (a metadata table appearing, where the clean must be recorded).
        self.history = history
        # Lets that record's work that depends only on the plan start beside the deletes (writes nothing).
        self.before_deletes = before_deletes
        # The times (normalized) of the replacecommits and clusterings, in any state, on the timeline
        # the plans were made from: one not among them landed since (`_bounded_before_late_replaces`).
        self.known_replaces = known_replaces
        # The checked paths (`files_of`) of each clean `start` wrote, for its `finish`.
        self._checked: dict[InstantTime, dict[str, list[str]]] = {}

    def start(self, time_: InstantTime, step: CleanStep) -> tuple[Instant, CleanPlan]:
        """Write `<t>.clean.requested` and `<t>.clean.inflight`.

        Raises:
            RefusedError: the step deletes nothing; Hudi never schedules such a clean.
        """
        if not step.files_to_delete and not step.partitions_to_delete:
            raise RefusedError(f"clean {time_} on {self.storage.uri} lists no files and no partitions; "
                               "Hudi never schedules such a clean, so none is written")
        self._refuse_if_history_moved(time_, "nothing was written")
        with bulk_allocation():  # a few objects per file, none in a cycle (see runner.allocation)
            plan = to_plan(step, self.storage.uri)
            data = encode_clean_plan(plan)
            # `finish` checks every path again; a path it would refuse must stop the clean before it
            # is recorded, or the refused clean stays pending (and Hudi's cleaner would run it).
            self._checked[time_] = files_of(plan, self.storage.uri)
            refuse_links_out(self.storage, [p for paths in self._checked[time_].values() for p in paths],
                             f"clean {time_}")
        self.writer.requested(time_, Action.CLEAN, data)
        failpoint("after_clean_requested")
        inflight = self.writer.inflight(time_, Action.CLEAN, data)
        failpoint("after_clean_inflight")
        return inflight, plan

    def finish(self, pending: Instant, plan: CleanPlan, *, sizes: dict[str, int] | None = None,
               withdraw: bool = False) -> CleanOutcome:
        """Delete what the plan lists and complete the instant (writing inflight first if needed).

        Args:
            withdraw: the clean was started by this run (`start`), so if the timeline moved since the
                plan its requested and inflight files are removed again: nothing of it ran, and left
                pending, Hudi's cleaner would run it without checking it again. A pending clean
                found on the timeline may have deleted files already and is left as it is.
        """
        with bulk_allocation():
            checked = self._checked.pop(pending.time, None)  # as `start` checked the plan it wrote
            files = checked if checked is not None else files_of(plan, self.storage.uri)
            flat = [path for paths in files.values() for path in paths]
        written: list[str] = []
        if pending.state.value == "requested":
            self.writer.inflight(pending.time, Action.CLEAN, encode_clean_plan(plan))
            written.append(f"{pending.time}.clean.inflight")
        # What the clean's requested and inflight files hold now, for rewriting its bound: the plan
        # this run wrote, or, for a pending clean found on the timeline, the bytes its writer wrote.
        recorded = None if checked is not None else self._recorded(pending.time)
        self._refuse_if_history_moved(pending.time, "nothing was deleted" if withdraw else
                                      f"nothing was deleted; clean {pending.time} stays pending for the next "
                                      "apply to check again", withdraw=withdraw)
        started = time.monotonic()
        stop_early_work = self.before_deletes(
            pending.time, {p: tuple(path.rsplit("/", 1)[-1] for path in paths) for p, paths in files.items()}
        ) if self.before_deletes is not None else _nothing
        try:
            sizes, outcomes, deleted_partitions = self._delete(plan, flat, sizes)
            plan = self._bounded_before_late_replaces(pending.time, plan, recorded)
            with bulk_allocation():  # not around the deleter, which may run a Spark job for minutes
                meta = self._metadata(pending, plan, files, outcomes, deleted_partitions, started)
                data = encode_clean_metadata(meta)
        except BaseException:
            # Nothing will use that work (an encoder child's seconds of CPU): end it now, or it runs
            # to its end beside whatever the failure leads to, and the process waits for it to exit.
            stop_early_work()
            raise
        deleted, gone, failed = _tally(outcomes.values())
        outcome = functools.partial(
            CleanOutcome,
            instant=str(pending.time),
            files_deleted=len(deleted),
            bytes_deleted=sum(map(sizes.get, deleted, repeat(0))),
            files_already_gone=gone,
            failed=tuple(sorted(failed)),
            partitions_deleted=deleted_partitions,
        )
        left = self._left_replaced(failed) if failed else []
        if left:
            stop_early_work()
            return outcome(instants_written=tuple(written),
                           left_pending=tuple(f"{path} ({outcomes[path].error})" for path in left))
        if self.before_complete is not None:
            written.extend(self.before_complete(pending.time, meta, self.completion_time))
            failpoint("after_metadata_table_commit")
        done = self.writer.complete(pending, data, completion=self.completion_time())
        written.append(done.file_name)
        failpoint("after_clean_completed")
        return outcome(instants_written=tuple(written))

    def _bounded_before_late_replaces(self, time_: InstantTime, plan: CleanPlan,
                                      recorded: dict[State, bytes] | None = None) -> CleanPlan:
        """`plan`, its earliest commit to retain moved before any replacecommit or clustering that
        landed since the plan (a Hudi writer does not take the runner's lock) or is pending now,
        requested before the bound the clean would record (its earliest commit to retain, else its
        own time); its requested and inflight files rewritten so, before it completes.

        Hudi's archiver takes every group replaced before the last completed clean's bound for
        cleaned (`ClusteringUtils.getEarliestInstantToRetainForClustering`). A writer that asked for
        its instant time before the clean's, and completed its replace after the clean was planned,
        replaced groups this clean never saw; vouched for, that replacecommit could be archived and
        its groups read beside the ones replacing them. The new bound is the latest completed write
        before the first such instant, else `BEFORE_THE_TIMELINE` (as `_before_pending_replaces`
        plans it): the archiver keeps more, the next clean lists every partition it must.

        `recorded`: None for a clean this run planned and wrote (`start`): the replacecommits it
        did not see are those not in `known_replaces`. Else a pending clean found on the timeline,
        planned by an earlier run or by Hudi, with the bytes its requested and inflight files held
        when this run took it up: which replacecommits its planner saw is unknown, so a completed
        one is taken as unseen while its replaced groups still hold files (`_replaces_left_behind`).
        """
        if self.known_replaces is None:
            return plan
        recorded_ectr = plan.earliest_instant_to_retain
        bound = (InstantTime(recorded_ectr.timestamp) if recorded_ectr is not None and recorded_ectr.timestamp.strip()
                 else time_)
        _, timeline, _ = read_timeline(self.storage)
        late = [i.time for i in timeline.instants
                if i.family is Action.REPLACE_COMMIT and i.time < bound
                and (not i.is_completed or i.time.normalized not in self.known_replaces)]
        if recorded is not None:
            late.extend(self._replaces_left_behind(bound))
        if not late:
            return plan
        first = min(late, key=lambda t: t.normalized)
        before = [i for i in timeline.completed_writes if i.time < first]
        ectr = before[-1] if before else BEFORE_THE_TIMELINE
        bounded = dataclasses.replace(plan, earliest_instant_to_retain=ActionInstant(
            str(ectr.time), ectr.action.value, "COMPLETED"))
        old, new = encode_clean_plan(plan), encode_clean_plan(bounded)
        for state in (State.REQUESTED, State.INFLIGHT):
            path = self.writer.path(Instant(time_, Action.CLEAN, state))
            held = old if recorded is None else recorded.get(state)
            if recorded is not None and state is State.INFLIGHT and held not in (old, recorded.get(State.REQUESTED)):
                continue  # an inflight file that is no copy of the plan (Hudi may leave it empty) stays as it is
            if held is None or not self.storage.replace_if(path, held, new):
                raise RefusedError(
                    f"table {self.storage.uri}: replacecommit {first} is not accounted for by clean {time_} (it landed "
                    f"after the clean was planned, or its replaced file groups still hold files), so the clean must "
                    f"record an earliest commit to retain before it ({ectr.time}), but {path} no longer holds "
                    "the plan this run read or wrote; expected it unchanged; the clean is left pending, not completed",
                    hint="check who else writes this table's timeline, then apply again.")
        return bounded

    def _recorded(self, time_: InstantTime) -> dict[State, bytes]:
        """The bytes of a pending clean's requested and inflight files, as they are now."""
        found: dict[State, bytes] = {}
        for state in (State.REQUESTED, State.INFLIGHT):
            path = self.writer.path(Instant(time_, Action.CLEAN, state))
            if self.storage.stat(path) is not None:
                found[state] = self.storage.read(path)
        return found

    def _replaces_left_behind(self, bound: InstantTime) -> list[InstantTime]:
        """Completed replacecommits requested before `bound` whose replaced file groups still hold a
        file that no savepoint lists: a clean vouching past them would let Hudi's archiver drop the
        replacecommit hiding those groups (`_bounded_before_late_replaces`). Read after the deletes,
        so the files a clean deleted are gone (`replaces_left`)."""
        meta = read_table_metadata(self.storage)
        left = replaces_left(self.storage, meta.replaced, bound, unless=meta.savepointed_files)
        return sorted({t for times in left.values() for t in times}, key=lambda t: t.normalized)

    def _left_replaced(self, failed: Sequence[str]) -> list[str]:
        """The files of `failed` that belong to a replaced file group, by the timeline as it is now.

        Hudi's cleaner completes a clean whatever its failed deletes. But Hudi's archiver takes
        every group replaced before the last completed clean's earliest commit to retain (before
        the clean itself when it records none) for cleaned, and may archive the replacecommit that
        hides it (`ClusteringUtils.getEarliestInstantToRetainForClustering`): a file left in such a
        group is then read beside the group that replaced it, every record twice. So the clean is
        left pending (the last completed clean's bound stands) and the next apply finishes it. A
        failed delete of an active group's old slice is harmless (no reader picks an older slice)
        and is recorded as failed, as Hudi does.
        """
        replaced = read_table_metadata(self.storage).replaced
        return sorted(p for p in failed if (p.rpartition("/")[0], file_id_of(p)) in replaced)

    def _delete(self, plan: CleanPlan, flat: list[str], sizes: dict[str, int] | None
                ) -> tuple[dict[str, int], dict[str, DeleteResult], tuple[str, ...]]:
        """Delete the plan's files, then its emptied partitions; (sizes, outcomes by path, partitions deleted)."""
        if sizes is None:  # a pending clean from the timeline: measure what is really there
            sizes = {path: info.size for path in flat if (info := self.storage.stat(path)) is not None}
        with progress.known_sizes(sizes):  # so the deleter's progress shows bytes as well as files
            outcomes = {o.path: o for o in self.deleter(self.storage, flat)}
        deleted_partitions = self._delete_partitions(plan.partitions_to_delete)
        failpoint("after_delete")
        return sizes, outcomes, deleted_partitions

    def _refuse_if_history_moved(self, time_: InstantTime, done: str, *, withdraw: bool = False) -> None:
        moved = self.history() if self.history is not None else None
        if moved is None:
            return
        if withdraw:
            # Inflight first, as an instant is taken back: a crash in between leaves a requested
            # clean, which the next apply checks against the table again before running it.
            for state in (State.INFLIGHT, State.REQUESTED):
                self.storage.delete(self.writer.path(Instant(time_, Action.CLEAN, state)))
            done += f", and clean {time_} was withdrawn from the timeline"
        raise RefusedError(
            f"table {self.storage.uri}: {moved}; expected the timeline the clean was planned from, since it "
            f"decides which file slices readers need; {done}",
            hint="plan again (`runner plan`) once the rollback, restore, savepoint or metadata-table change "
            "has completed.",
        )

    def _delete_partitions(self, partitions: Sequence[str]) -> tuple[str, ...]:
        """Remove the emptied partition folders no pending write may still write into; the ones removed.

        Pending writes are read now, not when planned (a write into an emptied partition may have
        started since), and once more after the markers went: a Hudi writer writes its requested
        instant, then reads the table, and one that started meanwhile found the partition by its
        marker, so it will not write one again; its partition keeps its marker and folder. One that
        starts after the second look finds no marker, and writes one itself.
        """
        if not partitions:
            return ()
        writing = _reached_by_pending_writes(self.storage)
        taken = {p: markers for p in dict.fromkeys(partitions)
                 if not writing(partition_path(p)) and (markers := self._take_markers(partition_path(p))) is not None}
        writing = _reached_by_pending_writes(self.storage) if taken else writing
        deleted = []
        for partition, markers in taken.items():
            folder = partition_path(partition)
            if not writing(folder) and self.storage.remove_empty_folder(folder):
                deleted.append(partition)
                continue
            for path, data in markers.items():  # file-listing readers must still find the partition
                with contextlib.suppress(AlreadyExists):  # the writer wrote it again itself
                    self.storage.write_new(path, data)
        return tuple(deleted)

    def _take_markers(self, partition: str) -> dict[str, bytes] | None:
        """Delete an emptied partition's markers (`.hoodie_partition_metadata`) and return what they
        held; None, with nothing deleted, if anything else is left in its folder.

        Only what was looked at goes, the markers here and the folder later while it is empty, never
        with a recursive delete: a Hudi writer does not take the runner's lock, and one that found the
        partition may write its new file group there meanwhile. That file stays, and the markers are
        written back, so that file-listing readers still find the partition.
        """
        found = list(self.storage.walk(partition))
        if any(not f.path.rsplit("/", 1)[-1].startswith(".hoodie_partition_metadata") for f in found):
            return None
        markers = {f.path: self.storage.read(f.path) for f in found}
        for path in markers:
            self.storage.delete(path)
        return markers

    def _metadata(self, pending: Instant, plan: CleanPlan, files: dict[str, list[str]],
                  outcomes: dict[str, DeleteResult], deleted: tuple[str, ...], started: float) -> CleanMetadata:
        partitions = {}
        for partition in sorted(set(files) | set(plan.partitions_to_delete)):
            paths = files.get(partition, [])
            names = tuple(p.rsplit("/", 1)[-1] for p in paths)
            # As Hudi's CleanActionExecutor: a file whose delete did not happen (an error, or already
            # gone after a crash) is a failed delete, not a successful one.
            done = [(o := outcomes[p]).error is None and o.deleted for p in paths]
            every = all(done)  # the usual case: the lists are the names as they are
            partitions[partition] = CleanPartitionMetadata(
                partition_path=partition,
                policy=plan.policy,
                delete_path_patterns=names,
                success_delete_files=names if every else tuple(n for n, ok in zip(names, done, strict=True) if ok),
                failed_delete_files=() if every else tuple(n for n, ok in zip(names, done, strict=True) if not ok),
                is_partition_deleted=partition in deleted,
            )
        ectr = plan.earliest_instant_to_retain
        return CleanMetadata(
            start_clean_time=str(pending.time),
            time_taken_ms=int((time.monotonic() - started) * 1000),
            total_files_deleted=sum(len(p.success_delete_files) for p in partitions.values()),
            earliest_commit_to_retain=ectr.timestamp if ectr else "",
            last_completed_commit_timestamp=plan.last_completed_commit_timestamp,
            partition_metadata=partitions,
            extra_metadata=dict(plan.extra_metadata),
            version=2,
        )
