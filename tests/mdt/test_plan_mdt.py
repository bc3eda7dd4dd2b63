"""`runner plan` on tables with a metadata table: keep it in step, or refuse and say why."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from runner.cli import main
from tests.conftest import FIXTURES, extract_fixture
from tests.plan_json import step

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
F9 = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"


def _project(tmp_path: Path, sizing: str = "file_sizing:\n  small_file_limit: 0\n") -> Path:
    root = tmp_path / "p"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: s\n")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: table\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n" + sizing)
    extract_fixture(F9, root / "unzip").rename(root / "table")
    return root


def _plan(root: Path, capsys) -> tuple[int, dict]:
    code = main(["plan", "--project-dir", str(root), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, json.loads((SCHEMAS / "plan.schema.json").read_text()))
    return code, data["tables"][0]


def test_a_consistent_metadata_table_is_kept(tmp_path, capsys):
    code, table = _plan(_project(tmp_path), capsys)
    update = step(table, "update_metadata_table")
    assert code == 2 and update["refusals"] == [] and "files" in update["partitions"]
    assert update["actions"] == ["clean"] and step(table, "disable_metadata_table") is None


def test_a_metadata_table_behind_the_data_table_is_refused_with_the_reason(tmp_path, capsys):
    root = _project(tmp_path)
    next((root / "table/.hoodie/metadata/.hoodie/timeline").glob("20260307162454799_*.deltacommit")).unlink()
    _code, table = _plan(root, capsys)
    reasons = "; ".join(step(table, "update_metadata_table")["refusals"])
    assert "behind the data table" in reasons and "20260307162454799" in reasons
    assert main(["plan", "--project-dir", str(root)]) == 2
    text = capsys.readouterr().out
    assert "metadata table: apply will refuse" in text and "metadata_table: disable" in text


def test_a_resize_on_a_table_with_a_metadata_table_is_announced_as_recorded(tmp_path, capsys):
    root = _project(tmp_path, sizing="file_sizing:\n  small_file_limit: 1MiB\n  max_file_size: 2MiB\n")
    _code, table = _plan(root, capsys)
    assert step(table, "resize")["groups"]  # F9's ~430 KiB files are small at a 1 MiB limit
    assert any("apply records the resize in the metadata table" in n for n in table["notes"])
    assert not any("apply will refuse" in n for n in table["notes"])


def test_a_resize_whose_index_cannot_be_kept_is_announced_as_refused_with_the_fix(tmp_path, capsys):
    root = _project(tmp_path, sizing="file_sizing:\n  small_file_limit: 1MiB\n  max_file_size: 2MiB\n")
    props = root / "table/.hoodie/hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.metadata.partitions=column_stats,",
                                               "hoodie.table.metadata.partitions=column_stats,expr_index_x,"))
    code, table = _plan(root, capsys)
    assert code == 2
    note = next(n for n in table["notes"] if n.startswith("apply will refuse the resize"))
    assert "expr_index_x" in note and "metadata_table: disable" in note


def test_a_version_6_metadata_folder_that_readers_do_not_use_is_refused_with_the_reason(tmp_path, capsys):
    # Version 6 metadata tables are maintained (tests/mdt/test_apply_synthetic.py); this one is
    # a bare folder that hoodie.properties does not enable, so the runner will not write to it.
    root = tmp_path / "p6"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: s\n")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: table\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n"
        "file_sizing:\n  small_file_limit: 0\n")
    fixture = FIXTURES / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip"
    extract_fixture(fixture, root / "unzip").rename(root / "table")
    (root / "table/.hoodie/metadata/.hoodie").mkdir(parents=True)
    code, table = _plan(root, capsys)
    assert code == 2 and any("does not list `files`" in r for r in step(table, "update_metadata_table")["refusals"])
    assert main(["apply", "--auto-approve", "--project-dir", str(root)]) == 1
    assert "does not list `files`" in capsys.readouterr().out


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def test_metadata_partitions_listed_without_a_metadata_folder_are_one_decision(tmp_path, capsys):
    # hoodie.properties enables the metadata table but .hoodie/metadata is gone: readers may expect
    # it, so `keep` refuses before anything is deleted, and `disable` is planned as its own step.
    root = _project(tmp_path)
    import shutil

    shutil.rmtree(root / "table/.hoodie/metadata")
    code, table = _plan(root, capsys)
    reasons = "; ".join(step(table, "update_metadata_table")["refusals"])
    assert code == 2 and ".hoodie/metadata is missing" in reasons
    before = _files(root / "table")
    assert main(["apply", "--auto-approve", "--project-dir", str(root)]) == 1
    assert ".hoodie/metadata is missing" in capsys.readouterr().out
    assert {k: v for k, v in _files(root / "table").items() if "/.aux/" not in k} == {
        k: v for k, v in before.items() if "/.aux/" not in k}

    decl = root / "tables/t.yml"
    decl.write_text(decl.read_text() + "metadata_table: disable\n")
    _code, table = _plan(root, capsys)
    assert step(table, "disable_metadata_table") is not None and step(table, "update_metadata_table") is None
    assert main(["apply", "--auto-approve", "--project-dir", str(root)]) == 0
    props = (root / "table/.hoodie/hoodie.properties").read_text()
    assert "hoodie.table.metadata.partitions=\n" in props or "hoodie.table.metadata.partitions=" not in props
