"""Attack: a partition folder that is a symbolic link out of the table (moved to another disk).

The whole-table listing never enters a linked folder, so such a partition is not the runner's to
clean. Incremental cleaning lists the partitions the commits since the last clean name, one folder
at a time, and that listing followed the link: the plan listed files outside the table for deletion,
a `clean.requested` naming them was written (Hudi's cleaner, finishing it after a crash, follows the
link and deletes them), and the deletes, refused by the storage's guard, failed the apply. The two
listings must agree: a partition reached through a link is never listed, planned or recorded.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from runner.cli import main
from runner.hudi.metadata import decode_clean_plan
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import apply_json, archive_as_hudi_may


def _project(table: Path, root: Path, *, incremental: bool) -> Path:
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text('name: safety\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(
        f"name: t\npath: {table}\n"
        f"clean: {{policy: KEEP_LATEST_COMMITS, commits_retained: 1, incremental: {str(incremental).lower()}}}\n"
        "file_sizing: {small_file_limit: 0}\n")
    return root


def _table_with_a_linked_partition(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, Path]:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    builder.commit(updates={"p=a": 1, "p=b": 1})
    builder.commit(updates={"p=a": 1, "p=b": 1})
    root = _project(table, tmp_path / "project", incremental=True)
    code, _ = apply_json(capsys, "--project-dir", str(root), "--auto-approve")  # a first, full clean
    assert code == 0
    builder.commit(updates={"p=a": 1, "p=b": 1})
    builder.commit(updates={"p=a": 1, "p=b": 1})  # both partitions written since that clean
    moved = tmp_path / "other_disk" / "p=b"
    moved.parent.mkdir()
    shutil.move(str(table / "p=b"), str(moved))
    os.symlink(moved, table / "p=b", target_is_directory=True)
    return table, root, moved


def _planned_files(root: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    main(["plan", "--project-dir", str(root), "--format", "json"])
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    return sorted(f["path"] for s in table["steps"] if s["kind"] == "clean" for f in s["files_to_delete"])


def test_an_incremental_plan_never_lists_a_partition_reached_through_a_link(tmp_path, capsys):
    table, root, _ = _table_with_a_linked_partition(tmp_path, capsys)
    incremental = _planned_files(root, capsys)
    assert incremental and not [p for p in incremental if p.startswith("p=b/")], incremental
    _project(table, root, incremental=False)
    assert _planned_files(root, capsys) == incremental  # as the whole-table listing sees it


def test_apply_records_and_deletes_nothing_through_the_link(tmp_path, capsys):
    table, root, moved = _table_with_a_linked_partition(tmp_path, capsys)
    outside = sorted(p.name for p in moved.iterdir())
    earlier = set((table / ".hoodie").glob("*.clean.requested"))  # the first clean's, before the link

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert sorted(p.name for p in moved.iterdir()) == outside
    for requested in set((table / ".hoodie").glob("*.clean.requested")) - earlier:
        plan = decode_clean_plan(requested.read_bytes(), path=str(requested), base_path=str(table))
        assert "p=b" not in plan.file_paths_to_delete, requested.name


def test_a_clean_is_refused_while_groups_replaced_before_its_bound_lie_in_a_linked_partition(tmp_path, capsys):
    """The clean skips the linked partition, so a clustering's replaced groups there stay; a clean
    recorded with a bound past that clustering lets Hudi's archiver drop its replacecommit, and
    readers (which follow the link) read the replaced groups' records beside the clustered ones."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=2)
    clustered = builder.clustering("p=b")
    builder.commit(updates={"p=a": 2})
    builder.commit(updates={"p=a": 2})  # old versions in p=a to clean, past the clustering
    moved = tmp_path / "other_disk" / "p=b"
    moved.parent.mkdir()
    shutil.move(str(table / "p=b"), str(moved))
    os.symlink(moved, table / "p=b", target_is_directory=True)
    root = _project(table, tmp_path / "project", incremental=False)
    _, rows = oracle_snapshot(table)

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    if code == 0:  # what the recorded clean lets Hudi's archiver do
        archive_as_hudi_may(table)
        assert oracle_snapshot(table)[1] == rows
    assert code == 1, report
    message = report["tables"][0]["error"]["message"]
    assert "p=b" in message and str(clustered) in message and "symbolic link" in message, message
    assert not list((table / ".hoodie").glob("*.clean*"))
