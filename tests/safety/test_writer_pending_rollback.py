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

import pytest

import runner
from runner.errors import RefusedError
from runner.testing.tables import TableBuilder
from tests.safety.conftest import digest, files_written_at, new_row, project_for
from tests.safety.test_pending_rollback import _rollback_requested


@pytest.mark.parametrize("undone", ["commit", "insert_overwrite"])
def test_runner_write_does_not_finish_hudi_s_rollback_of_a_completed_write(undone, tmp_path):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    target = builder.commit(updates=1) if undone == "commit" else builder.insert_overwrite("p=a")
    rollback = _rollback_requested(table, target, files_written_at(table, target))
    root = project_for(table, tmp_path / "project")
    before = digest(table)

    with pytest.raises(RefusedError) as refused:
        runner.write(new_row(builder), "t", operation="bulk_insert", project_dir=str(root))

    assert f"{rollback}.rollback.requested" in refused.value.message
    assert f"completed write {target}" in refused.value.message
    assert digest(table) == before
