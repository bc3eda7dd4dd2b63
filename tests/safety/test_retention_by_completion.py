"""Retention by commit time keeps what a query on a retained commit, or started inside the
window, reads, also when a write completed long after it was requested.

A query sees the writes *completed* when it starts. Hudi's cleaner picks the earliest commit to
retain by requested time only, so a long write requested before the retained range and completed
inside it leaves out of that range the slice every query started before its completion reads:
that slice (or, for a long clustering or insert overwrite, the replaced group) is deleted while
queries of the range still read it. Timeline layout 2 (table version 8) records each instant's
completion time in its file name, so the planner can see it.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from runner.cli import main
from runner.hudi.instant import InstantTime
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot

HOUR = datetime(2026, 1, 1)
WINDOW = "{policy: KEEP_LATEST_BY_HOURS, hours_retained: 2}"


def _at(hour: float) -> datetime:
    return HOUR.replace(hour=int(hour), minute=int(hour % 1 * 60))


def _complete_late(table: Path, requested: InstantTime, completed: datetime) -> None:
    """Rename the completed instant file as a write that ran until `completed` leaves it."""
    timeline = table / ".hoodie" / "timeline"
    (old,) = [p for p in timeline.iterdir() if p.name.startswith(f"{requested}_") and "." in p.name]
    action = old.name.split(".", 1)[1]
    old.rename(timeline / f"{requested}_{InstantTime.from_datetime(completed)}.{action}")


def _project(tmp_path: Path, table: Path) -> Path:
    root = tmp_path / "project"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: hours\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(f"name: t\npath: {table}\nclean: {WINDOW}\n")
    return root


def _plan(root: Path, now: datetime, capsys) -> dict:
    code = main(["plan", "--project-dir", str(root), "--format", "json", "--now", now.isoformat()])
    data = json.loads(capsys.readouterr().out)
    assert code in (0, 2), data
    return data["tables"][0]


def _deleted(table_plan: dict) -> set[str]:
    clean = next((s for s in table_plan["steps"] if s["kind"] == "clean"), None)
    return {f["path"] for f in clean["files_to_delete"]} if clean else set()


def _base_files(table: Path, partition: str, file_id: str) -> dict[str, str]:
    """The group's base files by instant time."""
    return {p.name.rsplit("_", 1)[1].split(".")[0]: f"{partition}/{p.name}"
            for p in (table / partition).iterdir() if p.name.startswith(file_id)}


def test_a_slice_read_until_a_long_write_completed_inside_the_window_is_kept(tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=8)
    builder.commit(writes=2, at=_at(0))                     # groups g and h
    g, h = builder.file_ids("p=a")
    long_write = builder.commit(updates={"p=a": [g]}, at=_at(1))   # requested 01:00 ...
    builder.commit(updates={"p=a": [h]}, at=_at(4.5))       # a short write at 04:30
    _complete_late(table, long_write, _at(5))                # ... completed at 05:00
    root = _project(tmp_path, table)

    # At 06:00 the window starts at 04:00. A query started at 04:45 sees the writes completed by
    # then: g's slice of 00:00 (the long write had not completed), which must stay.
    plan = _plan(root, _at(6), capsys)

    first = _base_files(table, "p=a", g)[str(InstantTime.from_datetime(_at(0)))]
    assert first not in _deleted(plan), plan


def test_a_group_replaced_by_a_long_overwrite_completed_inside_the_window_is_kept(tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=8)
    builder.commit(writes=1, at=_at(0))
    (old,) = builder.file_ids("p=a")
    overwrite = builder.insert_overwrite("p=a", at=_at(1))  # requested 01:00 ...
    builder.commit(writes={"p=b": 1}, at=_at(4.5))
    _complete_late(table, overwrite, _at(5))                 # ... completed at 05:00
    root = _project(tmp_path, table)

    plan = _plan(root, _at(6), capsys)

    replaced = set(_base_files(table, "p=a", old).values())
    assert replaced and not replaced & _deleted(plan), plan


def test_writes_completed_in_order_clean_as_hudi_does(tmp_path, capsys):
    """Without a late completion the window's start is Hudi's: the slice before it goes."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=8)
    builder.commit(writes=1, at=_at(0))
    (g,) = builder.file_ids("p=a")
    builder.commit(updates=1, at=_at(1))
    builder.commit(updates=1, at=_at(4.5))
    root = _project(tmp_path, table)

    plan = _plan(root, _at(6), capsys)

    assert _deleted(plan) == {_base_files(table, "p=a", g)[str(InstantTime.from_datetime(_at(0)))]}, plan


def test_keep_latest_commits_keeps_what_a_query_on_a_retained_commit_read_before_a_long_write_completed(
        tmp_path, capsys):
    """The same for KEEP_LATEST_COMMITS: the retained commits are the last ones to *complete*. With
    two retained, the write of 03:00 (completed 03:01) is one of them, and a query on it (started
    before the long write of 01:00 completed at 05:00) reads g's slice of 00:00."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=8)
    builder.commit(writes={"p=a": 1}, at=_at(0))
    (g,) = builder.file_ids("p=a")
    long_write = builder.commit(updates={"p=a": [g]}, at=_at(1))
    builder.commit(writes={"p=b": 1}, at=_at(2))
    builder.commit(updates={"p=b": 1}, at=_at(3))
    _complete_late(table, long_write, _at(5))
    root = _keep_two_commits(tmp_path, table)

    plan = _plan(root, _at(6), capsys)

    first = _base_files(table, "p=a", g)[str(InstantTime.from_datetime(_at(0)))]
    assert first not in _deleted(plan), plan


def test_apply_keeps_that_slice_and_what_readers_see(tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"], version=8)
    builder.commit(writes=2, at=_at(0))
    g, h = builder.file_ids("p=a")
    for hour in (0.25, 0.5):  # more versions of h before the long write
        builder.commit(updates={"p=a": [h]}, at=_at(hour))
    long_write = builder.commit(updates={"p=a": [g]}, at=_at(1))
    for hour in (2, 4.5):
        builder.commit(updates={"p=a": [h]}, at=_at(hour))
    _complete_late(table, long_write, _at(5))
    root = _project(tmp_path, table)
    first = table / _base_files(table, "p=a", g)[str(InstantTime.from_datetime(_at(0)))]
    h_files = _base_files(table, "p=a", h)
    _, rows = oracle_snapshot(table)

    code = main(["apply", "--project-dir", str(root), "--auto-approve", "--now", _at(6).isoformat(),
                 "--format", "json"])
    report = json.loads(capsys.readouterr().out)

    assert code == 0, report
    assert first.exists()
    # h's slices of 00:00 and 00:15 go; the one of 00:30 is what a query at 01:00 reads
    gone = {name for time, name in h_files.items() if not (table / name).exists()}
    assert gone == {h_files[str(InstantTime.from_datetime(_at(t)))] for t in (0, 0.25)}, report
    assert oracle_snapshot(table)[1] == rows


def _legacy_form(table: Path, requested: InstantTime) -> None:
    """Rename a completed instant to the layout-1 form an instant carried over from before the
    table's upgrade keeps (`<t>.commit`, no completion time), as Hudi 1.x still reads it."""
    timeline = table / ".hoodie" / "timeline"
    (old,) = [p for p in timeline.iterdir() if p.name.startswith(f"{requested}_") and "." in p.name]
    old.rename(timeline / f"{requested}.{old.name.split('.', 1)[1]}")


def test_keep_latest_commits_on_a_timeline_mixing_legacy_instants_still_keeps_that_slice(tmp_path, capsys):
    """One instant from before the upgrade to layout 2 carries no completion time. It completed
    before every instant that does (those were written after the upgrade), so the retained commits
    are still known; the rule fell back to Hudi's for the whole timeline and deleted g's slice of
    00:00, which a query on the retained write of 03:00 reads (KEEP_LATEST_BY_HOURS kept it)."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=8)
    legacy = builder.commit(writes={"p=a": 1}, at=_at(0))
    (g,) = builder.file_ids("p=a")
    long_write = builder.commit(updates={"p=a": [g]}, at=_at(1))
    builder.commit(writes={"p=b": 1}, at=_at(2))
    builder.commit(updates={"p=b": 1}, at=_at(3))
    _complete_late(table, long_write, _at(5))
    _legacy_form(table, legacy)
    root = _keep_two_commits(tmp_path, table)

    plan = _plan(root, _at(6), capsys)

    first = _base_files(table, "p=a", g)[str(InstantTime.from_datetime(_at(0)))]
    assert first not in _deleted(plan), plan
    clean = next(s for s in plan["steps"] if s["kind"] == "clean") if _deleted(plan) else None
    assert clean is None or clean["earliest_commit_to_retain"] == str(long_write), clean


def _keep_two_commits(tmp_path, table):
    """The project of `table`, declared with KEEP_LATEST_COMMITS retaining 2 commits."""
    root = _project(tmp_path, table)
    (root / "tables" / "t.yml").write_text(
        f"name: t\npath: {table}\nclean: {{policy: KEEP_LATEST_COMMITS, commits_retained: 2}}\n")
    return root
