"""Attack: a base file that is itself a symbolic link out of the table (moved to another disk).

The whole-table listing follows a link to a file (readers do too), so such a file is a version of
its group like any other. When the policy retires it, the plan listed it for deletion, but the
store refuses to delete anything that leads out of the table: each apply recorded a clean with the
file as a failed delete and failed, run after run (and a clean recorded as done while a replaced
group's file stays lets Hudi's archiver drop the replacecommit that hides that group). Plan sees it
up front: a table whose plan would delete such a file is refused, naming the file and where it
leads, and nothing is recorded; a linked file the plan keeps changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from runner.cli import main
from runner.testing.tables import TableBuilder
from tests.safety.conftest import apply_json, digest, project_for


def _table(tmp_path: Path, *, link: int) -> tuple[Path, Path, Path]:
    """Three versions of one group (retaining one), the `link`-th oldest moved out and linked back."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    builder.commit(updates=1)
    builder.commit(updates=1)
    versions = sorted((table / "p=a").glob("*.parquet"), key=lambda p: p.name.rsplit("_", 1)[-1])
    moved = tmp_path / "other_disk" / versions[link].name
    moved.parent.mkdir()
    shutil.move(str(versions[link]), str(moved))
    os.symlink(moved, versions[link])
    return table, project_for(table, tmp_path / "project"), moved


def test_plan_refuses_a_table_whose_clean_would_delete_a_file_linked_out_of_it(tmp_path, capsys):
    _, root, moved = _table(tmp_path, link=0)

    code = main(["plan", "--project-dir", str(root), "--format", "json"])

    (planned,) = json.loads(capsys.readouterr().out)["tables"]
    assert code == 1, planned
    message = planned["error"]["message"]
    assert f"p=a/{moved.name}" in message and str(moved) in message and "symbolic link" in message, message


def test_apply_records_and_deletes_nothing_and_leaves_the_linked_file(tmp_path, capsys):
    table, root, moved = _table(tmp_path, link=0)
    before, outside = digest(table), moved.read_bytes()

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 1, report
    assert f"p=a/{moved.name}" in report["tables"][0]["error"]["message"]
    assert digest(table) == before
    assert not list((table / ".hoodie").glob("*.clean*"))
    assert moved.read_bytes() == outside and (table / "p=a" / moved.name).is_symlink()


def test_a_linked_file_the_clean_keeps_does_not_stop_it(tmp_path, capsys):
    table, root, moved = _table(tmp_path, link=2)  # the latest version, which readers read

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 2
    assert [p.name for p in (table / "p=a").glob("*.parquet")] == [moved.name]
    assert (table / "p=a" / moved.name).is_symlink() and moved.exists()


def test_a_file_linked_to_another_place_inside_the_table_is_cleaned_as_a_link(tmp_path, capsys):
    """A link that stays inside the table is removed as a link (never its target), as before."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    builder.commit(updates=1)
    oldest = min((table / "p=a").glob("*.parquet"), key=lambda p: p.name.rsplit("_", 1)[-1])
    kept = table / "kept" / oldest.name
    kept.parent.mkdir()
    shutil.move(str(oldest), str(kept))
    os.symlink(kept, oldest)
    root = project_for(table, tmp_path / "project")

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert not oldest.is_symlink() and kept.exists()


def test_plan_refuses_a_pending_clean_that_would_delete_a_file_linked_out_of_the_table(tmp_path, capsys):
    """A pending clean (Hudi's, or an interrupted apply's) is finished by apply after it checked
    the clean's paths; one naming a linked file was shown by plan as work, then refused by every
    apply."""
    from runner.declarations.loader import load_project
    from runner.execute.clean import to_plan
    from runner.hudi.metadata import encode_clean_plan
    from runner.planner import plan_one
    from runner.storage import storage_for

    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    builder.commit(updates=1)
    root = project_for(table, tmp_path / "project")
    (decl,) = load_project(root).tables
    planned = plan_one(decl, storage_for(str(table)), now=datetime.now(UTC))
    assert planned.clean is not None and len(planned.clean.files_to_delete) == 1
    (table / ".hoodie" / "20260101000005000.clean.requested").write_bytes(
        encode_clean_plan(to_plan(planned.clean, str(table))))
    victim = table / planned.clean.files_to_delete[0].path
    moved = tmp_path / "other_disk" / victim.name
    moved.parent.mkdir()
    shutil.move(str(victim), str(moved))
    os.symlink(moved, victim)

    code = main(["plan", "--project-dir", str(root), "--format", "json"])

    (shown,) = json.loads(capsys.readouterr().out)["tables"]
    assert code == 1, shown
    message = shown["error"]["message"]
    assert "20260101000005000" in message and victim.name in message and str(moved) in message, message
