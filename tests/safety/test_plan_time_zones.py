"""A saved plan's time means the same moment wherever it is applied.

plan.json's `now` is an instant time in the planning machine's zone (as Hudi's LOCAL timeline
timezone writes them). A plan made in CI in one zone and applied after review on a machine in
another must be judged by the moment it was made as of, not by that wall-clock text read in the
applying machine's zone: read east-to-west it lies hours in the future and a fresh, honest plan is
refused; read west-to-east a plan made as of a future time passes the check meant to refuse it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runner.cli import main
from runner.testing.tables import TableBuilder
from tests.safety.conftest import apply_json, digest, project_for, saved_plan


@pytest.fixture
def zone(monkeypatch) -> Iterator[object]:
    """`zone(name)` sets this process's local time zone; the original comes back afterwards."""
    def use(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


def _table(tmp_path: Path) -> tuple[Path, Path]:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    builder.commit(updates=1)
    return table, project_for(table, tmp_path / "project")


def _saved_plan_at(root: Path, out: Path, now: datetime, capsys) -> int:
    code = main(["plan", "--project-dir", str(root), "--out", str(out), "--now", now.isoformat()])
    capsys.readouterr()
    assert json.loads(out.read_text())["now"]
    return code


def test_a_plan_made_east_of_the_applying_machine_is_applied(tmp_path, capsys, zone):
    _, root = _table(tmp_path)
    zone("Asia/Tokyo")  # UTC+9: CI's runners
    code, plan_file = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2

    zone("UTC")  # the machine that applies the reviewed plan, minutes later
    code, report = apply_json(capsys, "--project-dir", str(root), str(plan_file))

    assert code == 0, report["tables"][0]["error"]
    assert report["tables"][0]["files_deleted"] == 1


def test_a_plan_made_as_of_a_future_time_west_of_the_applying_machine_is_refused(tmp_path, capsys, zone):
    table, root = _table(tmp_path)
    zone("America/Los_Angeles")  # UTC-8 (UTC-7 in summer)
    future = datetime.now(UTC) + timedelta(hours=3)
    code = _saved_plan_at(root, tmp_path / "plan.json", future, capsys)
    assert code == 2
    before = digest(table)

    zone("UTC")
    code, report = apply_json(capsys, "--project-dir", str(root), str(tmp_path / "plan.json"))

    assert code == 1, report
    assert "later than the current time" in report["tables"][0]["error"]["message"]
    assert digest(table) == before
