"""Kill `runner apply` at every step of a clean that updates the metadata table.

The next apply must finish the job with the same end state as an uninterrupted run, the MDT must be
in step with the data timeline and storage, and in the crashed state readers must still work:
an MDT deltacommit whose clean never completed is ignored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.failpoints import EXIT_CODE
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from tests.conftest import FIXTURES
from tests.crash import apply_in_process, apply_process, crash_project
from tests.execute.conftest import oracle_snapshot
from tests.mdt.crash_states import assert_metadata_table_healthy, clean_end_state, uninterrupted

# Every test here runs `runner apply` as a process that exits at a failpoint, with Spark in that
# process (so no fixture marks it `spark`).
pytestmark = [pytest.mark.crash, pytest.mark.spark]

FIXTURE = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"
POINTS = [
    "after_delete",
    "after_mdt_requested",
    "after_mdt_inflight",
    "after_mdt_logs",
    "after_metadata_table_commit",
    "after_clean_completed",
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    project = crash_project(tmp_path_factory.mktemp("ref") / "p", FIXTURE)
    before = uninterrupted(project, oracle_snapshot)
    return clean_end_state(project / "table"), before


@pytest.mark.parametrize("point", POINTS)
def test_killed_apply_is_finished_by_the_next_one(point: str, tmp_path: Path, reference) -> None:
    end_state, rows = reference
    project = crash_project(tmp_path / "p", FIXTURE)
    table = project / "table"
    crashed = apply_process(project, point)
    assert crashed.returncode == EXIT_CODE, crashed.stderr + crashed.stdout
    assert oracle_snapshot(table) == rows  # readers are fine in the crashed state

    recovered = apply_in_process(project)

    assert recovered.returncode == 0, recovered.stderr + recovered.stdout
    assert clean_end_state(table) == end_state
    assert_metadata_table_healthy(table)
    assert oracle_snapshot(table) == rows


def test_a_deltacommit_whose_clean_never_completed_is_ignored_by_readers(tmp_path: Path) -> None:
    project = crash_project(tmp_path / "p", FIXTURE)
    table = project / "table"
    storage = storage_for(str(table))
    listed_before = read_files_listing(storage, read_table_metadata(storage)).files
    assert apply_process(project, "after_metadata_table_commit").returncode == EXIT_CODE
    meta = read_table_metadata(storage)
    (pending, _), = meta.pending_cleans
    assert any(i.time == pending.time and i.is_completed for i in read_metadata_table(storage).timeline.instants)
    # The clean's MDT block is invalid until the clean completes: the listing is unchanged.
    assert read_files_listing(storage, meta).files == listed_before
