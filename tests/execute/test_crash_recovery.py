"""Kill `runner apply` at every step; the next apply must finish the job with the same end result.

Each crash is a real process exit at a named failpoint (`os._exit`, so no cleanup runs and the
table lock is left behind, as after SIGKILL).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.failpoints import EXIT_CODE
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from tests.conftest import FIXTURES
from tests.crash import apply_in_process, apply_process, crash_project

# Every test here runs `runner apply` as a process that exits at a failpoint, with Spark in that
# process (so no fixture marks it `spark`).
pytestmark = [pytest.mark.crash, pytest.mark.spark]

FIXTURE = FIXTURES / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip"
POINTS = [
    "after_lock",
    "after_clean_requested",
    "after_clean_inflight",
    "after_delete",
    "after_clean_completed",
]


def _end_state(table: Path) -> tuple[list[str], list[str]]:
    files = sorted(
        str(p.relative_to(table)) for p in table.rglob("*") if p.is_file() and ".hoodie" not in p.parts
    )
    meta = read_table_metadata(storage_for(str(table)))
    cleans = [f"{i.action}.{i.state}" for i in meta.timeline.instants if i.action.value == "clean"]
    return files, cleans


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str]]:
    project = crash_project(tmp_path_factory.mktemp("ref") / "p", FIXTURE)
    done = apply_in_process(project)
    assert done.returncode == 0, done.stderr + done.stdout
    return _end_state(project / "table")


@pytest.mark.parametrize("point", POINTS)
def test_killed_apply_is_finished_by_the_next_one(point, tmp_path, reference):
    project = crash_project(tmp_path / "p", FIXTURE)
    crashed = apply_process(project, point)
    assert crashed.returncode == EXIT_CODE, crashed.stderr + crashed.stdout

    recovered = apply_in_process(project)

    assert recovered.returncode == 0, recovered.stderr + recovered.stdout
    assert _end_state(project / "table") == reference
    assert not (project / "table" / ".hoodie" / ".locks" / "runner.lock").exists()


def test_crash_in_the_middle_of_deleting_is_finished_by_the_next_apply(tmp_path, reference):
    project = crash_project(tmp_path / "p", FIXTURE)
    assert apply_process(project, "after_clean_inflight").returncode == EXIT_CODE
    meta = read_table_metadata(storage_for(str(project / "table")))
    (_, plan), = meta.pending_cleans
    first_half = [info.file_path for infos in plan.file_paths_to_delete.values() for info in infos][:2]
    for path in first_half:  # as if the Spark job died after deleting these
        Path(path.removeprefix("file:")).unlink()

    recovered = apply_in_process(project)

    assert recovered.returncode == 0, recovered.stderr + recovered.stdout
    assert _end_state(project / "table") == reference
