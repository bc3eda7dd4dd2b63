"""Kill `runner apply` at every step of a resize, turn resizes off in the declaration, and apply
again: the interrupted resize is rolled back (`finish_pending_resize` with `roll_back`), also when
that apply is killed part way through the rollback and run once more.

The end state is the table before the resize: no pending or completed clustering of it, none of
its new files, the metadata table's listing as before and healthy, no MDT instant of it left, and
readers (the `hudi` package) see the same rows at every stage. A clustering Hudi scheduled itself
is never rolled back by this path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.failpoints import EXIT_CODE
from runner.hudi.instant import Action
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from tests.conftest import FIXTURES
from tests.crash import RESIZE_POINTS, RESIZE_YAML, apply_in_process, apply_process, crash_project
from tests.mdt.crash_states import assert_metadata_table_healthy
from tests.mdt.test_resize_mdt import rows

FIXTURE = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"
OFF = RESIZE_YAML.replace("small_file_limit: 100MiB", "small_file_limit: 0")


def _state(table: Path) -> dict[str, object]:
    storage = storage_for(str(table))
    meta = read_table_metadata(storage)
    mdt = read_metadata_table(storage)
    return {
        "data files": sorted(str(p.relative_to(table)) for p in table.rglob("*.parquet") if ".hoodie" not in p.parts),
        "data instants": sorted(i.file_name for i in meta.timeline.instants),
        "mdt instants": sorted(i.file_name for i in mdt.timeline.instants),
        "listing": {p: sorted(n) for p, n in sorted(read_files_listing(storage, meta, mdt).files.items())},
        "replaced": sorted(meta.replaced),
    }


def _crashed_resize(tmp_path: Path, point: str) -> tuple[Path, dict[str, object], object]:
    project = crash_project(tmp_path / "p", FIXTURE)
    (project / "tables" / "t.yml").write_text(RESIZE_YAML)
    table = project / "table"
    before, seen = _state(table), rows(table)
    crashed = apply_process(project, point)
    assert crashed.returncode == EXIT_CODE, crashed.stderr + crashed.stdout
    assert read_table_metadata(storage_for(str(table))).runner_pending_clustering
    (project / "tables" / "t.yml").write_text(OFF)  # the user turns resizes off
    return project, before, seen


def _assert_as_before(table: Path, before: dict[str, object], seen: object) -> None:
    assert _state(table) == before
    assert_metadata_table_healthy(table)
    assert rows(table) == seen


@pytest.mark.parametrize("point", RESIZE_POINTS)
def test_an_interrupted_resize_is_rolled_back_once_resizes_are_off(point: str, tmp_path: Path) -> None:
    project, before, seen = _crashed_resize(tmp_path, point)
    table = project / "table"

    done = apply_in_process(project)

    assert done.returncode == 0, done.stderr + done.stdout
    assert "rolled back the interrupted resize" in done.stdout, done.stdout
    _assert_as_before(table, before, seen)


@pytest.mark.parametrize("point", ["after_rewrite", "after_resize_metadata_table_commit"])
@pytest.mark.parametrize("during", ["after_resize_rollback_mdt", "after_resize_rollback_files"])
def test_a_rollback_killed_part_way_is_finished_by_the_next_apply(point: str, during: str, tmp_path: Path) -> None:
    project, before, seen = _crashed_resize(tmp_path, point)
    table = project / "table"

    killed = apply_process(project, during)
    assert killed.returncode == EXIT_CODE, killed.stderr + killed.stdout
    assert rows(table) == seen  # readers are fine part way through the rollback
    again = apply_in_process(project)

    assert again.returncode == 0, again.stderr + again.stdout
    _assert_as_before(table, before, seen)
    assert not read_table_metadata(storage_for(str(table))).timeline.pending(Action.REPLACE_COMMIT, Action.CLUSTERING)


def test_a_pending_clustering_hudi_scheduled_is_never_rolled_back(tmp_path: Path) -> None:
    """The same interrupted clustering without the runner's marker is Hudi's: turning resizes off
    leaves it, its plan and the files it wrote exactly as they are, for Hudi to finish."""
    from runner.hudi.avro import read_container, write_container

    project, _, seen = _crashed_resize(tmp_path, "after_rewrite")
    table = project / "table"
    (pending,) = read_table_metadata(storage_for(str(table))).runner_pending_clustering
    requested = table / ".hoodie" / "timeline" / f"{pending}.clustering.requested"
    record = read_container(requested.read_bytes(), path=str(requested))
    record["clusteringPlan"]["extraMetadata"] = {}  # type: ignore[index]
    requested.write_bytes(write_container("HoodieRequestedReplaceMetadata", record))
    assert not read_table_metadata(storage_for(str(table))).runner_pending_clustering
    crashed = _state(table)

    done = apply_in_process(project)

    assert done.returncode == 0, done.stderr + done.stdout
    assert "rolled back" not in done.stdout, done.stdout
    assert _state(table) == crashed
    assert rows(table) == seen


def _refuse_resizes(table: Path) -> None:
    """Make the metadata table one the runner refuses to resize (cleans are still kept in step): its
    record index needs each row's record key, and the properties now say rows carry none."""
    props = table / ".hoodie" / "hoodie.properties"
    lines = [line for line in props.read_text().splitlines() if not line.startswith("hoodie.populate.meta.fields=")]
    props.write_text("\n".join([*lines, "hoodie.populate.meta.fields=false", ""]))


@pytest.mark.parametrize("declaration", ["resizes on", "resizes off"])
def test_an_interrupted_resize_the_metadata_table_no_longer_allows_is_rolled_back_and_says_so(
        declaration: str, tmp_path: Path) -> None:
    """Neither finished (the metadata table could not record it) nor left pending (it would block
    Hudi writers' updates of its groups): rolled back, and the output says so, names the files it
    removed and why no new resize runs, rather than "nothing was rewritten"."""
    project, _, _ = _crashed_resize(tmp_path, "after_rewrite")
    if declaration == "resizes on":
        (project / "tables" / "t.yml").write_text(RESIZE_YAML)
    table = project / "table"
    (pending,) = read_table_metadata(storage_for(str(table))).runner_pending_clustering
    written = sorted(p for p in table.rglob(f"*_{pending}.parquet") if ".hoodie" not in p.parts)
    assert written
    _refuse_resizes(table)
    before = _state(table)

    plan = apply_in_process(project, "plan")
    done = apply_in_process(project)

    why = ("the runner will not resize this table while keeping its metadata table, because the record_index "
           "needs each row's record key" if declaration == "resizes on" else "the declaration no longer asks")
    assert f"roll back the interrupted resize (clustering {pending}): {why}" in plan.stdout, plan.stdout
    assert done.returncode == 0, done.stderr + done.stdout
    assert "nothing was rewritten" not in done.stdout
    note = f"rolled back the interrupted resize {pending}: removed the {len(written)} files it had written, no file " \
           f"group was replaced; {why}"
    assert note in done.stdout, done.stdout
    if declaration == "resizes on":
        assert "so it is not finished, and no new resize runs" in done.stdout, done.stdout
    after = _state(table)
    assert not any(str(pending) in f for f in after["data files"])  # type: ignore[union-attr]
    assert not any(str(pending) in i for i in after["data instants"])  # type: ignore[union-attr]
    assert not any(str(pending) in i for i in after["mdt instants"])  # type: ignore[union-attr]
    assert after["replaced"] == before["replaced"]


def test_a_table_refused_after_its_clean_reports_the_clean_it_did(tmp_path: Path) -> None:
    """The clean completes, then the resize is refused: the table fails, and the report (text and
    run_results.json) still counts the files the clean deleted and the instants it wrote, rather
    than an error alone that reads as if nothing had changed."""
    project = crash_project(tmp_path / "p", FIXTURE)
    (project / "tables" / "t.yml").write_text(RESIZE_YAML.replace(
        "  policy: KEEP_LATEST_COMMITS\n  commits_retained: 1000\n",
        "  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n"))
    table = project / "table"
    _refuse_resizes(table)

    done = apply_in_process(project)

    assert done.returncode == 1, done.stdout + done.stderr
    (entry,) = json.loads((project / "target" / "run_results.json").read_text())["tables"]
    assert entry["status"] == "error" and "will not resize" in entry["error"]["message"]
    assert entry["files_deleted"] > 0 and any(i.endswith(".clean") for i in entry["instants_written"]), entry
    cleaned = next(i for i in entry["instants_written"] if i.endswith(".clean"))
    assert (table / ".hoodie" / "timeline" / cleaned).exists()
    assert f"done before it failed: {entry['files_deleted']} files deleted" in done.stdout, done.stdout
    assert f"wrote {cleaned}" in done.stdout
