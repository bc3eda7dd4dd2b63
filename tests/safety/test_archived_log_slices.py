"""A log file whose delta commit was archived joins the slice Hudi's reader puts it in.

On table versions 8 and 9 a log file is named after its delta commit's requested time and joins
the newest slice whose base instant is at or before the commit's *completion* time. Once the delta
commit is archived, its completion time lives in the LSM timeline (`.hoodie/timeline/history`);
Hudi's `CompletionTimeQueryView` reads it there, and when it finds none it takes the log for the
group's latest slice. With non-blocking concurrency control a delta commit can complete after a
compaction of its file group was requested, so the log belongs to the compaction's slice, which
readers merge: taking it for the older slice by its requested time deleted it with that slice (or
had a resize rewrite the compaction's base file without it), and readers lost its records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from runner.hudi.instant import Instant, InstantTime
from runner.testing.tables import TableBuilder
from tests.plan_json import planned_table

KEEP_ONE = "{policy: KEEP_LATEST_COMMITS, commits_retained: 1}"
SIZED = "{max_file_size: 10MiB, small_file_limit: 5MiB}"


def _timeline(table: Path) -> Path:
    return table / ".hoodie" / "timeline"


def _archive(table: Path, *times: InstantTime, completions: dict[InstantTime, InstantTime] | None = None,
             history: bool = True) -> None:
    """Move the instants at `times` off the active timeline, as Hudi's archiver does, into one LSM
    timeline file (with `completions` overriding their completion times); `history=False` drops
    them altogether (a history Hudi's reader finds nothing in)."""
    rows: list[tuple[str, str, str]] = []
    for path in sorted(_timeline(table).iterdir()):
        if not path.is_file() or not path.name[:1].isdigit():
            continue
        instant = Instant.parse(path.name)
        if instant.time not in times:
            continue
        if instant.is_completed:
            done = (completions or {}).get(instant.time, instant.completion_time)
            rows.append((str(instant.time), str(done), instant.action.value))
        path.unlink()
    if not history:
        return
    folder = _timeline(table) / "history"
    folder.mkdir(exist_ok=True)
    rows.sort()
    name = f"{rows[0][0]}_{rows[-1][0]}_0.parquet"
    pq.write_table(pa.table({
        "instantTime": [r[0] for r in rows],
        "completionTime": [r[1] for r in rows],
        "action": [r[2] for r in rows],
        "metadata": pa.array([None] * len(rows), pa.binary()),
        "plan": pa.array([None] * len(rows), pa.binary()),
        "version": pa.array([1] * len(rows), pa.int32()),
    }), folder / name)
    manifest = {"files": [{"fileName": name, "fileLen": (folder / name).stat().st_size}]}
    (folder / "manifest_1").write_text(json.dumps(manifest))
    (folder / "_version_").write_text("1")


def _late_log_table(table: Path) -> tuple[str, InstantTime, InstantTime, InstantTime]:
    """Group g: a base file at t0, a log of the delta commit t1, a compaction at t2; two more
    groups written after. Returns g, t0, t1 and t2."""
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=8, table_type="MERGE_ON_READ")
    t0 = builder.commit(writes=1)
    (g,) = builder.file_ids("p=a")
    t1 = builder.commit(updates={"p=a": [g]})
    t2 = builder.compaction()
    builder.commit(writes=1)
    builder.commit(writes=1)
    assert t0 < t1 < t2
    return g, t0, t1, t2


def _project(tmp_path: Path, table: Path, *, sizing: str = "{small_file_limit: 0}") -> Path:
    root = tmp_path / "project"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: archived\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(f"name: t\npath: {table}\nclean: {KEEP_ONE}\nfile_sizing: {sizing}\n")
    return root


def _step(plan: dict, kind: str) -> dict | None:
    return next((s for s in plan["steps"] if s["kind"] == kind), None)


def _deleted(plan: dict) -> set[str]:
    clean = _step(plan, "clean")
    return {f["path"] for f in clean["files_to_delete"]} if clean else set()


def _log(table: Path, g: str) -> str:
    (log,) = [p.name for p in (table / "p=a").iterdir() if p.name.startswith(f".{g}_")]
    return f"p=a/{log}"


def _base(table: Path, g: str, t: InstantTime) -> str:
    (base,) = [p.name for p in (table / "p=a").iterdir() if p.name.startswith(g) and p.name.endswith(f"_{t}.parquet")]
    return f"p=a/{base}"


def test_a_log_whose_archived_delta_commit_completed_after_a_compaction_stays_with_that_slice(tmp_path, capsys):
    table = tmp_path / "t"
    g, t0, t1, t2 = _late_log_table(table)
    # t1 completed after the compaction t2 was requested (non-blocking concurrency control):
    # Hudi's reader merges its log into the compaction's slice, the latest one.
    _archive(table, t0, t1, completions={t1: t2.plus_millis(500)})

    plan = planned_table(_project(tmp_path, table), capsys)

    deleted = _deleted(plan)
    assert _log(table, g) not in deleted, plan
    assert _base(table, g, t0) in deleted, plan  # the old base still goes


def test_a_log_whose_archived_delta_commit_is_in_no_history_is_taken_for_the_latest_slice(tmp_path, capsys):
    table = tmp_path / "t"
    g, t0, t1, _ = _late_log_table(table)
    _archive(table, t0, t1, history=False)

    plan = planned_table(_project(tmp_path, table), capsys)

    assert _log(table, g) not in _deleted(plan), plan


def test_a_log_whose_archived_delta_commit_completed_before_the_compaction_goes_with_its_slice(tmp_path, capsys):
    table = tmp_path / "t"
    g, t0, t1, _ = _late_log_table(table)
    _archive(table, t0, t1)  # completion times as written: before t2

    plan = planned_table(_project(tmp_path, table), capsys)

    assert _log(table, g) in _deleted(plan), plan


def test_a_group_whose_latest_slice_may_hold_an_archived_log_is_not_resized(tmp_path, capsys):
    table = tmp_path / "t"
    g, t0, t1, t2 = _late_log_table(table)
    _archive(table, t0, t1, completions={t1: t2.plus_millis(500)})

    plan = planned_table(_project(tmp_path, table, sizing=SIZED), capsys)

    resize = _step(plan, "resize")
    rewritten = {f["path"] for group in (resize or {}).get("groups", ()) for f in group["files"]}
    assert rewritten, plan  # the other groups are still resized
    assert _base(table, g, t2) not in rewritten, plan


def test_a_history_that_cannot_be_read_finds_nothing_and_the_log_stays(tmp_path, capsys):
    table = tmp_path / "t"
    g, t0, t1, _ = _late_log_table(table)
    _archive(table, t0, t1)  # completed before the compaction, but the manifest is torn:
    (_timeline(table) / "history" / "manifest_1").write_text('{"files": [{"fileName": ')

    plan = planned_table(_project(tmp_path, table), capsys)

    assert _log(table, g) not in _deleted(plan), plan
