"""Attack: a saved plan that deletes less than the fresh plan, and Hudi's archiver afterwards.

A reviewer may take files out of a saved plan (a saved plan only narrows the fresh one). Apply then
recorded the clean with no earliest commit to retain, so that the next clean lists every partition.
But Hudi's archiver reads that same field of the last clean's plan to decide which replacecommits
it may archive (`ClusteringUtils.getEarliestInstantToRetainForClustering`): with none recorded, it
takes the clean's own time, as if every group replaced before it were cleaned. The groups a
clustering (or the runner's own resize) replaced, whose files the reviewer kept, then lose the
replacecommit that hides them, and every reader reads their records twice.
"""

from __future__ import annotations

import json
from pathlib import Path

from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import apply_json, archive_as_hudi_may, saved_plan


def _project(table: Path, root: Path) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: safety\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(
        f"name: t\npath: {table}\nclean: {{policy: KEEP_LATEST_COMMITS, commits_retained: 1}}\n"
        "file_sizing: {small_file_limit: 0}\n")
    return root


def _clustered_table(tmp_path: Path) -> tuple[Path, Path]:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=2)
    builder.clustering("p=a")  # both groups into one: the two stay on disk, replaced
    builder.commit(updates=1)
    builder.commit(updates=1)
    return table, _project(table, tmp_path / "project")


def test_a_narrowed_clean_never_lets_hudi_archive_the_replacecommit_hiding_the_groups_it_kept(tmp_path, capsys):
    table, root = _clustered_table(tmp_path)
    replaced = {fid for (_, fid) in read_table_metadata(storage_for(str(table))).replaced}
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    data = json.loads(plan_file.read_text())
    (clean,) = [s for s in data["tables"][0]["steps"] if s["kind"] == "clean"]
    kept = [f for f in clean["files_to_delete"] if f["path"].rsplit("/", 1)[-1].split("_")[0] in replaced]
    assert len(kept) == 2 and len(clean["files_to_delete"]) == 3
    clean["files_to_delete"] = [f for f in clean["files_to_delete"] if f not in kept]  # the reviewer keeps them
    plan_file.write_text(json.dumps(data))
    _, rows = oracle_snapshot(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 0, report
    # The third file, the clustered group's first version, is what a savepoint of the clustering reads,
    # and the bound may not pass the clustering: it stays too (test_savepoint_window.py).
    assert report["tables"][0]["files_deleted"] == 0
    assert all((table / f["path"]).exists() for f in kept)
    archive_as_hudi_may(table)
    assert oracle_snapshot(table)[1] == rows  # no record read twice


def test_the_next_clean_after_a_narrowed_one_lists_every_partition_and_reclaims_the_rest(tmp_path, capsys):
    table, root = _clustered_table(tmp_path)
    _, rows = oracle_snapshot(table)
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    data = json.loads(plan_file.read_text())
    (clean,) = [s for s in data["tables"][0]["steps"] if s["kind"] == "clean"]
    clean["files_to_delete"] = clean["files_to_delete"][:1]
    plan_file.write_text(json.dumps(data))
    code, _ = apply_json(capsys, "--project-dir", str(root), str(plan_file))
    assert code == 0

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 2
    meta = read_table_metadata(storage_for(str(table)))
    assert meta.last_clean is not None and meta.last_clean[1].earliest_commit_to_retain  # a real bound again
    assert archive_as_hudi_may(table)  # every replaced file gone: now Hudi may, and readers see no change
    assert oracle_snapshot(table)[1] == rows
