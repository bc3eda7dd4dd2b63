"""Attacks on `runner apply` through hand-edited plans, forged times and hostile timeline plans.

Each attack either is refused with nothing changed, or is applied with every recorded value taken
from the table itself (never from the edited file).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runner.cli import main
from runner.hudi.instant import Action, InstantTime
from runner.hudi.metadata import CleanFileInfo, CleanPlan, decode_clean_metadata, encode_clean_plan
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from tests.execute.conftest import oracle_snapshot
from tests.execute.test_cli_plan_apply import project, run_json, tree_digest
from tests.plan_json import step


def _plan(root: Path, tmp_path: Path, capsys) -> Path:
    plan_file = tmp_path / "plan.json"
    assert main(["plan", "--project-dir", str(root), "--out", str(plan_file)]) == 2
    capsys.readouterr()
    return plan_file


def _edit(plan_file: Path, mutate) -> None:
    data = json.loads(plan_file.read_text())
    mutate(data)
    plan_file.write_text(json.dumps(data))


def _completed_clean(table: Path):
    meta = read_table_metadata(storage_for(str(table)))
    assert meta.last_clean is not None
    return meta.last_clean[1]


def test_a_file_listed_twice_is_refused_and_nothing_is_deleted(tmp_path, capsys):
    root = project(tmp_path / "p")
    plan_file = _plan(root, tmp_path, capsys)

    def twice(data):
        files = step(data["tables"][0], "clean")["files_to_delete"]
        files.append(dict(files[0], path="./" + files[0]["path"]))

    _edit(plan_file, twice)
    before = tree_digest(root / "table")
    code, report = run_json(capsys, "apply", "--project-dir", str(root), str(plan_file))
    assert code == 1
    assert report["tables"][0]["error"]["type"] == "RefusedError"
    assert "twice" in report["tables"][0]["error"]["message"]
    assert {k: v for k, v in tree_digest(root / "table").items() if ".locks" not in k} == before


def test_forged_policy_ectr_savepoints_and_sizes_never_reach_the_timeline(tmp_path, capsys, spark):
    root = project(tmp_path / "p")
    plan_file = _plan(root, tmp_path, capsys)
    honest = step(json.loads(plan_file.read_text())["tables"][0], "clean")
    real_bytes = sum(f["size"] for f in honest["files_to_delete"])

    def forge(data):
        clean = step(data["tables"][0], "clean")
        clean["policy"] = "KEEP_LATEST_COMMITS"
        clean["earliest_commit_to_retain"] = "20991231235959000"
        clean["earliest_commit_to_retain_action"] = "commit"
        clean["last_completed_commit"] = "20991231235959000"
        clean["savepointed_timestamps"] = ["20991231235959000"]
        for f in clean["files_to_delete"]:
            f["size"] = 10**12
            f["partition"] = "elsewhere"

    _edit(plan_file, forge)
    before = oracle_snapshot(root / "table")
    code, report = run_json(capsys, "apply", "--project-dir", str(root), str(plan_file))
    assert code == 0, report
    table = report["tables"][0]
    assert table["files_deleted"] == len(honest["files_to_delete"])
    assert table["bytes_deleted"] == real_bytes
    clean = _completed_clean(root / "table")
    assert clean.earliest_commit_to_retain == ""  # KEEP_LATEST_FILE_VERSIONS has none
    assert clean.last_completed_commit_timestamp == honest["last_completed_commit"]
    assert "savepointed_timestamps" not in clean.extra_metadata
    assert {p.policy for p in clean.partition_metadata.values()} == {"KEEP_LATEST_FILE_VERSIONS"}
    assert set(clean.partition_metadata) == {f["partition"] for f in honest["files_to_delete"]} | set(
        honest["partitions_to_delete"])
    assert clean.total_files_deleted == len(honest["files_to_delete"])
    assert oracle_snapshot(root / "table") == before


@pytest.mark.parametrize("where", ["plan", "flag"])
def test_a_future_now_is_refused_and_nothing_is_written(where, tmp_path, capsys):
    root = project(tmp_path / "p")
    future = datetime.now(UTC) + timedelta(days=3)
    argv = ["apply", "--project-dir", str(root)]
    if where == "plan":
        plan_file = _plan(root, tmp_path, capsys)
        _edit(plan_file, lambda d: d.__setitem__("now", str(InstantTime.from_datetime(
            future.astimezone().replace(tzinfo=None)))))
        argv.append(str(plan_file))
    else:
        argv += ["--auto-approve", "--now", future.isoformat()]
    before = tree_digest(root / "table")
    code, report = run_json(capsys, *argv)
    assert code == 1
    assert report["tables"][0]["error"]["type"] == "RefusedError"
    assert "later than the current time" in report["tables"][0]["error"]["message"]
    assert tree_digest(root / "table") == before


def _pending_clean(table: Path, files: list[str], partition: str = "10") -> Path:
    """Write `<t>.clean.requested` listing `files` (as given, relative to the table) under `partition`."""
    meta = read_table_metadata(storage_for(str(table)))
    latest = max(i.time for i in meta.timeline.instants)
    time = InstantTime(str(int(str(latest)) + 1))
    plan = CleanPlan(None, str(latest), "KEEP_LATEST_FILE_VERSIONS",
                     {partition: tuple(CleanFileInfo(f) for f in files)})
    path = table / ".hoodie" / f"{time}.{Action.CLEAN.value}.requested"
    path.write_bytes(encode_clean_plan(plan))
    return path


@pytest.mark.parametrize("spelling", [
    "{base}/./.hoodie/.aux/{name}", "{base}/10/../.hoodie/.aux/{name}", "{base}//.hoodie/.aux/{name}",
    "{base}/10/./../../outside/{name}", "file:{other}/10/{name}", "{base}/10\\..\\.hoodie\\.aux\\{name}",
])
def test_a_pending_clean_cannot_reach_hoodie_or_outside_by_spelling(spelling, tmp_path, capsys):
    root = project(tmp_path / "p")
    table = root / "table"
    name = next((table / "10").glob("*.parquet")).name
    (table / ".hoodie" / ".aux").mkdir(exist_ok=True)
    (table / ".hoodie" / ".aux" / name).write_bytes(b"precious")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / name).write_bytes(b"precious")
    other = tmp_path / "other"
    (other / "10").mkdir(parents=True)
    (other / "10" / name).write_bytes(b"precious")
    _pending_clean(table, [spelling.format(base=f"file:{table}", other=other, name=name)])
    before = tree_digest(table)
    code, report = run_json(capsys, "apply", "--project-dir", str(root), "--auto-approve")
    assert code == 1
    assert report["tables"][0]["error"]["type"] == "RefusedError"
    assert {k: v for k, v in tree_digest(table).items() if ".locks" not in k} == before
    assert (table / ".hoodie" / ".aux" / name).read_bytes() == b"precious"
    assert (tmp_path / "outside" / name).read_bytes() == b"precious"
    assert (other / "10" / name).read_bytes() == b"precious"


def test_a_file_already_gone_is_recorded_as_a_failed_delete_as_hudi_does(tmp_path, capsys, spark):
    root = project(tmp_path / "p")
    table = root / "table"
    plan_file = _plan(root, tmp_path, capsys)
    files = [f["path"] for f in step(json.loads(plan_file.read_text())["tables"][0], "clean")["files_to_delete"]
             if f["partition"] == "10"]
    assert len(files) >= 2
    _pending_clean(table, [f"file:{table}/{f}" for f in files[:2]])
    size = (table / files[1]).stat().st_size
    (table / files[0]).unlink()  # as if an earlier attempt deleted it before crashing
    code, report = run_json(capsys, "apply", "--project-dir", str(root), "--auto-approve")
    assert code == 0, report
    assert report["tables"][0]["files_already_gone"] >= 1
    meta = read_table_metadata(storage_for(str(table)))
    cleans = [i for i in meta.timeline.completed(Action.CLEAN)]
    first = decode_clean_metadata((table / ".hoodie" / cleans[0].file_name).read_bytes(), path="clean")
    part = first.partition_metadata["10"]
    gone, there = (f.rsplit("/", 1)[-1] for f in files[:2])
    assert part.delete_path_patterns == (gone, there)
    assert part.failed_delete_files == (gone,)
    assert part.success_delete_files == (there,)
    assert first.total_files_deleted == 1
    assert report["tables"][0]["bytes_deleted"] >= size


def test_a_pending_clean_listing_a_latest_slice_is_refused(tmp_path, capsys):
    root = project(tmp_path / "p")
    table = root / "table"
    latest = next((table / "30").glob("*.parquet"))
    _pending_clean(table, [f"file:{table}/30/{latest.name}"], partition="30")
    before = tree_digest(table)
    code, report = run_json(capsys, "apply", "--project-dir", str(root), "--auto-approve")
    assert code == 1
    assert report["tables"][0]["error"]["type"] == "RefusedError"
    assert "readers still need" in report["tables"][0]["error"]["message"]
    assert {k: v for k, v in tree_digest(table).items() if ".locks" not in k} == before
