"""Every step apply runs must be one the saved plan shows: a step stripped from plan.json (here the
runner's own interrupted resize, which apply would otherwise finish or roll back) is refused, not
run from the fresh plan behind the reviewer's back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from runner.declarations.model import FileSizing, SparkSettings
from runner.execute.resize import ResizeRunner
from runner.execute.resize_engine import SparkOnDemand
from runner.hudi.instant import Action
from runner.hudi.state import read_table_metadata, read_table_state
from runner.plan.sizing import plan_sizing
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import SIZED, apply_json, digest, project_for, saved_plan

MIB = 1024 * 1024
SIZING = FileSizing(max_file_size=10 * MIB, small_file_limit=5 * MIB)


def _never() -> Any:
    raise AssertionError("a resize on a local master must not start Spark")


def _interrupted_resize(tmp_path: Path) -> tuple[Path, Path]:
    """Three small files, and a resize of them the runner scheduled before its process died."""
    table = tmp_path / "t"
    TableBuilder(table, name="t", partitions=["p=a"]).commit(writes=3)
    storage = storage_for(str(table))
    state = read_table_state(storage)
    step = plan_sizing(SIZING, state)
    assert step is not None and step.groups
    spark = SparkOnDemand(SparkSettings(master="local[1]"), _never)
    ResizeRunner(storage, state.metadata, spark=spark, clock=lambda: datetime.now(UTC)).schedule(step)
    return table, project_for(table, tmp_path / "project", sizing=SIZED)


def _kinds(plan_file: Path) -> list[str]:
    return [s["kind"] for s in json.loads(plan_file.read_text())["tables"][0]["steps"]]


def test_a_plan_stripped_of_the_pending_resize_is_refused(tmp_path, capsys):
    table, root = _interrupted_resize(tmp_path)
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2 and "finish_pending_resize" in _kinds(plan_file)
    data = json.loads(plan_file.read_text())
    steps = data["tables"][0]["steps"]
    data["tables"][0]["steps"] = [s for s in steps if s["kind"] != "finish_pending_resize"]
    plan_file.write_text(json.dumps(data))  # what the reviewer now sees: nothing about the resize
    before = digest(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 1, report
    error = report["tables"][0]["error"]
    assert error["type"] == "RequirementFailed", error
    assert "finish_pending_resize" in error["message"] and "did not show" in error["message"]
    pending = read_table_metadata(storage_for(str(table))).timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING)
    assert str(pending[0].time) in error["message"]
    assert digest(table) == before


def test_the_unedited_plan_finishes_the_pending_resize(tmp_path, capsys):
    table, root = _interrupted_resize(tmp_path)
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    _, rows = oracle_snapshot(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 0, report
    assert report["tables"][0]["files_rewritten"] == 3
    meta = read_table_metadata(storage_for(str(table)))
    assert not meta.timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING) and meta.replaced
    slices, after = oracle_snapshot(table)
    assert len(slices) == 1  # the three small files are one now, with the same rows
    assert _without_file_names(after) == _without_file_names(rows)


def _without_file_names(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # A resize changes only `_hoodie_file_name` (the rows move into the new file).
    return sorted(({k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in rows), key=repr)


@pytest.mark.parametrize("sizing", ["{small_file_limit: 0}", None])
def test_an_interrupted_resize_the_declaration_no_longer_asks_for_is_rolled_back(sizing, tmp_path, capsys):
    """Rewriting data is never implied: once `file_sizing` is gone (or turned off), the next apply
    rolls the interrupted resize back rather than rewriting the files, and the plan says so."""
    table, root = _interrupted_resize(tmp_path)
    declaration = root / "tables" / "t.yml"
    kept = [line for line in declaration.read_text().splitlines() if not line.startswith("file_sizing:")]
    declaration.write_text("\n".join(kept + ([f"file_sizing: {sizing}"] if sizing else [])) + "\n")
    slices, rows = oracle_snapshot(table)

    code = main(["plan", "--project-dir", str(root)])
    shown = capsys.readouterr().out
    assert code == 2 and "roll back the interrupted resize" in shown, shown
    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_rewritten"] == 0
    assert any("rolled back the interrupted resize" in n for n in report["tables"][0]["notes"])
    meta = read_table_metadata(storage_for(str(table)))
    assert not meta.timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING) and not meta.replaced
    assert oracle_snapshot(table) == (slices, rows)


@pytest.mark.parametrize(("asked", "shown"), [(True, True), (False, False)])
def test_a_plan_edited_to_show_the_other_fate_of_the_interrupted_resize_is_refused(asked, shown, tmp_path, capsys):
    """The reviewer saw `roll_back` (the resize undone, no data rewritten) or its absence (the files
    rewritten); apply decided from the declaration alone and did the other, rewriting data the plan
    showed as rolled back."""
    table, root = _interrupted_resize(tmp_path)
    if not asked:
        declaration = root / "tables" / "t.yml"
        off = declaration.read_text().replace(f"file_sizing: {SIZED}", "file_sizing: {small_file_limit: 0}")
        declaration.write_text(off)
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    data = json.loads(plan_file.read_text())
    (step,) = [s for s in data["tables"][0]["steps"] if s["kind"] == "finish_pending_resize"]
    assert step["roll_back"] is not asked
    step["roll_back"] = shown
    plan_file.write_text(json.dumps(data))
    before = digest(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 1, report
    error = report["tables"][0]["error"]
    assert error["type"] == "RequirementFailed", error
    assert "finish_pending_resize" in error["message"] and "roll_back" in error["message"], error
    assert digest(table) == before
