"""A clean never lists a partition for deletion while anything in its folder stays.

A partition whose file groups are all replaced (delete_partition, insert_overwrite elsewhere) has
no active group left, and the cleaner's rule marks it for deletion. But its folder may still hold
files the clean keeps: a replaced slice a savepoint lists, a file that is not Hudi's (a `_SUCCESS`
flag, a user's notes, another tool's folder). The runner's executor leaves such a folder in place;
the clean plan it records (`<t>.clean.requested`, `partitionsToBeDeleted`) still names it, though,
and Hudi's `CleanActionExecutor`, which finishes a pending clean it finds (after a runner crash,
or a writer with inline cleaning), deletes each listed partition as a directory, with everything
in it. The plan must also not tell a reviewer the partition goes when it stays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from runner.cli import main
from runner.hudi.metadata import decode_clean_plan
from runner.testing.tables import TableBuilder
from tests.safety.conftest import apply_json

POLICIES = {
    "KEEP_LATEST_COMMITS": "commits_retained: 1",
    "KEEP_LATEST_FILE_VERSIONS": "file_versions_retained: 1",
}


def _project(table: Path, root: Path, policy: str) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: safety\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(
        f"name: t\npath: {table}\nclean: {{policy: {policy}, {POLICIES[policy]}}}\n"
        "file_sizing: {small_file_limit: 0}\n")
    return root


def _rows_as_of(table: Path, instant: str) -> list[dict[str, Any]]:
    from hudi import HudiReadOptions, HudiTable

    batches = HudiTable(str(table)).read(HudiReadOptions().with_as_of_timestamp(instant))
    return sorted(pa.Table.from_batches(batches).to_pylist(), key=repr)


def _recorded_partitions(table: Path) -> list[str]:
    """Every partition the clean plans on the timeline list for deletion (what Hudi would delete)."""
    folder = table / ".hoodie" / "timeline"
    listed: list[str] = []
    for requested in sorted(folder.glob("*.clean.requested")):
        plan = decode_clean_plan(requested.read_bytes(), path=requested.name, base_path=str(table))
        listed += plan.partitions_to_delete
    return listed


def _plan_partitions(root: Path, capsys: Any) -> list[str]:
    import json

    main(["plan", "--project-dir", str(root), "--format", "json"])
    entry = json.loads(capsys.readouterr().out)["tables"][0]
    return [p for s in entry["steps"] if s["kind"] == "clean" for p in s["partitions_to_delete"]]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_partition_holding_a_savepointed_file_is_not_listed(policy, tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=8)
    first = builder.commit(writes=1)
    builder.savepoint(first)
    builder.delete_partition("p=a")  # its only group replaced, its file savepointed
    for _ in range(3):
        builder.commit(updates={"p=b": 1})
    root = _project(table, tmp_path / "project", policy)
    saved_rows = _rows_as_of(table, first)
    assert any(r["_hoodie_partition_path"] == "p=a" for r in saved_rows)

    assert "p=a" not in _plan_partitions(root, capsys)
    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] > 0  # p=b's old versions did go
    assert "p=a" not in _recorded_partitions(table)
    assert _rows_as_of(table, first) == saved_rows  # the savepoint still reads p=a
    assert _plan_partitions(root, capsys) == []  # and nothing is left to plan again


@pytest.mark.parametrize("foreign", ["p=a/_SUCCESS", "p=a/notes.txt", "p=a/extra/part-0000.bin"])
def test_a_partition_holding_files_that_are_not_hudi_s_is_not_listed(foreign, tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=8)
    builder.commit(writes=1)
    builder.delete_partition("p=a")  # every group of p=a replaced: the partition looks empty
    builder.commit(updates={"p=b": 1})
    (table / foreign).parent.mkdir(parents=True, exist_ok=True)
    (table / foreign).write_text("not Hudi's")
    root = _project(table, tmp_path / "project", "KEEP_LATEST_FILE_VERSIONS")

    assert "p=a" not in _plan_partitions(root, capsys)
    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 2  # the replaced file and p=b's old version
    assert "p=a" not in _recorded_partitions(table)
    assert (table / foreign).read_text() == "not Hudi's"
    assert _plan_partitions(root, capsys) == []


def test_an_emptied_partition_with_only_hudi_files_still_goes(tmp_path, capsys):
    """The control: with nothing else in the folder the partition is listed and removed."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=8)
    builder.commit(writes=1)
    builder.delete_partition("p=a")
    builder.commit(updates={"p=b": 1})
    root = _project(table, tmp_path / "project", "KEEP_LATEST_FILE_VERSIONS")

    assert _plan_partitions(root, capsys) == ["p=a"]
    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert _recorded_partitions(table) == ["p=a"]
    assert not (table / "p=a").exists()
