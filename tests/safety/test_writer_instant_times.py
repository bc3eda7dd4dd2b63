"""Instant times of a write on a timeline whose instants lie ahead of this machine's clock.

A Hudi writer on a host whose clock runs ahead (or a clock that went back since) leaves completed
and failed instants later than now. Hudi's instant generator never issues a time at or below one on
the timeline, so the rollback of the failed write and the new commit must both come after every
instant there; a commit timed before the latest completed one would read as older than it and its
records would lose to the stale ones in every reader's "latest slice".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa

import runner
from runner.hudi.instant import InstantTime
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.safety.conftest import SIZED, project_for
from tests.writer.writer_helpers import oracle_rows


def test_a_write_after_instants_ahead_of_the_clock_comes_after_them(tmp_path: Path) -> None:
    table = tmp_path / "t"
    ahead = datetime.now(UTC).replace(tzinfo=None) + timedelta(days=1)
    builder = TableBuilder(table, name="t", partitions=["p=a"], start=ahead)
    completed = builder.commit(writes=1)
    failed = builder.inflight_commit(updates=1)  # the clock-ahead writer then died
    root = project_for(table, tmp_path / "project", sizing=SIZED)
    rows = builder.expected_rows()
    stored = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")]).to_pylist()
    updated = [{**stored[0], "ts": stored[0]["ts"] + 1}]

    schema = pa.schema([f for f in rows.schema if not f.name.startswith("_hoodie_")])
    first = runner.write(pa.Table.from_pylist(updated, schema), "t", project_dir=str(root))
    second = runner.write(pa.Table.from_pylist(updated, schema), "t", project_dir=str(root))

    assert first.rolled_back == (str(failed),)
    timeline = read_table_metadata(storage_for(str(table))).timeline
    (rollback,) = [i.time for i in timeline.instants if i.action.value == "rollback" and i.is_completed]
    assert InstantTime(str(failed)) < rollback < InstantTime(first.instant) < InstantTime(second.instant)
    assert InstantTime(str(completed)) < InstantTime(str(failed))
    found = oracle_rows(table, columns=("id", "ts", "_hoodie_commit_time"))
    newest = {"id": stored[0]["id"], "ts": stored[0]["ts"] + 1, "_hoodie_commit_time": second.instant}
    kept = [{"id": r["id"], "ts": r["ts"], "_hoodie_commit_time": str(completed)} for r in stored[1:]]
    assert found == sorted([newest, *kept], key=repr)
