"""Attack: savepoints and replaced file groups, and savepoints landing after a reviewed plan.

- A savepoint being taken of an instant before a clustering will list the groups the clustering
  later replaced (they were the latest slices then). Only its `.savepoint.inflight` protects them;
  a clean meanwhile must keep them, or the savepoint completes naming files that are gone.
- A saved plan a reviewer narrowed is re-checked against the savepoints on the table when applied:
  one taken (or being taken) since the plan refuses the apply, deleting nothing (the plan's
  timeline fingerprint covers every savepoint instant file, in any state).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from runner.cli import main
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.safety.conftest import apply_json, digest, saved_plan


def _rows_as_of(table: Path, instant: str) -> list[dict[str, Any]]:
    from hudi import HudiReadOptions, HudiTableBuilder

    reader = HudiTableBuilder.from_base_uri(str(table)).build()
    batches = reader.read(HudiReadOptions().with_as_of_timestamp(instant))
    return sorted(pa.Table.from_batches(batches).to_pylist(), key=repr)


POLICIES = ["{policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: 1}",
            "{policy: KEEP_LATEST_COMMITS, commits_retained: 1}"]


def _project(table: Path, root: Path, clean: str) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: safety\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(f"name: t\npath: {table}\nclean: {clean}\n"
                                           "file_sizing: {small_file_limit: 0}\n")
    return root


def _clustered(table: Path, version: int) -> tuple[TableBuilder, str]:
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=version)
    first = builder.commit(writes=2)
    builder.clustering("p=a")  # both groups into one: the two stay on disk, replaced
    builder.commit(updates=1)
    builder.commit(updates=1)
    return builder, str(first)


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("clean", POLICIES)
def test_replaced_groups_a_savepoint_in_progress_will_list_are_kept(version, clean, tmp_path, capsys):
    table = tmp_path / "t"
    builder, first = _clustered(table, version)
    folder = table / read_table_metadata(storage_for(str(table))).timeline_folder
    (folder / f"{first}.savepoint.inflight").write_bytes(b"")  # `savepoint create` of `first`, not done
    kept = sorted(table.rglob(f"*_{first}.parquet"))
    replaced = {fid for (_, fid) in read_table_metadata(storage_for(str(table))).replaced}
    assert len(kept) == 2 and {p.name.split("_")[0] for p in kept} == replaced
    root = _project(table, tmp_path / "project", clean)

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])

    assert code == 0, capsys.readouterr().out
    assert all(p.exists() for p in kept)
    expected = sorted(builder.expected_rows(first).to_pylist(), key=repr)
    assert _rows_as_of(table, first) == expected


@pytest.mark.parametrize("pending", [False, True], ids=["savepoint", "savepoint-in-progress"])
def test_a_savepoint_taken_after_a_narrowed_plan_refuses_its_apply(pending, tmp_path, capsys):
    table = tmp_path / "t"
    builder, first = _clustered(table, 8)
    root = _project(table, tmp_path / "project", POLICIES[0])
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    data = json.loads(plan_file.read_text())
    (clean,) = [s for s in data["tables"][0]["steps"] if s["kind"] == "clean"]
    assert len(clean["files_to_delete"]) >= 2
    clean["files_to_delete"] = clean["files_to_delete"][:-1]  # the reviewer keeps one file
    plan_file.write_text(json.dumps(data))
    if pending:
        folder = table / read_table_metadata(storage_for(str(table))).timeline_folder
        (folder / f"{first}.savepoint.inflight").write_bytes(b"")
    else:
        builder.savepoint(first)  # a Hudi user savepoints `first` between review and apply
    before = digest(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 1, report
    error = json.dumps(report)
    assert "the timeline changed since the plan was made" in error, error
    assert digest(table) == before  # nothing deleted, nothing recorded
