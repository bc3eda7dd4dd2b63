"""`runner.write` finding a pending rollback it did not start: Hudi's rollback of a *completed* write.

`runner.write` finishes pending rollbacks before it writes, as Hudi's EAGER writers do. Its own
rollbacks (and Hudi's of failed writes) undo a commit that never completed: delete the commit's
files, then its requested and inflight instants. A rollback of a completed write (`hudi-cli commit
rollback`, `rollback_to_instant`, each step of a restore) is another operation: Hudi first takes the
completed instant back to inflight, and the write may be a replacecommit (an insert overwrite, a
clustering) whose completed instant hides the groups it replaced. Finished as a failed commit, its
files go while its completed instant stays: readers keep a commit whose files are gone, or, for a
replacecommit, lose both the replaced groups and the new ones.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from runner.hudi.instant import InstantTime
from runner.testing.tables import TableBuilder
from tests.safety.conftest import digest, project_for
from tests.safety.test_pending_rollback import _rollback_requested


def _new_row(builder: TableBuilder) -> pa.Table:
    rows = builder.expected_rows()
    rows = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    return pa.Table.from_pylist([{**rows.to_pylist()[0], "id": 1000}], schema=rows.schema)


def _written_by(table: Path, time: InstantTime) -> list[str]:
    return sorted(str(p.relative_to(table)) for p in table.rglob(f"*_{time}.parquet"))


@pytest.mark.parametrize("undone", ["commit", "insert_overwrite"])
def test_runner_write_does_not_finish_hudi_s_rollback_of_a_completed_write(undone, tmp_path):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    target = builder.commit(updates=1) if undone == "commit" else builder.insert_overwrite("p=a")
    rollback = _rollback_requested(table, target, _written_by(table, target))
    root = project_for(table, tmp_path / "project")
    before = digest(table)

    with pytest.raises(RefusedError) as refused:
        runner.write(_new_row(builder), "t", operation="bulk_insert", project_dir=str(root))

    assert f"{rollback}.rollback.requested" in refused.value.message
    assert f"completed write {target}" in refused.value.message
    assert digest(table) == before
