"""Rewriting data is never implied: resize is planned only when a `file_sizing` block is declared."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.cli import main
from tests.conftest import FIXTURES, extract_fixture
from tests.execute.test_cli_plan_apply import run_json, tree_digest
from tests.plan_json import step

FIXTURE = FIXTURES / "sample_table/cow/v9_txns_simple_nometa.zip"
CLEAN = "clean:\n  policy: KEEP_LATEST_COMMITS\n  commits_retained: 50\n"


def _project(root: Path, table_extra: str = "", project_extra: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "project.yml").write_text("name: sizing\n" + project_extra)
    (root / "tables").mkdir()
    (root / "tables" / "t.yml").write_text("name: t\npath: table\n" + CLEAN + table_extra)
    extract_fixture(FIXTURE, root / "unzip").rename(root / "table")
    return root


def test_without_a_file_sizing_block_small_files_are_information_only(tmp_path, capsys):
    root = _project(tmp_path / "p")
    code, data = run_json(capsys, "plan", "--project-dir", str(root))
    table = data["tables"][0]
    assert code == 0 and table["status"] == "in_sync"
    assert step(table, "resize") is None
    assert any(n.startswith("information: ") and "small base files" in n for n in table["notes"])
    assert main(["plan", "--project-dir", str(root)]) == 0
    assert "small base files" in capsys.readouterr().out


def test_apply_without_a_file_sizing_block_rewrites_nothing(tmp_path, capsys):
    root = _project(tmp_path / "p")
    before = tree_digest(root / "table")
    code, report = run_json(capsys, "apply", "--project-dir", str(root), "--auto-approve")
    assert code == 0 and report["tables"][0]["status"] == "in_sync"
    assert report["tables"][0]["files_rewritten"] == 0
    assert {k: v for k, v in tree_digest(root / "table").items() if ".locks" not in k} == before


@pytest.mark.parametrize("where", ["table", "table_empty_block", "project_defaults", "project_empty_block"])
def test_a_declared_file_sizing_block_plans_a_resize(where, tmp_path, capsys):
    table_extra = {"table": "file_sizing:\n  small_file_limit: 5MiB\n  max_file_size: 10MiB\n",
                   "table_empty_block": "file_sizing: {}\n"}.get(where, "")
    project_extra = {"project_defaults": "defaults:\n  file_sizing:\n    small_file_limit: 5MiB\n",
                     "project_empty_block": "defaults:\n  file_sizing: {}\n"}.get(where, "")
    root = _project(tmp_path / "p", table_extra, project_extra)
    code, data = run_json(capsys, "plan", "--project-dir", str(root))
    table = data["tables"][0]
    assert code == 2, data
    assert step(table, "resize") is not None and step(table, "resize")["groups"]
    assert not any(n.startswith("information: ") for n in table["notes"])
