"""A write in flight while `runner apply` resizes: no update may be lost.

The concurrent writer is the real `runner.write`, made to behave like a Hudi writer that does not
share the runner's lock (Hudi writers use their own lock provider): its lock is replaced by a
no-op, and its crash points are turned into pause points where apply runs in between. The `hudi`
reader is the oracle for what readers see afterwards.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import runner
from runner.cli import main
from runner.hudi.instant import Action
from runner.hudi.state import read_table_metadata, read_table_state
from runner.storage import storage_for
from tests.plan_json import step
from tests.writer.writer_helpers import oracle_rows, table_yaml

SCHEMA = "id long, region string, name string, ts long"
COLUMNS = ("id", "region", "name", "ts")
SIZING = "file_sizing:\n  max_file_size: 10MiB\n  small_file_limit: 5MiB\n"


@pytest.fixture
def table(tmp_path: Path, spark: Any) -> tuple[Path, Path]:
    """A project with table `orders`: three bulk inserts, so three small file groups per region."""
    root = tmp_path / "proj"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: concurrent\n")
    (root / "tables" / "orders.yml").write_text(table_yaml("orders", sizing=SIZING))
    for batch in range(3):
        rows = [(batch * 100 + i, region, f"v{batch}", 1) for i in range(20) for region in ("eu", "us")]
        rows = [(r[0] * 2 + (r[1] == "us"), *r[1:]) for r in rows]  # unique ids across regions
        runner.write(spark.createDataFrame(rows, SCHEMA), "orders", operation="bulk_insert", project_dir=root)
    return root, root / "warehouse" / "orders"


def _as_hudi_writer(monkeypatch: pytest.MonkeyPatch, pause: dict[str, Callable[[], None]], *,
                    allow_updates_to_clustering: bool = False) -> None:
    """runner.write without the runner's lock, pausing at its crash points to run `pause[name]`."""
    write_module = importlib.import_module("runner.writer.write")  # the package re-exports `write`

    monkeypatch.setattr(write_module, "TableLock", lambda *a, **k: contextlib.nullcontext())
    monkeypatch.setattr(write_module, "failpoint", lambda name: pause.get(name, lambda: None)())
    if allow_updates_to_clustering:  # Hudi's SparkAllowUpdateStrategy instead of the reject default
        monkeypatch.setattr(write_module, "_refuse_updates_to", lambda groups, table: None)


def _apply(root: Path) -> tuple[int, dict[str, Any]]:
    code = main(["apply", "--project-dir", str(root), "--auto-approve", "--format", "json"])
    return code, json.loads((root / "target" / "run_results.json").read_text())["tables"][0]


def _group_of(base: Path, record_id: int) -> tuple[str, str]:
    state = read_table_state(storage_for(str(base)))
    for group in state.active_groups:
        assert group.latest is not None and group.latest.base_file is not None
        import pyarrow.parquet as pq

        ids = pq.read_table(base / group.partition / group.latest.base_file.name, columns=["id"]).column(0)
        if record_id in ids.to_pylist():
            return group.key
    raise AssertionError(f"id {record_id} not found")


def _expected(base: Path, changes: dict[int, tuple[Any, ...]]) -> list[dict[str, Any]]:
    rows = {r["id"]: r for r in oracle_rows(base, None, COLUMNS)}
    rows.update({k: dict(zip(COLUMNS, v, strict=True)) for k, v in changes.items()})
    return sorted(rows.values(), key=repr)


@pytest.mark.parametrize("point", ["after_inflight", "after_files"])
def test_an_upsert_in_flight_keeps_its_group_out_of_the_resize(point, table, spark, monkeypatch):
    root, base = table
    busy = _group_of(base, 0)
    expected = _expected(base, {0: (0, "eu", "updated", 2)})
    outcome: dict[str, Any] = {}

    def run_apply() -> None:
        outcome["apply"] = _apply(root)

    _as_hudi_writer(monkeypatch, {point: run_apply})
    runner.write(spark.createDataFrame([(0, "eu", "updated", 2)], SCHEMA), "orders", operation="upsert",
                 project_dir=root)

    code, report = outcome["apply"]
    assert code == 0, report
    assert report["files_rewritten"] > 0  # the resize ran, on the idle groups
    meta = read_table_metadata(storage_for(str(base)))
    assert busy not in meta.replaced
    assert any(key[0] == "region=us" for key in meta.replaced)
    assert oracle_rows(base, None, COLUMNS) == expected


def test_an_insert_in_flight_keeps_its_whole_partition_out_of_the_resize(table, spark, monkeypatch):
    root, base = table
    expected = _expected(base, {1000: (1000, "eu", "new", 2)})
    outcome: dict[str, Any] = {}
    _as_hudi_writer(monkeypatch, {"after_inflight": lambda: outcome.setdefault("apply", _apply(root))})
    runner.write(spark.createDataFrame([(1000, "eu", "new", 2)], SCHEMA), "orders", operation="upsert",
                 project_dir=root)

    code, report = outcome["apply"]
    assert code == 0, report
    meta = read_table_metadata(storage_for(str(base)))
    assert meta.replaced and not any(key[0] == "region=eu" for key in meta.replaced)
    assert oracle_rows(base, None, COLUMNS) == expected


def test_a_pending_write_of_unknown_reach_blocks_every_resize(table, capsys):
    root, base = table
    meta = read_table_metadata(storage_for(str(base)))
    latest = max(i.time for i in meta.timeline.instants)
    (base / ".hoodie" / f"{int(str(latest)) + 1}.commit.requested").write_bytes(b"")  # profile not yet written
    code = main(["plan", "--project-dir", str(root), "--format", "json"])
    data = json.loads(capsys.readouterr().out)["tables"][0]
    assert code == 0 and data["status"] == "in_sync"
    assert step(data, "resize")["groups"] == []
    assert any(n.startswith("no resize this run: the pending commit") for n in data["notes"])


def test_a_write_that_lands_during_the_rewrite_rolls_the_resize_back(table, spark, monkeypatch):
    root, base = table
    expected = _expected(base, {0: (0, "eu", "updated", 2)})
    import runner.execute.resize as resize_module

    real_failpoint = resize_module.failpoint

    def during_rewrite(name: str) -> None:
        real_failpoint(name)
        if name == "after_rewrite":  # a Hudi writer allowed to update groups in pending clustering
            runner.write(spark.createDataFrame([(0, "eu", "updated", 2)], SCHEMA), "orders",
                         operation="upsert", project_dir=root)

    _as_hudi_writer(monkeypatch, {}, allow_updates_to_clustering=True)
    monkeypatch.setattr(resize_module, "failpoint", during_rewrite)
    code, report = _apply(root)

    assert code == 1
    assert report["error"]["type"] == "RefusedError"
    assert "rolled back before completing" in report["error"]["message"]
    meta = read_table_metadata(storage_for(str(base)))
    assert not meta.replaced
    assert not meta.timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING)
    assert oracle_rows(base, None, COLUMNS) == expected
    state = read_table_state(storage_for(str(base)))
    assert not state.uncommitted_files  # the rewritten copies were removed with the instant

    monkeypatch.setattr(resize_module, "failpoint", real_failpoint)
    code, report = _apply(root)  # with the writer done, the next apply resizes everything
    assert code == 0 and report["files_rewritten"] > 0
    assert oracle_rows(base, None, COLUMNS) == expected


def test_an_interrupted_resize_whose_group_was_written_is_rolled_back_not_finished(table, spark, monkeypatch):
    from runner.declarations.model import FileSizing
    from runner.execute.resize import ResizeRunner
    from runner.plan.sizing import plan_sizing

    root, base = table
    storage = storage_for(str(base))
    state = read_table_state(storage)
    step = plan_sizing(FileSizing(max_file_size=10 * 1024**2, small_file_limit=5 * 1024**2), state)
    assert step is not None and step.groups
    clock = lambda: datetime.now(UTC)  # noqa: E731
    ResizeRunner(storage, state.metadata, spark=spark, clock=clock).schedule(step)  # apply died right here
    expected = _expected(base, {0: (0, "eu", "updated", 2)})
    _as_hudi_writer(monkeypatch, {}, allow_updates_to_clustering=True)
    runner.write(spark.createDataFrame([(0, "eu", "updated", 2)], SCHEMA), "orders", operation="upsert",
                 project_dir=root)

    code, report = _apply(root)

    assert code == 0, report
    assert any(n.startswith("rolled back the interrupted resize") for n in report["notes"])
    assert oracle_rows(base, None, COLUMNS) == expected
    meta = read_table_metadata(storage)
    assert _group_of(base, 0) not in meta.replaced
