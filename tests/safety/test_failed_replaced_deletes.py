"""Attack: a clean whose deletes inside replaced file groups partly fail.

Hudi's `CleanActionExecutor` completes such a clean, listing those files as failed. But Hudi's
archiver takes every group replaced before the last completed clean's earliest commit to retain
(before the clean itself when it records none) for cleaned
(`ClusteringUtils.getEarliestInstantToRetainForClustering`), and may archive the replacecommit that
hides them: the files left behind are then read beside the groups that replaced them, every record
twice. The runner leaves such a clean pending instead (its requested and inflight files stay, so no
completed clean vouches for those groups), fails the table naming the files, and the next apply
finishes it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.errors import RunnerError
from runner.execute.apply import apply_table
from runner.hudi.instant import Action
from runner.hudi.state import read_table_metadata
from runner.storage import DeleteResult, Storage, storage_for
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import archive_as_hudi_may

LOCAL = SparkSettings(master="local[1]")


def _clustered(table: Path) -> set[str]:
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=2)
    builder.clustering("p=a")  # both groups into one: the two stay on disk, replaced
    builder.commit(updates=1)
    builder.commit(updates=1)
    return {fid for (_, fid) in read_table_metadata(storage_for(str(table))).replaced}


def _apply(table: Path, deleter: Any, policy: CleanPolicy) -> Any:
    decl = TableDeclaration(name="t", path=str(table), source_file="tables/t.yml", clean=policy,
                            file_sizing=FileSizing(small_file_limit=0))
    return apply_table(decl, None, now=datetime.now(UTC), spark_settings=LOCAL, deleter_factory=lambda: deleter)


def _failing_one_of(replaced: set[str], victims: list[str]) -> Any:
    """Deletes all but the first file of a replaced group, which fails as a store's refusal would."""

    def deleter(storage: Storage, paths: Any) -> list[DeleteResult]:
        mine = sorted(p for p in paths if p.rsplit("/", 1)[-1].split("_")[0] in replaced)
        assert mine, paths
        victims.append(mine[0])
        return [*storage.delete_many([p for p in paths if p != mine[0]]),
                DeleteResult(mine[0], False, f"{mine[0]}: AccessDenied (injected)")]

    return deleter


def _plain(storage: Storage, paths: Any) -> list[DeleteResult]:
    return storage.delete_many(list(paths))


POLICIES = [CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
            CleanPolicy(CleanPolicyName.KEEP_LATEST_COMMITS, commits_retained=1)]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.policy.value)
def test_a_failed_delete_in_a_replaced_group_never_lets_the_archiver_drop_its_replacecommit(policy, tmp_path):
    table = tmp_path / "t"
    replaced = _clustered(table)
    _, rows = oracle_snapshot(table)
    victims: list[str] = []

    with pytest.raises(RunnerError, match="could not be deleted") as error:
        _apply(table, _failing_one_of(replaced, victims), policy)

    (victim,) = victims
    assert victim in str(error.value) and "pending" in str(error.value)
    assert (table / victim).exists()
    meta = read_table_metadata(storage_for(str(table)))
    assert not meta.timeline.completed(Action.CLEAN)  # no completed clean vouches for the groups
    assert [str(i.state.value) for i in meta.timeline.pending(Action.CLEAN)] == ["inflight"]
    archive_as_hudi_may(table)
    assert oracle_snapshot(table)[1] == rows  # no record read twice


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.policy.value)
def test_the_next_apply_finishes_the_clean_left_pending(policy, tmp_path):
    table = tmp_path / "t"
    replaced = _clustered(table)
    _, rows = oracle_snapshot(table)
    victims: list[str] = []
    with pytest.raises(RunnerError):
        _apply(table, _failing_one_of(replaced, victims), policy)

    result = _apply(table, _plain, policy)

    assert not (table / victims[0]).exists()
    meta = read_table_metadata(storage_for(str(table)))
    assert meta.timeline.completed(Action.CLEAN) and not meta.timeline.pending(Action.CLEAN)
    assert result.files_deleted >= 1
    archive_as_hudi_may(table)
    assert oracle_snapshot(table)[1] == rows
