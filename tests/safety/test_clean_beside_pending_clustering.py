"""Attack: a KEEP_LATEST_FILE_VERSIONS clean recorded while a clustering is pending.

Such a clean records no earliest commit to retain, and Hudi's archiver then keeps only the
replacecommits requested at or after the clean itself
(`ClusteringUtils.getEarliestInstantToRetainForClustering`; HUDI-6352 notes the gap): it takes
every group replaced before the clean for cleaned. A clustering requested before the clean but
completed after it (the runner finishes its own interrupted resize in the same apply, after the
clean) replaced groups that clean could not yet delete; once Hudi archives its replacecommit,
every reader reads the replaced groups' records beside the clustered ones. A clean recorded beside
a pending clustering bounds the archiver at that clustering.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runner.declarations.model import FileSizing, SparkSettings
from runner.execute.resize import ResizeRunner
from runner.execute.resize_engine import SparkOnDemand
from runner.hudi.state import read_table_state
from runner.plan.sizing import plan_sizing
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import SIZED, apply_json, archive_as_hudi_may, project_for

MIB = 1024 * 1024


def _never() -> Any:
    raise AssertionError("a resize on a local master must not start Spark")


def test_a_clean_beside_an_interrupted_resize_keeps_hudi_from_archiving_it(tmp_path: Path, capsys: Any) -> None:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes={"p=a": 3})
    builder.commit(writes={"p=b": 1})
    builder.commit(updates={"p=b": 1})  # an old version in p=b for the clean
    storage = storage_for(str(table))
    state = read_table_state(storage)
    step = plan_sizing(FileSizing(max_file_size=10 * MIB, small_file_limit=5 * MIB), state)
    assert step is not None and [g.partition for g in step.groups] == ["p=a"]
    spark = SparkOnDemand(SparkSettings(master="local[1]"), _never)
    ResizeRunner(storage, state.metadata, spark=spark, clock=lambda: datetime.now(UTC)).schedule(step)
    root = project_for(table, tmp_path / "project", sizing=SIZED)
    _, rows = oracle_snapshot(table)

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert report["tables"][0]["files_deleted"] == 1 and report["tables"][0]["files_rewritten"] == 3
    builder.commit(writes={"p=b": 1}, at=datetime.now(UTC).replace(tzinfo=None) + timedelta(minutes=1))  # writes go on
    _, rows = oracle_snapshot(table)
    archive_as_hudi_may(table)
    assert _records(oracle_snapshot(table)[1]) == _records(rows)  # no record read twice


def _records(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # A resize moves records into its new file: only `_hoodie_file_name` changes.
    return sorted(({k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in rows), key=repr)
