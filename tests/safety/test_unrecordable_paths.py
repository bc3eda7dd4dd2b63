"""Attack: a clean whose paths apply's checks refuse only once its `clean.requested` is written.

`runner.write` writes a partition named `hh=10:00` (a Hive-style partition of a time value) as it
is given. Apply's path checks read a `:` before the first `/` as a URI scheme (as Hudi's own
`StoragePath` does) and refuse the clean, but only after its requested and inflight files were
written: the pending clean stayed on the timeline, every later apply refused to finish it, and
Hudi's cleaner would finish it unchecked. A clean that cannot be carried out is refused before
anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

from runner.cli import main
from runner.testing.tables import TableBuilder
from tests.safety.conftest import apply_json, project_for


def test_a_clean_refused_for_its_paths_leaves_nothing_on_the_timeline(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["hh=10:00", "hh=11:00"])
    builder.commit(writes=1)
    builder.commit(updates={"hh=10:00": 1})
    root = project_for(table, tmp_path / "project")
    timeline = sorted(p.name for p in (table / ".hoodie").iterdir())

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 1, report
    assert "hh=10:00" in report["tables"][0]["error"]["message"]
    assert sorted(p.name for p in (table / ".hoodie").iterdir() if p.name != ".locks") == timeline
    assert len(list(table.rglob("*.parquet"))) == 3


def test_plan_refuses_a_clean_apply_could_not_record_naming_the_partition(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Plan shows what apply will do: a clean apply's path checks refuse is refused when planned
    (exit 1, the partition and the reason named), not shown as work that then fails every apply."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["hh=10:00", "hh=11"])
    builder.commit(writes=1)
    builder.commit(updates={"hh=10:00": 1, "hh=11": 1})
    root = project_for(table, tmp_path / "project")

    code = main(["plan", "--project-dir", str(root), "--format", "json"])

    (planned,) = json.loads(capsys.readouterr().out)["tables"]
    assert code == 1, planned
    message = planned["error"]["message"]
    assert "hh=10:00" in message and "URI" in message, message


def test_a_colon_partition_with_nothing_to_clean_leaves_the_rest_maintained(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["hh=10:00", "hh=11"])
    builder.commit(writes=1)
    builder.commit(updates={"hh=11": 1})
    root = project_for(table, tmp_path / "project")

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 1
    assert len(list((table / "hh=10:00").glob("*.parquet"))) == 1
    assert len(list((table / "hh=11").glob("*.parquet"))) == 1
