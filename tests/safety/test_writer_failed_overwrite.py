"""`runner.write` rolls back a failed insert overwrite before writing, as Hudi's EAGER writers do.

Hudi's EAGER failed-writes policy rolls back every pending write but compactions and clusterings
(`getInflightTimelineExcludeCompactionAndClustering`): a requested or inflight replacecommit without
a clustering plan is an insert overwrite (or delete_partition) whose writer died. Left pending, it
holds back every clean for good (the earliest commit to retain stops before the earliest pending
write), keeps its partitions out of every resize, and leaves its files in the partitions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import fastavro
import pytest

import runner
from runner.errors import RefusedError
from runner.hudi.instant import InstantTime
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import digest, files_written_at, new_row, project_for
from tests.safety.test_pending_rollback import _rollback_requested


def _failed_overwrite(tmp_path: Path) -> tuple[TableBuilder, Path, InstantTime]:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    target = builder.insert_overwrite("p=a")
    (table / ".hoodie" / f"{target}.replacecommit").unlink()  # its writer died before completing it
    return builder, table, target


def _ids(table: Path) -> list[int]:
    return sorted(row["id"] for row in oracle_snapshot(table)[1])


def test_a_failed_insert_overwrite_is_rolled_back_before_the_write(tmp_path):
    builder, table, target = _failed_overwrite(tmp_path)
    failed = files_written_at(table, target)
    assert failed
    before = _ids(table)
    root = project_for(table, tmp_path / "project")

    runner.write(new_row(builder), "t", operation="bulk_insert", project_dir=str(root))

    names = os.listdir(table / ".hoodie")
    assert not [n for n in names if n.startswith(f"{target}.replacecommit")], names
    assert not [p for p in failed if (table / p).exists()]
    (done,) = [n for n in names if n.endswith(".rollback")]
    with open(table / ".hoodie" / done, "rb") as f:
        (meta,) = list(fastavro.reader(f))
    assert meta["commitsRollback"] == [str(target)]
    assert meta["instantsRollback"] == [{"commitTime": str(target), "action": "replacecommit"}]
    assert _ids(table) == sorted([*before, 1000])


def test_a_pending_rollback_of_a_failed_insert_overwrite_is_finished(tmp_path):
    builder, table, target = _failed_overwrite(tmp_path)
    failed = files_written_at(table, target)
    _rollback_requested(table, target, failed)
    root = project_for(table, tmp_path / "project")

    runner.write(new_row(builder), "t", operation="bulk_insert", project_dir=str(root))

    names = os.listdir(table / ".hoodie")
    assert not [n for n in names if n.startswith(f"{target}.replacecommit")], names
    assert not [p for p in failed if (table / p).exists()]


def test_a_pending_clustering_is_not_rolled_back_by_the_writer(tmp_path):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=2)
    clustering = builder.clustering("p=a", pending=True)
    root = project_for(table, tmp_path / "project")

    runner.write(new_row(builder), "t", operation="bulk_insert", project_dir=str(root))

    assert (table / ".hoodie" / f"{clustering}.replacecommit.requested").exists()
    assert not [n for n in os.listdir(table / ".hoodie") if n.endswith(".rollback")]


def test_a_live_insert_overwrite_is_refused_not_rolled_back(tmp_path):
    builder, table, target = _failed_overwrite(tmp_path)
    beat = table / ".hoodie" / ".heartbeat"
    beat.mkdir(exist_ok=True)
    (beat / str(target)).write_text("")
    root = project_for(table, tmp_path / "project")
    before = digest(table)

    with pytest.raises(RefusedError) as refused:
        runner.write(new_row(builder), "t", operation="bulk_insert", project_dir=str(root))

    assert str(target) in refused.value.message
    assert digest(table) == before
    json.dumps(refused.value.to_json())
