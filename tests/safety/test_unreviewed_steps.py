"""A saved plan is the whole of what apply may do: work that appeared on the table after the plan
was made (a pending clean, a metadata table) is refused, not run unreviewed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.hudi.instant import Action, InstantTime
from runner.hudi.metadata import CleanFileInfo, CleanPlan, encode_clean_plan
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import apply_json, digest, project_for, saved_plan


def _table(path: Path) -> TableBuilder:
    builder = TableBuilder(path, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    builder.commit(updates=1)  # every group now has an old slice KEEP_LATEST_FILE_VERSIONS(1) deletes
    return builder


def _hudi_pending_clean(table: Path, files: list[str], partition: str) -> None:
    """`<t>.clean.requested` as Hudi's cleaner leaves it when it stops before the deletes."""
    meta = read_table_metadata(storage_for(str(table)))
    latest = max(i.time for i in meta.timeline.instants)
    time = latest.plus_millis(1000)
    plan = CleanPlan(None, str(latest), "KEEP_LATEST_FILE_VERSIONS",
                     {partition: tuple(CleanFileInfo(f"file:{table}/{f}") for f in files)})
    (table / meta.timeline_folder / f"{time}.{Action.CLEAN.value}.requested").write_bytes(encode_clean_plan(plan))


def _old_files(table: Path, partition: str) -> list[str]:
    newest = max(InstantTime(p.name.rsplit("_", 1)[1].split(".")[0]) for p in (table / partition).glob("*.parquet"))
    return sorted(f"{partition}/{p.name}" for p in (table / partition).glob("*.parquet")
                  if InstantTime(p.name.rsplit("_", 1)[1].split(".")[0]) < newest)


def test_a_pending_clean_that_appeared_after_an_in_sync_plan_is_not_run(tmp_path, capsys):
    table = tmp_path / "t"
    _table(table)
    root = project_for(table, tmp_path / "project", retained=2)
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 0  # in sync: the reviewer approved doing nothing
    old = _old_files(table, "p=a")
    assert old
    _hudi_pending_clean(table, old, "p=a")
    before = digest(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 1, report
    error = report["tables"][0]["error"]
    assert error["type"] == "RequirementFailed"
    assert "pending clean" in error["message"] and "not in the plan" in error["message"]
    assert digest(table) == before


def test_a_pending_clean_beyond_a_narrowed_plan_is_not_run(tmp_path, capsys):
    table = tmp_path / "t"
    _table(table)
    root = project_for(table, tmp_path / "project")
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    data = json.loads(plan_file.read_text())
    clean = next(s for s in data["tables"][0]["steps"] if s["kind"] == "clean")
    clean["files_to_delete"] = [f for f in clean["files_to_delete"] if f["partition"] == "p=a"]
    plan_file.write_text(json.dumps(data))  # the reviewer kept p=b: a selection apply must honour
    _hudi_pending_clean(table, _old_files(table, "p=b"), "p=b")
    before = digest(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 1, report
    error = report["tables"][0]["error"]
    assert error["type"] == "RequirementFailed"
    assert _old_files(table, "p=b")[0] in error["message"]
    assert digest(table) == before


def test_a_pending_clean_inside_the_reviewed_clean_is_finished(tmp_path, capsys):
    """What an interrupted apply of the same plan leaves behind: finishing it stays within the plan."""
    table = tmp_path / "t"
    _table(table)
    root = project_for(table, tmp_path / "project")
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    planned = {f["path"] for s in json.loads(plan_file.read_text())["tables"][0]["steps"] if s["kind"] == "clean"
               for f in s["files_to_delete"]}
    _hudi_pending_clean(table, _old_files(table, "p=b"), "p=b")
    before = oracle_snapshot(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == len(planned)
    assert not any((table / path).exists() for path in planned)
    assert oracle_snapshot(table) == before


@pytest.mark.parametrize(("mode", "step"), [("keep", "update_metadata_table"), ("disable", "disable_metadata_table")])
def test_a_metadata_table_that_appeared_after_the_plan_is_not_touched(mode, step, tmp_path, capsys):
    """`hudi-cli metadata create` writes no data instant, so the timeline fingerprint stays the same."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=8, metadata_table=True)
    builder.commit(writes=1)
    builder.commit(updates=1)
    properties = table / ".hoodie" / "hoodie.properties"
    with_mdt = properties.read_bytes()
    (table / ".hoodie" / "metadata").rename(tmp_path / "mdt")
    properties.write_bytes(b"\n".join(line for line in with_mdt.split(b"\n")
                                      if not line.startswith(b"hoodie.table.metadata.partitions")))
    root = project_for(table, tmp_path / "project", extra=f"metadata_table: {mode}\n")
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    assert step not in plan_file.read_text()
    (tmp_path / "mdt").rename(table / ".hoodie" / "metadata")  # the metadata table is created
    properties.write_bytes(with_mdt)
    before = digest(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 1, report
    error = report["tables"][0]["error"]
    assert error["type"] == "RequirementFailed" and step in error["message"]
    assert digest(table) == before
