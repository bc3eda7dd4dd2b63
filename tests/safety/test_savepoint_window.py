"""Attack: a clean recording an earliest commit to retain earlier than what it deleted by.

Hudi refuses to savepoint a commit older than the last clean's earliest commit to retain ("beyond
the lookup window": `SavepointActionExecutor`; with none recorded, Hudi 1.x takes the last write
before the clean), since the files a savepoint of it lists may be cleaned. A savepoint it lets
through lists, per file group, the latest slice left as of that commit: an older version, or none,
where the clean deleted the one the commit read, and a restore to it then silently brings back old
records or loses the group. The runner records a lower bound than its deletes in two places, to keep
Hudi's archiver from dropping replacecommits: a saved plan narrowed by a reviewer recorded
00000000000000000 (every commit on the timeline savepointable), and a KEEP_LATEST_FILE_VERSIONS
clean beside a pending clustering recorded the last write before it while deleting every version
past the retained ones. A clean must delete only what no savepoint Hudi allows after it needs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.hudi.instant import Action
from runner.hudi.metadata import decode_clean_plan
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import apply_json, archive_as_hudi_may, saved_plan


def broken_savepoints_hudi_allows(table: Path, builder: TableBuilder) -> list[tuple[str, str]]:
    """(commit, missing file) for every completed write on the active timeline that Hudi 1.x would
    let a user savepoint after the last clean (`SavepointActionExecutor.getLastCommitRetained`) whose
    savepoint would name a file version that is gone."""
    meta = read_table_metadata(storage_for(str(table)))
    cleans = meta.timeline.completed(Action.CLEAN)
    writes = [str(i.time) for i in meta.timeline.completed_writes]
    lower = writes[0] if writes else ""
    if cleans:
        last = max(cleans, key=lambda i: i.time)
        requested = table / meta.timeline_folder / f"{last.time}.clean.requested"
        plan = decode_clean_plan(requested.read_bytes(), path=str(requested), base_path=str(table))
        ectr = plan.earliest_instant_to_retain.timestamp if plan.earliest_instant_to_retain else ""
        lower = ectr.strip() or max((w for w in writes if w <= str(last.time)), default=str(last.time))
    broken = []
    for commit in (w for w in writes if w >= lower):
        for piece in builder.latest_slices(as_of=commit):
            for name in piece.file_names:
                path = f"{piece.partition}/{name}" if piece.partition else name
                if not (table / path).exists():
                    broken.append((commit, path))
    return broken


def _project(table: Path, root: Path, clean: str) -> Path:
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text('name: safety\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(
        f"name: t\npath: {table}\nclean: {clean}\nfile_sizing: {{small_file_limit: 0}}\n")
    return root


def _narrowed(root: Path, plan_file: Path, keep: Any) -> list[dict[str, Any]]:
    data = json.loads(plan_file.read_text())
    (clean,) = [s for s in data["tables"][0]["steps"] if s["kind"] == "clean"]
    kept = [f for f in clean["files_to_delete"] if keep(f)]
    clean["files_to_delete"] = [f for f in clean["files_to_delete"] if f not in kept]
    plan_file.write_text(json.dumps(data))
    return kept


def test_a_narrowed_clean_keeps_hudi_s_savepoint_window_where_its_deletes_put_it(tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    for _ in range(3):
        builder.commit(updates=1)  # four versions: the clean deletes the two oldest
    root = _project(table, tmp_path / "project", "{policy: KEEP_LATEST_COMMITS, commits_retained: 1}")
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    oldest = str(builder.completed_instants[0])
    kept = _narrowed(root, plan_file, lambda f: f["path"].endswith(f"_{oldest}.parquet"))  # the reviewer keeps it
    assert len(kept) == 1

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 1 and (table / kept[0]["path"]).exists()
    assert broken_savepoints_hudi_allows(table, builder) == []
    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")  # the next clean
    assert code == 0, report
    assert not (table / kept[0]["path"]).exists()  # it lists every partition, and reclaims the rest
    assert broken_savepoints_hudi_allows(table, builder) == []


def test_a_narrowed_clean_keeping_replaced_groups_deletes_nothing_a_savepoint_after_its_bound_reads(
        tmp_path, capsys):
    """The bound a narrowed clean may record is at most the replacecommit of a replaced group it
    kept (else Hudi's archiver drops that replacecommit: test_narrowed_clean_archival.py); what a
    savepoint from there on reads stays, even where the fresh plan would delete it."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=2)
    clustering = str(builder.clustering("p=a"))  # both groups into one: the two stay on disk, replaced
    builder.commit(updates=1)
    builder.commit(updates=1)
    replaced = {fid for (_, fid) in read_table_metadata(storage_for(str(table))).replaced}
    root = _project(table, tmp_path / "project", "{policy: KEEP_LATEST_COMMITS, commits_retained: 1}")
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    kept = _narrowed(root, plan_file, lambda f: f["path"].rsplit("/", 1)[-1].split("_")[0] in replaced)
    assert len(kept) == 2
    _, rows = oracle_snapshot(table)

    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 0, report
    assert all((table / f["path"]).exists() for f in kept)
    assert (table / "p=a").glob(f"*_{clustering}.parquet")
    assert broken_savepoints_hudi_allows(table, builder) == []
    archive_as_hudi_may(table)
    assert oracle_snapshot(table)[1] == rows  # and no record read twice


@pytest.mark.parametrize("version", [6, 8])
def test_a_clean_beside_a_pending_clustering_deletes_nothing_a_savepoint_after_its_bound_reads(
        version, tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=version)
    builder.commit(writes=1)
    builder.commit(updates={"p=a": 1})
    builder.clustering("p=b", pending=True)  # Hudi's async clustering, under way
    builder.commit(updates={"p=a": 1})  # written past it: the version before is needed from the bound on
    root = _project(table, tmp_path / "project", "{policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: 1}")

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 1  # the first version of p=a's group still goes
    assert broken_savepoints_hudi_allows(table, builder) == []
