"""`runner plan` text and JSON: a reason for every file, kept files, why a table is in sync, --verbose."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from runner.cli import main
from tests.docs.conftest import demo_project  # noqa: F401 - a fixture
from tests.plan_json import step

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "plan.schema.json").read_text())
NOW = "20260106000000"


def test_every_planned_file_has_a_reason_in_json(demo_project, capsys):  # noqa: F811
    assert main(["plan", "--project-dir", str(demo_project), "--now", NOW, "--format", "json"]) == 2
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, SCHEMA)
    files = [f for t in data["tables"] for f in step(t, "clean")["files_to_delete"]]
    assert files and all(f["reason"] for f in files)
    orders = next(t for t in data["tables"] if t["name"] == "orders")
    assert {f["reason"] for f in step(orders, "clean")["kept"]} == {"kept for savepoint 20260105090000000"}
    assert all(step(t, "clean")["why"] for t in data["tables"])


def test_text_shows_reasons_kept_files_and_why_in_sync(demo_project, capsys):  # noqa: F811
    assert main(["plan", "--project-dir", str(demo_project), "--now", NOW]) == 2
    out = capsys.readouterr().out
    assert "(6.4 KiB)  older than the earliest commit to retain 20260105120000000" in out
    assert "(100.2 KiB)  version 3 of 2 retained" in out
    assert "replaced by insert_overwrite 20260105103000000" in out
    assert "      keep region=" in out and "kept for savepoint 20260105090000000" in out
    assert "= events (" in out and ": in sync; keep 24 h of history: " in out
    assert "= 1 file, 100.2 KiB reclaimed" in out  # singular


def test_verbose_lists_every_file(demo_project, capsys):  # noqa: F811
    # events' instants are placed relative to when the demo was built (moments ago): as of now, its
    # 24 h window leaves 40 files to delete.
    argv = ["plan", "--project-dir", str(demo_project), "--select", "events"]
    assert main(argv) == 2
    short = capsys.readouterr().out
    assert "      - ... and 30 more files (--verbose lists them all)" in short
    assert main([*argv, "--verbose"]) == 2
    full = capsys.readouterr().out
    assert "more files" not in full
    assert sum(line.startswith("      - ") and "partition " not in line for line in full.splitlines()) == 40


def test_lance_base_files_get_a_note_that_they_cannot_be_resized(tmp_path, capsys):
    from tests.conftest import FIXTURES
    from tests.execute.test_cli_plan_apply import project

    root = project(tmp_path / "p", FIXTURES / "sample_table/cow/v9_lance_nonpartitioned.zip")
    # sizing declared (resize is never implied), with Hudi's default sizes
    (root / "tables" / "t.yml").write_text("name: t\npath: table\nmetadata_table: disable\nfile_sizing: {}\n")
    main(["plan", "--project-dir", str(root), "--format", "json"])
    table = json.loads(capsys.readouterr().out)["tables"][0]
    assert step(table, "resize")["groups"] == []
    notes = [n for n in table["notes"] if "lance" in n]
    assert len(notes) == 1 and notes[0].endswith("small lance base files cannot be resized: "
                                                 "the runner rewrites parquet base files only")
    main(["plan", "--project-dir", str(root)])
    assert "    note: " in capsys.readouterr().out


def test_counts_are_singular_for_one(tmp_path, capsys):
    from tests.execute.test_cli_plan_apply import project

    root = project(tmp_path / "p")
    assert main(["status", "--project-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert "3 partitions, 1 file group, 3 replaced" in out
    assert "latest slices: 1 slice, 1 file, " in out
