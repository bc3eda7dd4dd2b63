"""`runner plan` / `runner apply` through the CLI: exit codes, artifacts, and every refusal."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import pytest

from runner.cli import main
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.storage.local import LOCAL_DELETE_THREADS
from tests.conftest import FIXTURES, extract_fixture
from tests.execute.conftest import oracle_snapshot
from tests.plan_json import step

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
OVERWRITE = FIXTURES / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip"
WITH_MDT = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"


def project(root: Path, fixture: Path = OVERWRITE, extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text("name: cli\n")
    (root / "tables").mkdir(exist_ok=True)
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: table\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n"
        "file_sizing:\n  small_file_limit: 0\n" + extra
    )
    extract_fixture(fixture, root / "unzip").rename(root / "table")
    return root


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): f"-> {p.readlink()}" if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_plan_changes_nothing_and_reports_changes(tmp_path, capsys):
    root = project(tmp_path / "p")
    before = tree_digest(root)
    code, data = run_json(capsys, "plan", "--project-dir", str(root), "--out", str(tmp_path / "plan.json"))
    assert code == 2
    jsonschema.validate(data, json.loads((SCHEMAS / "plan.schema.json").read_text()))
    table = data["tables"][0]
    assert table["status"] == "changes"
    paths = [f["path"] for f in step(table, "clean")["files_to_delete"]]
    assert paths == sorted(paths) and len(paths) == 4
    assert step(table, "clean")["partitions_to_delete"] == ["10", "20"]
    assert tree_digest(root) == before  # no timeline file, no lock, nothing
    assert json.loads((tmp_path / "plan.json").read_text()) == data


def test_plan_text_reads_like_terraform(tmp_path, capsys):
    root = project(tmp_path / "p")
    assert main(["plan", "--project-dir", str(root)]) == 2
    out = capsys.readouterr().out
    assert "~ t (" in out and "partition 10/" in out and "Plan: 1 to change" in out


def test_apply_saved_plan_then_plan_is_in_sync(tmp_path, capsys, spark):
    root = project(tmp_path / "p")
    plan_file = tmp_path / "plan.json"
    assert main(["plan", "--project-dir", str(root), "--out", str(plan_file)]) == 2
    before = oracle_snapshot(root / "table")
    capsys.readouterr()
    code, report = run_json(capsys, "apply", "--project-dir", str(root), str(plan_file))
    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 4
    # A local master deletes on the runner's thread pool, and the report says so (with the local pool's size).
    assert any(f"on {LOCAL_DELETE_THREADS} threads in-process" in note for note in report["tables"][0]["notes"]), report
    saved = json.loads((root / "target" / "run_results.json").read_text())
    jsonschema.validate(saved, json.loads((SCHEMAS / "run_results.schema.json").read_text()))
    assert oracle_snapshot(root / "table") == before
    code, data = run_json(capsys, "plan", "--project-dir", str(root))
    assert code == 0 and data["tables"][0]["status"] == "in_sync"
    code, report = run_json(capsys, "apply", "--auto-approve", "--project-dir", str(root))
    assert code == 0 and report["tables"][0]["status"] == "in_sync"
    code, report = run_json(capsys, "apply", "--project-dir", str(root), str(plan_file))  # cron re-runs it
    assert code == 0 and report["tables"][0]["status"] == "in_sync"


def test_apply_refuses_a_plan_made_before_the_timeline_changed(tmp_path, capsys):
    root = project(tmp_path / "p")
    plan_file = tmp_path / "plan.json"
    main(["plan", "--project-dir", str(root), "--out", str(plan_file)])
    capsys.readouterr()
    (root / "table" / ".hoodie" / "20240707001304000.commit.requested").write_bytes(b"")
    before = tree_digest(root / "table")
    code, report = run_json(capsys, "apply", "--project-dir", str(root), str(plan_file))
    assert code == 1
    assert report["tables"][0]["error"]["type"] == "RequirementFailed"
    assert "timeline changed" in report["tables"][0]["error"]["message"]
    assert {k: v for k, v in tree_digest(root / "table").items() if ".locks" not in k} == before


def _edit_plan(plan_file: Path, mutate) -> None:
    data = json.loads(plan_file.read_text())
    mutate(step(data["tables"][0], "clean"))
    plan_file.write_text(json.dumps(data))


@pytest.mark.parametrize("edit", ["latest_slice", "outside", "hoodie", "symlink_out"])
def test_apply_refuses_hand_edited_plans_and_deletes_nothing(edit, tmp_path, capsys):
    root = project(tmp_path / "p")
    table = root / "table"
    plan_file = tmp_path / "plan.json"
    main(["plan", "--project-dir", str(root), "--out", str(plan_file)])
    capsys.readouterr()
    latest = next((table / "30").glob("*.parquet")).name
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / latest).write_bytes(b"precious")
    if edit == "symlink_out":
        (table / "evil").symlink_to(outside)
    target = {
        "latest_slice": f"30/{latest}",
        "outside": f"../outside/{latest}",
        "hoodie": ".hoodie/hoodie.properties",
        "symlink_out": f"evil/{latest}",
    }[edit]
    _edit_plan(plan_file, lambda c: c["files_to_delete"].append({"partition": "30", "path": target, "size": 1}))
    before = tree_digest(table)
    code, report = run_json(capsys, "apply", "--project-dir", str(root), str(plan_file))
    assert code == 1
    assert report["tables"][0]["error"]["type"] == "RefusedError"
    assert tree_digest(table) == before
    assert (outside / latest).read_bytes() == b"precious"


def test_apply_refuses_a_table_whose_metadata_table_has_a_failed_write(tmp_path, capsys):
    root = project(tmp_path / "p", WITH_MDT)
    (root / "table/.hoodie/metadata/.hoodie/timeline/20260307170000000.deltacommit.requested").write_bytes(b"")
    before = tree_digest(root / "table")
    code, plan = run_json(capsys, "plan", "--project-dir", str(root))
    assert code == 2 and step(plan["tables"][0], "update_metadata_table")["refusals"]
    refusals = step(plan["tables"][0], "update_metadata_table")["refusals"]
    assert any("20260307170000000.deltacommit.requested" in n for n in refusals)
    code, report = run_json(capsys, "apply", "--auto-approve", "--project-dir", str(root))
    assert code == 1
    error = report["tables"][0]["error"]
    assert error["type"] == "RefusedError" and "metadata_table: disable" in error["message"]
    assert "pending or failed write" in error["message"]
    assert tree_digest(root / "table") == before


def test_apply_disables_the_metadata_table_when_declared(tmp_path, capsys, spark):
    root = project(tmp_path / "p", WITH_MDT, extra="metadata_table: disable\n")
    before = oracle_snapshot(root / "table")[1]
    code, report = run_json(capsys, "apply", "--auto-approve", "--project-dir", str(root))
    assert code == 0, report
    assert not (root / "table" / ".hoodie" / "metadata").exists()
    meta = read_table_metadata(storage_for(str(root / "table")))
    assert meta.config.metadata_partitions == () and not meta.has_metadata_table
    assert oracle_snapshot(root / "table")[1] == before


def test_plan_reports_a_folder_that_is_not_a_table_as_an_error(tmp_path, capsys):
    root = tmp_path / "p"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: x\n")
    (root / "tables" / "t.yml").write_text("name: t\npath: nowhere\n")
    code, data = run_json(capsys, "plan", "--project-dir", str(root))
    assert code == 1 and data["tables"][0]["status"] == "error"
    assert data["tables"][0]["error"]["type"] == "NotAHudiTableError"


def test_bad_now_is_a_clear_error(tmp_path, capsys):
    root = project(tmp_path / "p")
    assert main(["plan", "--project-dir", str(root), "--now", "yesterday"]) == 1
    assert "--now: expected an instant time" in capsys.readouterr().err


def test_apply_cleans_resizes_and_converges(tmp_path, capsys, spark):
    root = tmp_path / "p"
    root.mkdir()
    (root / "project.yml").write_text("name: cli\n")
    (root / "tables").mkdir()
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: table\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n"
        "file_sizing:\n  max_file_size: 10MiB\n  small_file_limit: 5MiB\n"
    )
    extract_fixture(FIXTURES / "sample_table/cow/v9_txns_simple_nometa.zip", root / "unzip").rename(root / "table")
    rows = lambda: sorted(  # noqa: E731 - rows without the file name, which a rewrite changes
        tuple(sorted((k, repr(v)) for k, v in r.items() if k != "_hoodie_file_name"))
         for r in oracle_snapshot(root / "table")[1])
    before = rows()

    code, first = run_json(capsys, "apply", "--auto-approve", "--project-dir", str(root))
    assert code == 0, first
    assert first["tables"][0]["files_rewritten"] == 4
    assert any(n.endswith(".replacecommit") for n in first["tables"][0]["instants_written"])
    assert rows() == before
    code, second = run_json(capsys, "apply", "--auto-approve", "--project-dir", str(root))
    assert code == 0 and second["tables"][0]["files_deleted"] == 4  # the replaced groups
    code, data = run_json(capsys, "plan", "--project-dir", str(root))
    assert code == 0 and data["tables"][0]["status"] == "in_sync"
    assert rows() == before
