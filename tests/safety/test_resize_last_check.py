"""A write that lands on a resized file group at any moment before the replacecommit completes must
roll the resize back, never be hidden by it.

The conflict check after the rewrite is not the last moment: on a table with a metadata table the
resize then writes its MDT deltacommit (reading column stats, writing logs in every index), and a
Hudi writer that does not share the runner's lock may commit into a group meanwhile. Hudi checks
for conflicts right before it completes a clustering; so must the runner.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import runner.execute.resize as resize_module
from runner.cli import main
from runner.hudi.instant import Action
from runner.hudi.state import read_table_metadata, read_table_state
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.mdt.crash_states import assert_metadata_table_healthy
from tests.safety.conftest import SIZED, project_for


def _oracle_rows(table: Path) -> list[dict[str, Any]]:
    """Rows the `hudi` reader returns at the latest instant, without the file name a resize changes."""
    from hudi import HudiTable

    rows = pa.Table.from_batches(HudiTable(str(table)).read()).to_pylist()
    return sorted(({k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in rows), key=repr)


@pytest.mark.parametrize("point", ["after_rewrite", "after_resize_metadata_table_commit"])
def test_a_write_landing_before_the_resize_completes_rolls_it_back(point, tmp_path, capsys, monkeypatch):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=8, metadata_table=True)
    builder.commit(writes=3)
    root = project_for(table, tmp_path / "project", retained=2, sizing=SIZED)
    written = builder.file_ids("p=a")[0]
    real_failpoint = resize_module.failpoint

    def writer_lands(name: str) -> None:
        real_failpoint(name)
        if name == point:  # a Hudi writer, outside the runner's lock, updates one input group
            builder.commit(updates={"p=a": [written]}, at=datetime.now(UTC).replace(tzinfo=None))

    monkeypatch.setattr(resize_module, "failpoint", writer_lands)
    code = main(["apply", "--project-dir", str(root), "--auto-approve"])
    out = capsys.readouterr()

    assert code == 1, out.out
    assert "rolled back before completing" in out.out and written in out.out
    meta = read_table_metadata(storage_for(str(table)))
    assert not meta.replaced
    assert not meta.timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING)
    assert not read_table_state(storage_for(str(table))).uncommitted_files
    expected = sorted(({k: v for k, v in r.items() if k != "_hoodie_file_name"}
                       for r in builder.expected_rows().to_pylist()), key=repr)
    assert _oracle_rows(table) == expected  # the update is what readers see
    assert_metadata_table_healthy(table)  # the resize's own deltacommit went with it
