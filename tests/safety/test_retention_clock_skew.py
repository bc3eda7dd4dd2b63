"""Attack: timeline layout 2 (table versions 8 and 9) with skewed clocks.

Completion times come from each writer's clock: one may lie before its own requested time, and
writes may complete in another order than they were requested. Retention by commit time moves its
earliest commit to retain only back for completion times (`runner.plan.policies._completed_since`):
whatever the completion times say, a plan never deletes a file that Hudi's own rule (by requested
time, the table with the completion times in order) keeps.
"""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from runner.cli import main
from runner.hudi.instant import InstantTime
from runner.testing.tables import TableBuilder

START = datetime(2026, 1, 1)
POLICIES = ["{policy: KEEP_LATEST_BY_HOURS, hours_retained: 2}", "{policy: KEEP_LATEST_COMMITS, commits_retained: 2}",
            "{policy: KEEP_LATEST_COMMITS, commits_retained: 1}"]
# Minutes after each write's own requested time at which it completes (negative: before it).
SKEWS = [(-50, 1, 1, 1, 1), (1, -90, 1, -30, 1), (300, 1, -120, 1, 1), (1, 1, 1, -170, -5), (200, 150, -100, 1, -60)]


def _table(path: Path, version: int, skew: tuple[int, ...] | None) -> list[InstantTime]:
    builder = TableBuilder(path, name="t", partitions=["p=a", "p=b"], version=8)
    times = [builder.commit(writes=1, at=START)]
    for hour in (1, 2, 3, 4.5):
        times.append(builder.commit(updates=1, at=START + timedelta(hours=hour)))
    if version == 9:  # the same layout; version 9 only adds table properties this test does not use
        props = path / ".hoodie" / "hoodie.properties"
        props.write_text(props.read_text().replace("hoodie.table.version=8", "hoodie.table.version=9"))
    if skew is not None:
        timeline = path / ".hoodie" / "timeline"
        for t, minutes in zip(times, skew, strict=True):
            (old,) = [p for p in timeline.iterdir() if p.name.startswith(f"{t}_") and "." in p.name]
            done = InstantTime.from_datetime(t.to_datetime() + timedelta(minutes=minutes))
            old.rename(timeline / f"{t}_{done}.{old.name.split('.', 1)[1]}")
    return times


def _deleted(root: Path, table: Path, clean: str, capsys) -> set[str]:
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text('name: skew\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(f"name: t\npath: {table}\nclean: {clean}\n")
    now = (START + timedelta(hours=6)).isoformat()
    code = main(["plan", "--project-dir", str(root), "--format", "json", "--now", now])
    data = json.loads(capsys.readouterr().out)
    assert code in (0, 2), data
    step = next((s for s in data["tables"][0]["steps"] if s["kind"] == "clean"), None)
    return {f["path"] for f in step["files_to_delete"]} if step else set()


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize(("clean", "skew"), list(itertools.product(POLICIES, SKEWS)))
def test_skewed_completion_times_never_delete_what_hudis_rule_keeps(version, clean, skew, tmp_path, capsys):
    in_order = tmp_path / "in-order"
    skewed = tmp_path / "skewed"
    _table(in_order, version, None)
    _table(skewed, version, skew)
    assert sorted(p.name for p in in_order.rglob("*.parquet")) == sorted(p.name for p in skewed.rglob("*.parquet"))

    hudi_deletes = _deleted(tmp_path / "p1", in_order, clean, capsys)
    deletes = _deleted(tmp_path / "p2", skewed, clean, capsys)

    assert hudi_deletes
    assert deletes <= hudi_deletes, sorted(deletes - hudi_deletes)
