"""An emptied partition folder is not removed while a pending write may insert into it.

A reader that lists files (no metadata table) knows a partition only by its
`.hoodie_partition_metadata`, which a Hudi writer creates once, when the partition is new. If a
clean removed the folder while a write that inserts there is in flight, the write would commit data
files into a folder without that file, and such readers would never see them.
"""

from __future__ import annotations

import json
from pathlib import Path

from runner.hudi.instant import Action
from runner.hudi.metadata import CleanFileInfo, CleanPlan, decode_clean_metadata, encode_clean_plan
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.safety.conftest import apply_json, project_for, saved_plan


def _emptied_partition_with_a_write_in_flight(table: Path) -> TableBuilder:
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    builder.delete_partition("p=a")  # every group of p=a replaced: the partition may go
    builder.inflight_commit(writes={"p=a": 1})  # a write inserting into p=a, in flight
    for written in builder.failed_files:  # ... that has not written its data files yet
        (table / written.path).unlink()
    return builder


def test_a_partition_a_pending_write_inserts_into_is_kept(tmp_path, capsys):
    table = tmp_path / "t"
    _emptied_partition_with_a_write_in_flight(table)
    root = project_for(table, tmp_path / "project")

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 1  # the replaced group's file is still cleaned
    assert report["tables"][0]["partitions_deleted"] == []
    assert (table / "p=a" / ".hoodie_partition_metadata").exists()
    meta = read_table_metadata(storage_for(str(table)))
    assert meta.last_clean is not None
    clean = decode_clean_metadata((table / meta.timeline_folder / meta.last_clean[0].file_name).read_bytes(),
                                  path="clean")
    assert not clean.partition_metadata["p=a"].is_partition_deleted


def test_the_plan_does_not_show_that_partition_as_deleted(tmp_path, capsys):
    table = tmp_path / "t"
    _emptied_partition_with_a_write_in_flight(table)
    root = project_for(table, tmp_path / "project")

    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)

    assert code == 2
    clean = next(s for s in json.loads(plan_file.read_text())["tables"][0]["steps"] if s["kind"] == "clean")
    assert clean["partitions_to_delete"] == []
    assert [f["partition"] for f in clean["files_to_delete"]] == ["p=a"]


def test_a_pending_clean_keeps_a_partition_a_write_started_on_since_it_was_planned(tmp_path, capsys):
    """Hudi's clean planned deleting the emptied partition; a write into it started before it ran."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    builder.delete_partition("p=a")
    replaced = sorted(f"p=a/{p.name}" for p in (table / "p=a").glob("*.parquet"))
    clean_time = builder.files.tick(None)
    plan = CleanPlan(None, str(clean_time), "KEEP_LATEST_FILE_VERSIONS",
                     {"p=a": tuple(CleanFileInfo(f"file:{table}/{f}") for f in replaced)}, ("p=a",))
    (table / ".hoodie" / f"{clean_time}.{Action.CLEAN.value}.requested").write_bytes(encode_clean_plan(plan))
    builder.inflight_commit(writes={"p=a": 1})
    for written in builder.failed_files:
        (table / written.path).unlink()
    root = project_for(table, tmp_path / "project")

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == len(replaced)
    assert report["tables"][0]["partitions_deleted"] == []
    assert (table / "p=a" / ".hoodie_partition_metadata").exists()
