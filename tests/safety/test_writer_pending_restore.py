"""`runner.write` while a restore is pending on the table.

A restore to a savepoint rolls back every write after it, one by one, from the list in its plan
(`.restore.requested`). A commit that starts in between merges its records into file slices the
restore is about to undo: when the restore finishes, those writes are gone but the new commit's
files, which copied their rows, stay, and the data the user restored away is back. Hudi's write
client therefore refuses to start a commit while a restore is requested or inflight ("Found
pending restore in active timeline").
"""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from runner.hudi.instant import InstantTime
from runner.testing.tables import TableBuilder
from tests.safety.conftest import SIZED, digest, project_for

# HoodieRestorePlan (hudi-common/src/main/avro): the instants the restore rolls back.
_RESTORE_PLAN = {
    "type": "record", "name": "HoodieRestorePlan", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "instantsToRollback", "default": [], "type": {"type": "array", "items": {
            "type": "record", "name": "HoodieInstantInfo",
            "fields": [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}]}}},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "savepointToRestoreTimestamp", "type": ["null", "string"], "default": None},
    ],
}


def _restore_started(table: Path, savepoint: InstantTime, undone: InstantTime, state: str) -> InstantTime:
    """A restore to `savepoint` as Hudi leaves it before (requested) or while (inflight) it rolls
    `undone` back."""
    time = undone.plus_millis(5000)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(_RESTORE_PLAN), [{
        "instantsToRollback": [{"commitTime": str(undone), "action": "commit"}], "version": 1,
        "savepointToRestoreTimestamp": str(savepoint)}])
    (table / ".hoodie" / f"{time}.restore.requested").write_bytes(out.getvalue())
    if state == "inflight":
        (table / ".hoodie" / f"{time}.restore.inflight").write_bytes(b"")
    return time


@pytest.mark.parametrize("state", ["requested", "inflight"])
@pytest.mark.parametrize("operation", ["upsert", "insert", "bulk_insert"])
def test_runner_write_refuses_a_table_being_restored(state, operation, tmp_path):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    first = builder.commit(writes=1)
    builder.savepoint(str(first))
    second = builder.commit(updates=1)  # the write the restore is undoing
    restore = _restore_started(table, first, second, state)
    root = project_for(table, tmp_path / "project", sizing=SIZED)  # the one file is small: inserts merge into it
    rows = builder.expected_rows().drop_columns([c for c in builder.expected_rows().column_names
                                                 if c.startswith("_hoodie_")])
    new = pa.Table.from_pylist([{**rows.to_pylist()[0], "id": 1000}], schema=rows.schema)
    before = digest(table)

    with pytest.raises(RefusedError) as refused:
        runner.write(new, "t", operation=operation, project_dir=str(root))

    assert f"{restore}.restore.{state}" in refused.value.message
    assert "restore" in refused.value.hint
    assert digest(table) == before
