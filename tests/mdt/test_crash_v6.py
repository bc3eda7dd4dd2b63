"""Kill `runner apply` at every metadata-table step of a clean on a table-version-6 table.

Version 6 appends a new log version to the MDT slice, so a retry must first remove the log its
crashed attempt wrote (or the version numbers would drift from an uninterrupted run's). The next
apply must reach the same end state, MDT file names included; in the crashed state readers see
the table as before, and an MDT deltacommit whose clean never completed is ignored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.failpoints import EXIT_CODE
from runner.hudi.mdt.reader import read_files_listing
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing import COPY_ON_WRITE
from tests.crash import RESIZE_POINTS, RESIZE_YAML, TABLE_YAML, apply_in_process, apply_process
from tests.execute.conftest import oracle_snapshot
from tests.mdt.crash_states import assert_metadata_table_healthy, clean_end_state, resize_end_state, uninterrupted
from tests.mdt.synthetic import build_with_mdt

# Every test here runs `runner apply` as a process that exits at a failpoint, with Spark in that
# process (so no fixture marks it `spark`).
pytestmark = [pytest.mark.crash, pytest.mark.spark]

POINTS = ["after_mdt_requested", "after_mdt_inflight", "after_mdt_logs", "after_metadata_table_commit"]


def _project(root: Path) -> Path:
    """A one-table project whose table is a synthetic v6 COW table with a metadata table."""
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: crash\nspark:\n  master: "local[1]"\n')
    (root / "tables" / "t.yml").write_text(TABLE_YAML)
    build_with_mdt(root / "table", 6, COPY_ON_WRITE, partitioned=True)
    return root


def _end_state(table: Path) -> dict[str, object]:
    """On v6 the MDT log names are fixed too (log versions over the slice): a retry must leave
    exactly the uninterrupted run's."""
    return clean_end_state(table) | {"mdt files": _mdt_file_names(table)}


def _mdt_file_names(table: Path) -> list[str]:
    return sorted(p.name for p in (table / ".hoodie/metadata/files").iterdir())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    project = _project(tmp_path_factory.mktemp("ref") / "p")
    before = uninterrupted(project, oracle_snapshot)
    return _end_state(project / "table"), before


@pytest.mark.parametrize("point", POINTS)
def test_killed_v6_apply_is_finished_by_the_next_one(point: str, tmp_path: Path, reference) -> None:
    end_state, rows = reference
    project = _project(tmp_path / "p")
    table = project / "table"
    storage = storage_for(str(table))
    listed_before = read_files_listing(storage, read_table_metadata(storage)).files

    crashed = apply_process(project, point)

    assert crashed.returncode == EXIT_CODE, crashed.stderr + crashed.stdout
    assert oracle_snapshot(table) == rows
    # Until the clean completes, its MDT block is not valid on 0.14/0.15: the listing is as before.
    assert read_files_listing(storage, read_table_metadata(storage)).files == listed_before

    recovered = apply_in_process(project)

    assert recovered.returncode == 0, recovered.stderr + recovered.stdout
    assert _end_state(table) == end_state
    assert_metadata_table_healthy(table)
    assert oracle_snapshot(table) == rows


# -- the same for a resize on a version-6 table: every step from the plan to the MDT deltacommit --


def _resize_project(root: Path) -> Path:
    project = _project(root)
    (project / "tables" / "t.yml").write_text(RESIZE_YAML)
    return project


def _resize_end_state(table: Path) -> dict[str, object]:
    return resize_end_state(table) | {"mdt files": _mdt_file_names(table)}


@pytest.fixture(scope="module")
def resize_reference(tmp_path_factory: pytest.TempPathFactory):
    project = _resize_project(tmp_path_factory.mktemp("ref") / "p")
    done = apply_in_process(project)
    assert done.returncode == 0, done.stderr + done.stdout
    return _resize_end_state(project / "table")


@pytest.mark.parametrize("point", RESIZE_POINTS)
def test_killed_v6_resize_is_finished_by_the_next_apply(point: str, tmp_path: Path, resize_reference) -> None:
    state = resize_reference
    project = _resize_project(tmp_path / "p")
    table = project / "table"
    crashed = apply_process(project, point)
    assert crashed.returncode == EXIT_CODE, crashed.stderr + crashed.stdout

    recovered = apply_in_process(project)

    assert recovered.returncode == 0, recovered.stderr + recovered.stdout
    assert _resize_end_state(table) == state
    assert_metadata_table_healthy(table)
