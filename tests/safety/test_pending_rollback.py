"""A rollback of a completed write (or a restore) in progress: the slices before that write become
the latest again once it completes, so apply must not clean them away (or resize) meanwhile."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from runner.cli import main
from runner.hudi.instant import InstantTime
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.safety.conftest import digest, project_for

# HoodieRollbackPlan and HoodieInstantInfo (hudi-common/src/main/avro), the fields a plan carries.
_ROLLBACK_PLAN = {
    "type": "record", "name": "HoodieRollbackPlan", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "instantToRollback", "default": None, "type": ["null", {
            "type": "record", "name": "HoodieInstantInfo",
            "fields": [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}]}]},
        {"name": "RollbackRequests", "default": None, "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "HoodieRollbackRequest", "fields": [
                {"name": "partitionPath", "type": "string"},
                {"name": "fileId", "type": ["null", "string"], "default": None},
                {"name": "latestBaseInstant", "type": ["null", "string"], "default": None},
                {"name": "filesToBeDeleted", "type": {"type": "array", "items": "string"}, "default": []},
                {"name": "logBlocksToBeDeleted", "type": ["null", {"type": "map", "values": "long"}],
                 "default": None}]}}]},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}


def _rollback_requested(table: Path, target: InstantTime, files: list[str]) -> InstantTime:
    """`T.rollback.requested` and `T.rollback.inflight` as Hudi leaves them before deleting anything."""
    meta = read_table_metadata(storage_for(str(table)))
    time = max(i.time for i in meta.timeline.instants).plus_millis(1000)
    requests = [{"partitionPath": f.rsplit("/", 1)[0], "fileId": None, "latestBaseInstant": None,
                 "filesToBeDeleted": [f"file:{table}/{f}"], "logBlocksToBeDeleted": None} for f in files]
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(_ROLLBACK_PLAN),
                    [{"instantToRollback": {"commitTime": str(target), "action": "commit"},
                      "RollbackRequests": requests, "version": 1}])
    folder = table / meta.timeline_folder
    (folder / f"{time}.rollback.requested").write_bytes(out.getvalue())
    (folder / f"{time}.rollback.inflight").write_bytes(b"")
    return time


def _finish_rollback(table: Path, target: InstantTime, files: list[str], time: InstantTime) -> None:
    """What Hudi does next: delete the write's files, complete the rollback, drop the write's instant."""
    folder = table / read_table_metadata(storage_for(str(table))).timeline_folder
    for f in files:
        os.remove(table / f)
    (folder / f"{time}.rollback.inflight").unlink()
    (folder / f"{time}.rollback.requested").unlink()
    for name in (f"{target}.commit", f"{target}.commit.requested", f"{target}.inflight"):
        (folder / name).unlink(missing_ok=True)


def _rows(table: Path) -> list[dict[str, Any]]:
    from hudi import HudiTable

    batches = HudiTable(str(table)).read()
    return sorted(pa.Table.from_batches(batches).to_pylist(), key=repr) if batches else []


def _expected(builder: TableBuilder, as_of: str) -> list[dict[str, Any]]:
    return sorted(builder.expected_rows(as_of).to_pylist(), key=repr)


def _written_by(table: Path, time: InstantTime) -> list[str]:
    return sorted(str(p.relative_to(table)) for p in table.rglob(f"*_{time}.parquet"))


@pytest.mark.parametrize("version", [6, 8])
def test_apply_refuses_while_a_completed_write_is_being_rolled_back(version, tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=version)
    first = builder.commit(writes=1)
    second = builder.commit(updates=1)  # KEEP_LATEST_FILE_VERSIONS(1) now deletes the first slices
    undone = _written_by(table, second)
    rollback = _rollback_requested(table, second, undone)
    root = project_for(table, tmp_path / "project")
    before = digest(table)

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])
    out = capsys.readouterr().out

    assert code == 1, out
    assert f"{rollback}.rollback" in out and f"rollback of the completed write {second}" in out
    assert digest(table) == before
    _finish_rollback(table, second, undone, rollback)
    assert _rows(table) == _expected(builder, first)  # the first slices are what readers fall back to


def test_a_rollback_of_a_write_that_never_completed_does_not_block(tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    latest = builder.commit(updates=1)
    failed = builder.inflight_commit(writes=1)
    _rollback_requested(table, failed, [str(p.relative_to(table)) for p in table.rglob(f"*_{failed}.parquet")])
    root = project_for(table, tmp_path / "project")

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])

    assert code == 0, capsys.readouterr().out
    assert _rows(table) == _expected(builder, latest)


def test_plan_names_the_rollback_too(tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    second = builder.commit(updates=1)
    folder = table / ".hoodie"
    time = second.plus_millis(1000)
    (folder / f"{time}.rollback.requested").write_bytes(b"")  # unreadable: what it undoes is unknown
    root = project_for(table, tmp_path / "project")

    code = main(["plan", "--project-dir", str(root)])
    out = capsys.readouterr().out

    assert code == 1, out
    assert f"{time}.rollback.requested" in out and "does not say which write it undoes" in out


def test_a_restore_in_progress_blocks_apply(tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    second = builder.commit(updates=1)
    time = second.plus_millis(1000)
    (table / ".hoodie" / f"{time}.restore.inflight").write_bytes(b"")
    root = project_for(table, tmp_path / "project")
    before = digest(table)

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])
    out = capsys.readouterr().out

    assert code == 1, out
    assert f"{time}.restore.inflight" in out and "a restore is in progress" in out
    assert digest(table) == before
