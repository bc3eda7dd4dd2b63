"""Attack: a pending clean, finished by a later apply, vouching for a replacecommit it never saw.

Hudi's archiver takes every file group replaced before the last completed clean's bound (its
earliest commit to retain, else its own time) for cleaned, and may archive the replacecommit hiding
it (`ClusteringUtils.getEarliestInstantToRetainForClustering`); readers then read the replaced
groups, still on disk, beside the group that replaced them. A clean apply plans and runs in one go
moves its bound before a replacecommit that landed meanwhile (test_concurrent_replace.py), by the
replacecommits on the timeline it planned from. A pending clean found on the timeline was planned
earlier, by an apply that was killed or by Hudi: which replacecommits its planner saw is unknown,
and it was finished with the bound it recorded, so it vouched for a clustering that landed between
the runs (or during the killed run's deletes), for one Hudi's planner could not see (pending when it
planned: HUDI-6352), and for groups behind a partition folder that is a symbolic link. Until the
fresh clean that follows deletes those groups (or for good, if it fails), an archiver may drop the
replacecommit. Finishing a pending clean now moves its bound before every completed replacecommit
whose replaced groups still hold files.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.errors import RefusedError
from runner.execute.apply import apply_table
from runner.hudi.instant import Action, InstantTime
from runner.hudi.metadata import CleanFileInfo, CleanPlan, decode_clean_plan, encode_clean_plan
from runner.hudi.state import read_table_metadata
from runner.storage import DeleteResult, Storage, storage_for
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import archive_as_hudi_may

LOCAL = SparkSettings(master="local[1]")


class Killed(BaseException):
    """The apply stops here, as a kill -9 would (no handler of the runner's catches it)."""


def _apply(table: Path, deleter: Any) -> Any:
    decl = TableDeclaration(
        name="t", path=str(table), source_file="tables/t.yml",
        clean=CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
        file_sizing=FileSizing(small_file_limit=0))
    return apply_table(decl, None, now=datetime.now(UTC), spark_settings=LOCAL, deleter_factory=lambda: deleter)


def _first_deletes_then_killed() -> Any:
    """A deleter that deletes the first batch it is given (the pending clean's) and is killed at the
    second (the fresh clean's): the apply stops between the two cleans, as a kill -9 or a store
    outage may stop it, with the pending clean completed."""
    calls: list[int] = []

    def deleter(storage: Storage, paths: Any) -> list[DeleteResult]:
        calls.append(len(paths))
        if len(calls) > 1:
            raise Killed()
        return storage.delete_many(list(paths))

    return deleter


def _recorded_bound(table: Path, clean_time: str) -> str | None:
    meta = read_table_metadata(storage_for(str(table)))
    requested = table / meta.timeline_folder / f"{clean_time}.clean.requested"
    plan = decode_clean_plan(requested.read_bytes(), path=str(requested), base_path=str(table))
    return plan.earliest_instant_to_retain.timestamp if plan.earliest_instant_to_retain else None


def _completed_cleans(table: Path) -> list[str]:
    meta = read_table_metadata(storage_for(str(table)))
    return [str(i.time) for i in meta.timeline.completed(Action.CLEAN)]


def _hudi_pending_clean(table: Path, files: list[str], partition: str) -> str:
    """`<t>.clean.requested` as Hudi's cleaner leaves it (KEEP_LATEST_FILE_VERSIONS: no bound)."""
    meta = read_table_metadata(storage_for(str(table)))
    latest = max(i.time for i in meta.timeline.instants)
    time = latest.plus_millis(1000)
    plan = CleanPlan(None, str(latest), "KEEP_LATEST_FILE_VERSIONS",
                     {partition: tuple(CleanFileInfo(f"file:{table}/{f}") for f in files)})
    (table / meta.timeline_folder / f"{time}.{Action.CLEAN.value}.requested").write_bytes(encode_clean_plan(plan))
    return str(time)


def _old_slices(table: Path, partition: str) -> list[str]:
    newest = max(InstantTime(p.name.rsplit("_", 1)[1].split(".")[0]) for p in (table / partition).glob("*.parquet"))
    return sorted(f"{partition}/{p.name}" for p in (table / partition).glob("*.parquet")
                  if InstantTime(p.name.rsplit("_", 1)[1].split(".")[0]) < newest)


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("lands", ["during the killed deletes", "between the runs"])
def test_an_interrupted_clean_finished_later_never_vouches_for_a_clustering_that_landed_meanwhile(
        version, lands, tmp_path):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=version)
    builder.commit(writes=2)
    builder.commit(updates=1)  # old slices in both partitions: the clean has work
    landed: list[str] = []

    def killed(storage: Storage, paths: Any) -> list[DeleteResult]:
        if lands == "during the killed deletes":
            landed.append(str(builder.clustering("p=b")))  # a Hudi writer, meanwhile: asked before the clean
            storage.delete_many(list(paths))
        raise Killed()

    with pytest.raises(Killed):
        _apply(table, killed)
    if lands == "between the runs":
        landed.append(str(builder.clustering("p=b")))
    builder.commit(updates={"p=a": 1})  # the table is written on, so the archiver may reach the clustering
    (pending,) = [str(i.time) for i, _ in read_table_metadata(storage_for(str(table))).pending_cleans]

    with pytest.raises(Killed):
        _apply(table, _first_deletes_then_killed())

    assert pending in _completed_cleans(table)
    bound = _recorded_bound(table, pending)
    assert bound is not None and bound < landed[0], (bound, landed)
    _, rows = oracle_snapshot(table)
    archive_as_hudi_may(table)
    assert oracle_snapshot(table)[1] == rows  # no record read twice


def test_a_hudi_pending_clean_planned_beside_a_pending_clustering_never_vouches_for_it(tmp_path):
    """Hudi's planner leaves the groups of a clustering pending when it plans out of its clean, yet
    its KEEP_LATEST_FILE_VERSIONS clean records no bound (HUDI-6352): finished once the clustering has
    completed, it would vouch for groups it never deleted."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    builder.commit(updates=1)
    clustering = str(builder.clustering("p=b"))
    builder.commit(updates={"p=a": 1})
    # As Hudi plans it while the clustering is still pending: p=b's groups are not replaced yet.
    pending = _hudi_pending_clean(table, _old_slices(table, "p=a"), "p=a")
    builder.commit(updates={"p=a": 1})

    with pytest.raises(Killed):
        _apply(table, _first_deletes_then_killed())

    assert pending in _completed_cleans(table)
    bound = _recorded_bound(table, pending)
    assert bound is not None and bound < clustering, bound
    _, rows = oracle_snapshot(table)
    archive_as_hudi_may(table)
    assert oracle_snapshot(table)[1] == rows  # readers follow the link
    _, rows = oracle_snapshot(table)
    archive_as_hudi_may(table)
    assert oracle_snapshot(table)[1] == rows


def test_a_pending_clean_never_vouches_for_replaced_groups_behind_a_linked_partition(tmp_path):
    """The runner never lists or cleans a partition folder reached through a symbolic link, and
    refuses a new clean whose bound would pass a replacecommit whose groups are left there
    (test_symlinked_partition.py). A pending clean whose deletes were done, with nothing left for a
    fresh clean elsewhere, was finished past such a replacecommit."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    builder.commit(updates=1)
    clustering = str(builder.clustering("p=b"))
    builder.commit(updates={"p=a": 1})
    old = _old_slices(table, "p=a")
    pending = _hudi_pending_clean(table, old, "p=a")
    for path in old:  # Hudi's cleaner deleted them, then stopped before completing
        (table / path).unlink()
    moved = tmp_path / "other_disk" / "p=b"
    moved.parent.mkdir()
    shutil.move(str(table / "p=b"), str(moved))
    os.symlink(moved, table / "p=b", target_is_directory=True)
    replaced_left = sorted(p.name for p in moved.iterdir() if p.suffix == ".parquet")

    result = _apply(table, lambda storage, paths: storage.delete_many(list(paths)))

    assert result.status.value == "success", result.error
    assert sorted(p.name for p in moved.iterdir() if p.suffix == ".parquet") == replaced_left
    assert pending in _completed_cleans(table)
    bound = _recorded_bound(table, pending)
    assert bound is not None and bound < clustering, bound
    _, rows = oracle_snapshot(table)
    archive_as_hudi_may(table)
    assert oracle_snapshot(table)[1] == rows  # readers follow the link


@pytest.mark.parametrize("version", [6, 8])
def test_a_pending_clean_of_a_slice_a_completed_rollback_made_latest_again_is_refused(version, tmp_path):
    """Safe already (kept for coverage): between the runs a rollback of the latest write completes
    (its files and instant gone), so the version a pending clean was planned to delete is the latest
    again. Finishing the clean is checked against the table as it is now, and refused."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=version)
    builder.commit(writes=1)
    update = str(builder.commit(updates=1))
    pending = _hudi_pending_clean(table, _old_slices(table, "p=a"), "p=a")
    meta = read_table_metadata(storage_for(str(table)))
    for path in (table / "p=a").glob(f"*_{update}.parquet"):  # the rollback: the update's files, then its instant
        path.unlink()
    for path in (table / meta.timeline_folder).glob(f"{update}*"):
        path.unlink()
    before = sorted(p.name for p in (table / "p=a").iterdir())

    with pytest.raises(RefusedError, match="readers still need"):
        _apply(table, lambda storage, paths: storage.delete_many(list(paths)))

    assert sorted(p.name for p in (table / "p=a").iterdir()) == before
    assert pending not in _completed_cleans(table)
