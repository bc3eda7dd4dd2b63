"""Attack: a Hudi writer's clustering (or insert overwrite) lands while apply deletes.

Hudi writers do not take the runner's lock, and apply's last look at the timeline is before the
first delete. A replacecommit requested before the clean's own instant time (the writer asked
first) but completed after the clean's plan replaces groups the clean never saw. With no earliest
commit to retain recorded (KEEP_LATEST_FILE_VERSIONS), Hudi's archiver takes every group replaced
before the clean's time for cleaned (`ClusteringUtils.getEarliestInstantToRetainForClustering`),
so it may archive that replacecommit, and readers then read the replaced groups, still on disk,
beside the group that replaced them. The clean must record a bound before such a replacecommit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table
from runner.hudi.instant import Action
from runner.hudi.metadata import decode_clean_plan
from runner.hudi.state import read_table_metadata
from runner.storage import DeleteResult, Storage, storage_for
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.safety.conftest import archive_as_hudi_may

LOCAL = SparkSettings(master="local[1]")


def _apply(table: Path, deleter: Any) -> Any:
    decl = TableDeclaration(
        name="t", path=str(table), source_file="tables/t.yml",
        clean=CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
        file_sizing=FileSizing(small_file_limit=0))
    return apply_table(decl, None, now=datetime.now(UTC), spark_settings=LOCAL, deleter_factory=lambda: deleter)


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("pending", [False, True], ids=["completed", "pending"])
def test_a_replacecommit_landing_during_the_deletes_is_never_vouched_for(version, pending, tmp_path):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=version)
    builder.commit(writes=2)
    builder.commit(updates=1)  # old slices in both partitions: the clean has work
    landed: list[str] = []

    def deleter(storage: Storage, paths: Any) -> list[DeleteResult]:
        if not landed:
            landed.append(str(builder.clustering("p=b", pending=pending)))  # a writer, meanwhile
            builder.commit(updates=1)  # and writes on, so the archiver may reach the replacecommit
        return storage.delete_many(list(paths))

    result = _apply(table, deleter)

    assert result.files_deleted >= 2 and landed
    meta = read_table_metadata(storage_for(str(table)))
    (clean,) = meta.timeline.completed(Action.CLEAN)
    folder = table / meta.timeline_folder
    requested = folder / f"{clean.time}.clean.requested"
    plan = decode_clean_plan(requested.read_bytes(), path=str(requested), base_path=str(table))
    assert plan.earliest_instant_to_retain is not None
    assert plan.earliest_instant_to_retain.timestamp < landed[0]
    _, rows = oracle_snapshot(table)
    archive_as_hudi_may(table)
    assert oracle_snapshot(table)[1] == rows  # no record read twice
