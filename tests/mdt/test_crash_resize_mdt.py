"""Kill `runner apply` at every step of a resize that updates the metadata table.

On the project's local master the resize runs on the driver's threads, so the killed processes
start no JVM; one variant pins the Spark engine in the killed process.

The next apply must finish the resize with the same end state as an uninterrupted run (the new
files get new names, so the state is compared by shape and content), record it in the MDT exactly
once, and in the crashed state readers must still see the same rows: an MDT deltacommit whose
replacecommit never completed is ignored.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.failpoints import EXIT_CODE
from runner.hudi.instant import Action
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from tests.conftest import FIXTURES
from tests.crash import RESIZE_POINTS, RESIZE_YAML, apply_in_process, apply_process, crash_project
from tests.mdt.crash_states import assert_metadata_table_healthy, resize_end_state, uninterrupted
from tests.mdt.test_resize_mdt import rows

FIXTURE = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"
POINTS = RESIZE_POINTS


def resize_project(root: Path) -> Path:
    project = crash_project(root, FIXTURE)
    (project / "tables" / "t.yml").write_text(RESIZE_YAML)
    return project


def end_state(table: Path) -> dict[str, object]:
    """The resize's shape, plus which MDT partitions got a log for it (exactly once each)."""
    (resize,) = read_table_metadata(storage_for(str(table))).timeline.completed(Action.REPLACE_COMMIT)[-1:]
    mdt_logs = (table / ".hoodie/metadata").rglob(f".*_{resize.time}.log.*")
    return resize_end_state(table) | {"mdt logs of the resize": sorted(p.parent.name for p in mdt_logs)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    project = resize_project(tmp_path_factory.mktemp("ref") / "p")
    before = uninterrupted(project, rows)
    return end_state(project / "table"), before


@pytest.mark.spark
@pytest.mark.parametrize("point", POINTS)
def test_killed_resize_is_finished_by_the_next_apply(point: str, tmp_path: Path, reference) -> None:
    state, before = reference
    project = resize_project(tmp_path / "p")
    table = project / "table"
    crashed = apply_process(project, point)
    assert crashed.returncode == EXIT_CODE, crashed.stderr + crashed.stdout
    assert rows(table) == before  # readers are fine in the crashed state

    recovered = apply_in_process(project)

    assert recovered.returncode == 0, recovered.stderr + recovered.stdout
    assert end_state(table) == state
    assert_metadata_table_healthy(table)
    assert rows(table) == before


@pytest.mark.spark
def test_a_deltacommit_whose_resize_never_completed_is_ignored_by_readers(tmp_path: Path) -> None:
    project = resize_project(tmp_path / "p")
    table = project / "table"
    storage = storage_for(str(table))
    listed_before = read_files_listing(storage, read_table_metadata(storage)).files
    assert apply_process(project, "after_resize_metadata_table_commit").returncode == EXIT_CODE
    meta = read_table_metadata(storage)
    (pending,) = meta.runner_pending_clustering
    assert any(i.time == pending and i.is_completed for i in read_metadata_table(storage).timeline.instants)
    # The resize's MDT block is invalid until the replacecommit completes: the listing is unchanged.
    assert read_files_listing(storage, meta).files == listed_before


# `runner apply` with the resize pinned to Spark tasks (a local master would rewrite on the driver).
ON_SPARK = ("import sys; from runner.execute import resize_engine; resize_engine.PINNED = 'spark'; "
            "from runner.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.spark
def test_killed_resize_on_spark_tasks_is_finished_by_the_next_apply(tmp_path: Path, reference) -> None:
    state, before = reference
    project = resize_project(tmp_path / "p")
    table = project / "table"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")} | {"RUNNER_FAILPOINT": "after_rewrite"}
    crashed = subprocess.run([sys.executable, "-c", ON_SPARK, "apply", "--auto-approve", "--project-dir",
                              str(project)], capture_output=True, text=True, env=env, timeout=300)
    assert crashed.returncode == EXIT_CODE, crashed.stderr + crashed.stdout
    assert (project / "target" / "spark.log").exists()  # the killed run started Spark for its rewrite
    assert rows(table) == before

    recovered = apply_in_process(project)

    assert recovered.returncode == 0, recovered.stderr + recovered.stdout
    assert end_state(table) == state
    assert_metadata_table_healthy(table)
    assert rows(table) == before
