"""Is a table's metadata table in step with its data table? Used by `status` and before writing.

`consistency_problems` is pure (timelines and configs in, sentences out); `check_metadata_table`
reads what it needs and adds the storage comparison of `drift.compare`.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.errors import RunnerError
from runner.hudi.files import relative_path
from runner.hudi.instant import Action
from runner.hudi.mdt.drift import Drift, compare
from runner.hudi.mdt.reader import MetadataTable, read_files_listing, read_metadata_table
from runner.hudi.mdt.view import SOLO_COMMIT_TIMESTAMP
from runner.hudi.state import TableMetadata, TableState
from runner.shortlist import shortlist
from runner.storage import Storage

# Data-table actions that Hudi mirrors in the MDT under the same instant time: as a deltacommit,
# or for a rollback in 1.x as an MDT rollback of the same time (fixture v9_nonpartitioned_rollback).
# An `indexing` instant is not mirrored under its own time: the index build writes its own
# deltacommit (fixture v9_txns_simple_meta: index 20260307162458438, MDT 20260307162457540).
MIRRORED_ACTIONS = frozenset({
    Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK, Action.RESTORE,
})


@dataclass(frozen=True, slots=True)
class MetadataTableHealth:
    """Problems that make the MDT unsafe to extend, and its disagreement with storage."""

    problems: tuple[str, ...]
    drift: Drift | None

    @property
    def ok(self) -> bool:
        return not self.problems and (self.drift is None or self.drift.in_sync)

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "problems": list(self.problems), "drift": self.drift.to_json() if self.drift else None}


def consistency_problems(
    data: TableMetadata, mdt: MetadataTable, *, resuming: frozenset[str] = frozenset()
) -> list[str]:
    """Why the MDT is not a faithful, settled mirror of the data timeline (empty when it is).

    `resuming`: data instants the runner is about to finish itself (its pending cleans); their
    pending or completed MDT deltacommit is the runner's own interrupted work, not a problem.
    """
    problems: list[str] = []
    if mdt.config.version != data.config.version:
        problems.append(
            f"the metadata table has table version {mdt.config.version}, the data table {data.config.version}"
        )
    if data.config.metadata_partitions_inflight:
        problems.append(
            "metadata partitions are still being built (hoodie.table.metadata.partitions.inflight="
            f"{','.join(data.config.metadata_partitions_inflight)})"
        )
    pending = [i.file_name for i in mdt.timeline.instants if not i.is_completed and i.time not in resuming]
    if pending:
        problems.append(f"the metadata table has a pending or failed write: {', '.join(pending)}")
    pending_data = {i.time for i in data.timeline.instants if not i.is_completed}
    mdt_done = {i.time for i in mdt.timeline.instants if i.is_completed and i.action is Action.DELTA_COMMIT}
    orphans = sorted(str(t) for t in mdt_done & pending_data if t not in resuming)
    if orphans:
        problems.append(
            "metadata-table deltacommits exist for data instants that never completed: " + ", ".join(orphans)
        )
    problems.extend(_missing_mirrors(data, {i.time for i in mdt.timeline.instants if i.is_completed}))
    return problems


def _missing_mirrors(data: TableMetadata, mdt_done: set[str]) -> list[str]:
    """Completed data instants since the MDT's first real instant that it has no record of."""
    real = sorted(t for t in mdt_done if not t.startswith(SOLO_COMMIT_TIMESTAMP))
    if not real:
        return []
    missing = [
        i.file_name
        for i in data.timeline.instants
        if i.is_completed and i.action in MIRRORED_ACTIONS and i.time >= real[0] and i.time not in mdt_done
    ]
    if not missing:
        return []
    return [f"the metadata table is behind the data table: no completed deltacommit for {', '.join(missing)}"]


def check_metadata_table(storage: Storage, state: TableState) -> MetadataTableHealth:
    """Consistency problems plus, for a fully listed state, the storage comparison."""
    try:
        mdt = read_metadata_table(storage)
        problems = consistency_problems(state.metadata, mdt)
        drift = compare(read_files_listing(storage, state.metadata, mdt), state) if state.fully_listed else None
    except RunnerError as error:
        return MetadataTableHealth((f"the metadata table cannot be read: {error}",), None)
    if drift is not None and not drift.in_sync:
        problems.append("the metadata table's file listing disagrees with storage")
    return MetadataTableHealth(tuple(problems), drift)


def listing_problems(storage: Storage, state: TableState) -> list[str]:
    """Where the MDT `files` listing disagrees with storage in the partitions `state` listed.

    Hudi's readers and cleaner list a table with an MDT through its `files` partition, the runner's
    planner through storage. Where the two disagree, a plan made from storage acts on a table its
    readers do not see: a committed file storage holds but the MDT does not (a stray copy of a
    retried task) looks like its group's latest version, so cleaning by storage deletes the version
    every MDT reader takes as the latest, and the clean's tombstone then drops the group from the
    MDT altogether. So the runner refuses to clean or resize while they disagree.

    Files a pending clean deletes are left out: its deletes may have started (an interrupted clean
    the runner is about to finish), and its MDT deltacommit counts only once it completes.
    """
    try:
        listing = read_files_listing(storage, state.metadata)
    except RunnerError as error:
        return [f"the metadata table's files listing cannot be read: {error}"]
    drift = compare(listing, state)
    listed = set(state.partitions)
    leaving = {
        relative_path(partition, info.file_path.rsplit("/", 1)[-1])
        for _, plan in state.metadata.pending_cleans if plan is not None
        for partition, infos in plan.file_paths_to_delete.items()
        for info in infos
    }

    def in_scope(path: str) -> bool:
        partition = path.rpartition("/")[0]
        return path not in leaving and (state.fully_listed or partition in listed)

    absent = [p for p in drift.listed_but_absent if in_scope(p)]
    unlisted = [p for p in drift.present_but_unlisted if in_scope(p)]
    problems = []
    if unlisted:
        problems.append(
            f"the metadata table's file listing disagrees with storage: {shortlist(unlisted, 3)} committed in "
            "storage but not listed by the metadata table (its readers and Hudi's cleaner do not see them; "
            "planning from storage would take them for the latest versions of their file groups)"
        )
    if absent:
        problems.append(
            f"the metadata table's file listing disagrees with storage: {shortlist(absent, 3)} listed by the "
            "metadata table but absent from storage (its readers fail on them)"
        )
    if drift.partitions_unlisted:
        problems.append(
            "the metadata table's file listing disagrees with storage: partitions with committed files that it "
            f"does not list: {shortlist(list(drift.partitions_unlisted), 3)}"
        )
    return problems
