"""A Hudi writer that rolls back the runner's clustering while the runner is still running it.

The runner's resize is a clustering on the timeline like any other, and Hudi's table services take
pending clusterings for theirs: async or inline clustering, and the `run_clustering` procedure, roll
an *inflight* clustering back (`rollbackInflightClustering`: its files deleted, its instant back to
requested) before executing the plan themselves; a writer with
`hoodie.clustering.rollback.pending.replacecommit.on.conflict` rolls it back outright. If that lands
after the runner wrote its new files and before it completes the replacecommit, completing it
anyway would hide the replaced file groups behind files that are gone.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

import runner.execute.resize as resize_module
from runner.cli import main
from runner.hudi.instant import Action
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.safety.conftest import SIZED, project_for
from tests.safety.test_pending_rollback import _ROLLBACK_PLAN, _rollback_requested


def _rows(table: Path) -> list[dict[str, Any]]:
    from hudi import HudiTable

    rows = pa.Table.from_batches(HudiTable(str(table)).read()).to_pylist()
    return sorted(({k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in rows), key=repr)


def _hudi_rolls_back_the_clustering(table: Path, *, outright: bool) -> None:
    """Roll back the one pending clustering as Hudi does: a rollback plan naming its files, the files
    deleted, the instant taken back to requested (or removed altogether), the rollback completed."""
    folder = table / ".hoodie"
    meta = read_table_metadata(storage_for(str(table)))
    (clustering,) = meta.timeline.pending(Action.REPLACE_COMMIT)
    written = sorted(p for p in table.rglob(f"*_{clustering.time}.parquet"))
    time = max(i.time for i in meta.timeline.instants).plus_millis(1000)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(_ROLLBACK_PLAN), [{
        "instantToRollback": {"commitTime": str(clustering.time), "action": "replacecommit"},
        "RollbackRequests": [{"partitionPath": p.parent.name, "fileId": None, "latestBaseInstant": None,
                              "filesToBeDeleted": [f"file:{p}"], "logBlocksToBeDeleted": None} for p in written],
        "version": 1}])
    (folder / f"{time}.rollback.requested").write_bytes(out.getvalue())
    (folder / f"{time}.rollback.inflight").write_bytes(b"")
    for path in written:
        os.remove(path)
    (folder / f"{clustering.time}.replacecommit.inflight").unlink()
    if outright:
        (folder / f"{clustering.time}.replacecommit.requested").unlink()
    (folder / f"{time}.rollback").write_bytes(b"")  # its metadata is not what the runner reads


@pytest.mark.parametrize("outright", [False, True], ids=["before-executing-it-itself", "on-conflict"])
def test_a_clustering_hudi_rolled_back_meanwhile_is_never_completed(outright, tmp_path, capsys, monkeypatch):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=3)
    root = project_for(table, tmp_path / "project", retained=2, sizing=SIZED)
    before = _rows(table)
    real_failpoint = resize_module.failpoint

    def hudi_lands(name: str) -> None:
        real_failpoint(name)
        if name == "after_rewrite":
            _hudi_rolls_back_the_clustering(table, outright=outright)

    monkeypatch.setattr(resize_module, "failpoint", hudi_lands)
    code = main(["apply", "--project-dir", str(root), "--auto-approve"])
    out = " ".join(capsys.readouterr().out.split())

    assert code == 1, out
    assert "rolled back before completing" in out and "another writer rolled the clustering back" in out, out
    meta = read_table_metadata(storage_for(str(table)))
    assert not meta.replaced  # no replacecommit completed over files that are gone
    assert _rows(table) == before
    assert len(builder.file_ids("p=a")) == 3


def test_a_clustering_hudi_took_back_to_requested_before_this_apply_is_finished(tmp_path, capsys):
    """A rollback of an earlier attempt (the instant left requested) is history, not a takeover of this one."""
    table, root, before = _scheduled_resize(tmp_path)
    _hudi_rolls_back_the_clustering(table, outright=False)

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])
    out = capsys.readouterr().out

    assert code == 0, out
    meta = read_table_metadata(storage_for(str(table)))
    assert len(meta.replaced) == 3
    assert _rows(table) == before


def test_an_interrupted_clustering_hudi_is_rolling_back_is_not_finished(tmp_path, capsys):
    """A rollback of the runner's clustering still pending (Hudi stopped before or while deleting):
    finishing the clustering would complete what that rollback is undoing."""
    table, root, before = _scheduled_resize(tmp_path)
    storage = storage_for(str(table))
    (clustering,) = read_table_metadata(storage).timeline.pending(Action.REPLACE_COMMIT)
    rollback = _rollback_requested(table, clustering.time, [])

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])
    out = " ".join(capsys.readouterr().out.split())

    assert f"rolled back the interrupted resize {clustering.time}" in out, out
    assert f"{rollback}.rollback" in out, out
    assert code == 0, out
    meta = read_table_metadata(storage_for(str(table)))
    assert clustering.time not in {i.time for i in meta.timeline.completed_writes}
    assert _rows(table) == before


def _scheduled_resize(tmp_path):
    """A table of three files in `p=a` whose resize into one group the runner has scheduled (the
    clustering requested, nothing written): the table, its project and its rows."""
    from datetime import UTC, datetime

    from runner.execute.resize import ResizeRunner
    from runner.plan.model import FileToRewrite, RewriteGroup, SizingStep

    table = tmp_path / "t"
    TableBuilder(table, name="t", partitions=["p=a"]).commit(writes=3)
    root = project_for(table, tmp_path / "project", retained=2, sizing=SIZED)
    before = _rows(table)
    storage = storage_for(str(table))
    inputs = tuple(FileToRewrite(p.name.split("_")[0], f"p=a/{p.name}", p.stat().st_size)
                   for p in sorted((table / "p=a").glob("*.parquet")))
    step = SizingStep(10 << 20, 5 << 20, (RewriteGroup("p=a", inputs),))
    ResizeRunner(storage, read_table_metadata(storage), spark=None,  # type: ignore[arg-type]
                 clock=lambda: datetime.now(UTC)).schedule(step)
    return table, root, before
