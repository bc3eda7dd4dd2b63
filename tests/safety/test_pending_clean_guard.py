"""A pending clean found on the timeline is checked against everything the runner's own planner
protects, not only the latest slice: a file slice a pending compaction still reads (readers merge
it until the compaction completes), and the files of a write that has not committed yet."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.hudi.state import read_table_state
from runner.storage import storage_for
from runner.testing.tables import MERGE_ON_READ, TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import apply_json, digest, project_for
from tests.safety.test_unreviewed_steps import _hudi_pending_clean


def _refused_and_unchanged(table: Path, root: Path, capsys) -> str:
    before = digest(table)
    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")
    assert code == 1, report
    error = report["tables"][0]["error"]
    assert error["type"] == "RefusedError"
    assert digest(table) == before
    return str(error["message"])


@pytest.mark.parametrize("which", ["base", "log"])
def test_a_pending_clean_of_the_slice_a_pending_compaction_reads_is_refused(which, tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], table_type=MERGE_ON_READ)
    builder.commit(writes=1)
    builder.commit(updates=1)  # a log file on the group's only slice
    builder.pending_compaction()
    readers_see = oracle_snapshot(table)
    state = read_table_state(storage_for(str(table)))
    (group,) = state.file_groups
    needed = next(s for s in group.slices if s.files)  # the slice the compaction reads; readers merge it
    name = next(f.name for f in needed.files if (f.name.endswith(".parquet")) == (which == "base"))
    _hudi_pending_clean(table, [f"p=a/{name}"], "p=a")
    root = project_for(table, tmp_path / "project")

    message = _refused_and_unchanged(table, root, capsys)

    assert f"p=a/{name}" in message and "pending compaction" in message
    assert oracle_snapshot(table) == readers_see


def test_a_pending_clean_of_an_uncommitted_write_is_refused(tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    builder.inflight_commit(writes=1)  # a write in flight: it may still commit these files
    (written,) = builder.failed_files
    _hudi_pending_clean(table, [f"p=a/{written.name}"], "p=a")
    root = project_for(table, tmp_path / "project")

    message = _refused_and_unchanged(table, root, capsys)

    assert f"p=a/{written.name}" in message and "not committed" in message


def test_a_pending_clean_reaching_into_a_nested_table_is_refused(tmp_path, capsys):
    """Hudi's file-system listing takes every folder holding `.hoodie_partition_metadata` for a
    partition, so an outer table's cleaner may list an inner table's files; they are not the outer
    table's to delete, whatever the outer table's slices say."""
    table = tmp_path / "t"
    outer = TableBuilder(table, name="t", partitions=["x"], partition_field="region")
    outer.commit(writes=1)
    inner_path = table / "x" / "inner"
    inner = TableBuilder(inner_path, name="inner", partitions=["p"], partition_field="region", seed=1)
    inner.commit(writes=1)
    readers_see = oracle_snapshot(inner_path)
    (latest,) = [p.name for p in (inner_path / "p").glob("*.parquet")]
    _hudi_pending_clean(table, [f"x/inner/p/{latest}"], "x/inner/p")
    root = project_for(table, tmp_path / "project")
    inner_before = digest(inner_path)

    message = _refused_and_unchanged(table, root, capsys)

    assert "x/inner" in message and "nested" in message
    assert digest(inner_path) == inner_before
    assert oracle_snapshot(inner_path) == readers_see
