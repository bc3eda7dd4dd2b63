"""A rollback, restore or savepoint that lands after apply's locked re-plan, before the clean's
deletes or before a resize completes.

Hudi writers do not take the runner's lock, and apply spends real time between its re-plan and its
first delete (starting Spark, preparing the metadata table, writing the clean's plan). Whatever
lands there decides which slices readers need: a rollback of the latest write makes the slices
before it the latest again, a savepoint lists the slices of its instant. The clean planned from
the older timeline would delete exactly those, and a resize would copy the rows being undone into
new file groups. Each is simulated as a Hudi process would leave the timeline, at the moment apply
reaches a failpoint, and the `hudi` reader says what readers see once Hudi has finished.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import runner.execute.apply as apply_module
import runner.execute.clean as clean_module
import runner.execute.resize as resize_module
from runner.cli import main
from runner.hudi.instant import Action, InstantTime
from runner.hudi.state import read_table_metadata, read_table_state
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.mdt.crash_states import assert_metadata_table_healthy
from tests.safety.conftest import SIZED, project_for
from tests.safety.test_pending_rollback import _finish_rollback, _rollback_requested


def _rows(table: Path, as_of: str | None = None) -> list[dict[str, Any]]:
    from hudi import HudiReadOptions, HudiTableBuilder

    reader = HudiTableBuilder.from_base_uri(str(table)).build()
    options = HudiReadOptions().with_as_of_timestamp(as_of) if as_of else HudiReadOptions()
    batches = reader.read(options)
    rows = pa.Table.from_batches(batches).to_pylist() if batches else []
    return sorted(({k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in rows), key=repr)


def _expected(builder: TableBuilder, as_of: str) -> list[dict[str, Any]]:
    return sorted(({k: v for k, v in r.items() if k != "_hoodie_file_name"}
                   for r in builder.expected_rows(as_of).to_pylist()), key=repr)


def _written_by(table: Path, time: InstantTime) -> list[str]:
    return sorted(str(p.relative_to(table)) for p in table.rglob(f"*_{time}.parquet"))


def _at(monkeypatch: pytest.MonkeyPatch, module: Any, point: str, lands: Callable[[], None]) -> list[str]:
    """Run `lands` (once) when `module` reaches failpoint `point`; returns the points reached."""
    reached: list[str] = []
    real = module.failpoint

    def hook(name: str) -> None:
        real(name)
        reached.append(name)
        if name == point and reached.count(name) == 1:
            lands()

    monkeypatch.setattr(module, "failpoint", hook)
    return reached


# Before the clean's plan is recorded (apply's loop, after the metadata-table step and the
# deleter), and before its first delete (after the clean's inflight file).
_CLEAN_POINTS = [(apply_module, "after_pending_finished"), (clean_module, "after_clean_inflight")]


def _two_versions(tmp_path: Path, version: int) -> tuple[Path, TableBuilder, InstantTime, InstantTime, Path]:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=version)
    first = builder.commit(writes=1)
    second = builder.commit(updates=1)  # KEEP_LATEST_FILE_VERSIONS(1) deletes the first slices
    return table, builder, first, second, project_for(table, tmp_path / "project")


def _no_clean_left(table: Path) -> None:
    meta = read_table_metadata(storage_for(str(table)))
    assert not meta.timeline.pending(Action.CLEAN)  # a pending clean is one Hudi's cleaner would run unchecked
    assert not meta.timeline.completed(Action.CLEAN)


def _apply_refused(root: Path, table: Path, kept: list[str], capsys: pytest.CaptureFixture[str],
                   *said: str) -> str:
    """Run `runner apply`: it fails saying each of `said`, every file in `kept` is still there, and
    no clean is left on the timeline. Returns the output, its whitespace collapsed."""
    code = main(["apply", "--project-dir", str(root), "--auto-approve"])
    out = capsys.readouterr().out
    assert code == 1, out
    flat = " ".join(out.split())
    for fragment in said:
        assert fragment in flat, out
    assert all((table / f).exists() for f in kept)
    _no_clean_left(table)
    return flat


@pytest.mark.parametrize("module,point", _CLEAN_POINTS, ids=[p for _, p in _CLEAN_POINTS])
@pytest.mark.parametrize("version", [6, 8])
def test_a_rollback_of_the_latest_write_landing_before_the_deletes_stops_the_clean(
        version, module, point, tmp_path, capsys, monkeypatch):
    table, builder, first, second, root = _two_versions(tmp_path, version)
    undone = _written_by(table, second)
    old = _written_by(table, first)
    _at(monkeypatch, module, point, lambda: _rollback_requested(table, second, undone))

    _apply_refused(root, table, old, capsys, f"rollback of the completed write {second}",
                   "nothing was written" if module is apply_module else "withdrawn from the timeline")
    rollback = read_table_metadata(storage_for(str(table))).timeline.pending(Action.ROLLBACK)[0].time
    _finish_rollback(table, second, undone, rollback)
    assert _rows(table) == _expected(builder, str(first))  # what readers fall back to is all there


@pytest.mark.parametrize("module,point", _CLEAN_POINTS, ids=[p for _, p in _CLEAN_POINTS])
def test_a_rollback_that_completes_before_the_deletes_stops_the_clean(module, point, tmp_path, capsys, monkeypatch):
    table, builder, first, second, root = _two_versions(tmp_path, 8)
    undone = _written_by(table, second)
    old = _written_by(table, first)

    def requested_kept() -> None:
        # Hudi keeps the requested plan of a completed rollback; keep the one the helper wrote.
        time = _rollback_requested(table, second, undone)
        folder = table / ".hoodie" / "timeline"
        plan = (folder / f"{time}.rollback.requested").read_bytes()
        _finish_rollback(table, second, undone, time)
        (folder / f"{time}.rollback.requested").write_bytes(plan)
        (folder / f"{time}.rollback.inflight").write_bytes(b"")
        (folder / f"{time}_{time.plus_millis(5)}.rollback").write_bytes(b"")

    _at(monkeypatch, module, point, requested_kept)

    _apply_refused(root, table, old, capsys, f"rollback of the completed write {second}")
    assert _rows(table) == _expected(builder, str(first))


@pytest.mark.parametrize("module,point", _CLEAN_POINTS, ids=[p for _, p in _CLEAN_POINTS])
def test_a_savepoint_taken_before_the_deletes_stops_the_clean(module, point, tmp_path, capsys, monkeypatch):
    table, builder, first, _, root = _two_versions(tmp_path, 8)
    old = _written_by(table, first)
    _at(monkeypatch, module, point, lambda: builder.savepoint(str(first)))

    _apply_refused(root, table, old, capsys, f"a savepoint of {first}")
    assert _rows(table, str(first)) == _expected(builder, str(first))  # the savepoint's view is readable

    # Once planned with the savepoint, the clean keeps its slices and goes ahead.
    monkeypatch.undo()
    assert main(["apply", "--project-dir", str(root), "--auto-approve"]) == 0, capsys.readouterr().out
    assert all((table / f).exists() for f in old)


def test_a_restore_started_before_the_deletes_stops_the_clean(tmp_path, capsys, monkeypatch):
    table, _, first, second, root = _two_versions(tmp_path, 6)
    old = _written_by(table, first)
    restore = second.plus_millis(1000)
    _at(monkeypatch, clean_module, "after_clean_inflight",
        lambda: (table / ".hoodie" / f"{restore}.restore.inflight").write_bytes(b""))

    _apply_refused(root, table, old, capsys, f"{restore}.restore.inflight", "withdrawn")


def test_a_rollback_of_a_failed_write_does_not_stop_the_clean(tmp_path, capsys, monkeypatch):
    """Hudi rolls back failed writes before every new write: that must not stall the runner."""
    table, builder, first, second, root = _two_versions(tmp_path, 8)
    failed = builder.inflight_commit(writes=1)
    failed_files = _written_by(table, failed)
    _at(monkeypatch, clean_module, "after_clean_inflight",
        lambda: _rollback_requested(table, failed, failed_files))

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])

    assert code == 0, capsys.readouterr().out
    assert not _written_by(table, first)  # the clean ran
    assert _rows(table) == _expected(builder, str(second))


@pytest.mark.parametrize("point", ["after_replace_requested", "after_rewrite", "after_resize_metadata_table_commit"])
def test_a_rollback_of_a_resized_write_landing_before_the_resize_completes_rolls_it_back(
        point, tmp_path, capsys, monkeypatch):
    table = tmp_path / "t"
    with_mdt = point == "after_resize_metadata_table_commit"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=8, metadata_table=with_mdt)
    builder.commit(writes=3)
    latest = builder.commit(updates=1)  # one group's latest base file is this write's
    before = builder.completed_instants[-2]
    root = project_for(table, tmp_path / "project", retained=2, sizing=SIZED)
    undone = _written_by(table, latest)
    rollback: list[InstantTime] = []
    _at(monkeypatch, resize_module, point,
        lambda: rollback.append(_rollback_requested(table, latest, undone)))

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])
    out = capsys.readouterr().out

    assert code == 1, out
    said = " ".join(out.split())
    assert "rolled back before completing" in said and f"rollback of the completed write {latest}" in said, out
    meta = read_table_metadata(storage_for(str(table)))
    assert not meta.replaced
    assert not meta.timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING)
    assert not read_table_state(storage_for(str(table))).uncommitted_files
    assert _rows(table) == _expected(builder, str(latest))  # nothing replaced: the rollback still has its say
    if with_mdt:
        assert_metadata_table_healthy(table)  # the resize's own deltacommit went with it
        return  # finishing the rollback by hand would leave the metadata table listing its files
    _finish_rollback(table, latest, undone, rollback[0])
    assert _rows(table) == _expected(builder, str(before))  # the undone update is not copied back


@pytest.mark.parametrize("module,point", _CLEAN_POINTS, ids=[p for _, p in _CLEAN_POINTS])
def test_a_metadata_table_created_before_the_deletes_stops_the_clean(module, point, tmp_path, capsys, monkeypatch):
    """`hudi-cli metadata create` (or a Hudi write with the metadata table on) builds one from the
    files on storage: a clean that then deletes some of them without recording it there leaves
    readers listing files that are gone."""
    table, builder, first, second, root = _two_versions(tmp_path, 8)
    twin = TableBuilder(tmp_path / "twin", name="t", partitions=["p=a", "p=b"], version=8, metadata_table=True)
    twin.commit(writes=1)
    twin.commit(updates=1)
    assert _written_by(tmp_path / "twin", first) == _written_by(table, first)  # the same files, listed

    def metadata_table_created() -> None:
        shutil.copytree(tmp_path / "twin" / ".hoodie" / "metadata", table / ".hoodie" / "metadata")
        shutil.copy(tmp_path / "twin" / ".hoodie" / "hoodie.properties", table / ".hoodie" / "hoodie.properties")

    _at(monkeypatch, module, point, metadata_table_created)
    old = _written_by(table, first)

    _apply_refused(root, table, old, capsys, "metadata table")
    assert_metadata_table_healthy(table)
    assert _rows(table) == _expected(builder, str(second))
