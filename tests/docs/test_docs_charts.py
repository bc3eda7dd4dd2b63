"""The report's numbers, computed in Python, checked against hand counts and the `hudi` reader."""

from __future__ import annotations

from datetime import UTC, datetime

from hudi import HudiTable

from runner.declarations.loader import load_project
from runner.docs import charts
from runner.hudi.instant import Action
from runner.hudi.state import read_table_metadata, read_table_state
from runner.plan.build import plan_table
from runner.plan.clean import clean_scope
from runner.storage import storage_for
from runner.testing.states import StateBuilder
from tests.conftest import FIXTURES, extract_fixture

NOW = datetime(2026, 1, 6, tzinfo=UTC)


def test_histogram_bins_each_latest_base_file_once_and_spans_both_markers():
    b = StateBuilder()
    b.commit(1, {"p": ["a", "b"]}, size=100)
    b.commit(2, {"p": ["c"]}, size=900)
    b.commit(3, {"p": ["a"]}, size=5_000)  # a's older 100-byte version is not a latest file
    h = charts.size_histogram(b.state(), small_file_limit=1_000, max_file_size=4_000)
    assert h["files"] == 3 and h["small_files"] == 2
    assert sum(bin_["count"] for bin_ in h["bins"]) == 3
    assert h["bins"][-1]["end"] > 5_000  # the axis reaches the largest file, past max_file_size
    placed = {size: next(i for i, bin_ in enumerate(h["bins"]) if bin_["start"] <= size < bin_["end"])
              for size in (100, 900, 5_000)}
    assert [h["bins"][i]["count"] for i in placed.values()] == [1, 1, 1]
    assert (h["small_file_limit"], h["max_file_size"]) == (1_000, 4_000)


def test_histogram_axis_covers_max_file_size_when_every_file_is_tiny():
    b = StateBuilder()
    b.commit(1, {"p": ["a"]}, size=10)
    h = charts.size_histogram(b.state(), small_file_limit=100, max_file_size=10_000)
    assert h["bins"][-1]["end"] >= 10_000 and h["bins"][0]["count"] == 1


def test_versions_count_active_and_replaced_groups_apart():
    b = StateBuilder()
    b.commit(1, {"p": ["a", "b"]})
    b.commit(2, {"p": ["a"]})
    b.commit(3, {"p": ["a"]})
    b.replace(4, {"p": ["b"]}, {"p": ["c"]})
    v = charts.versions_per_group(b.state())
    assert v["versions"] == [
        {"versions": 1, "active_groups": 1, "replaced_groups": 1},  # c; b replaced
        {"versions": 2, "active_groups": 0, "replaced_groups": 0},
        {"versions": 3, "active_groups": 1, "replaced_groups": 0},  # a
    ]
    assert v["max_versions"] == 3


def test_fixture_table_against_the_hudi_reader(tmp_path):
    base = extract_fixture(FIXTURES / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip", tmp_path)
    state = read_table_state(storage_for(str(base)))
    h = charts.size_histogram(state, small_file_limit=1, max_file_size=2)
    oracle = [s for s in HudiTable(str(base)).get_file_slices() if s.base_file_name]
    assert h["files"] == len(oracle) == 1
    v = charts.versions_per_group(state)
    assert sum(r["active_groups"] for r in v["versions"]) == 1
    assert sum(r["replaced_groups"] for r in v["versions"]) == 3
    assert sum(r["versions"] * r["replaced_groups"] for r in v["versions"]) == 4  # status: 4 replaced slices
    kinds = [(p["action"], p["kind"]) for p in charts.timeline_points(state)]
    assert kinds == [("commit", "commit"), ("commit", "commit"), ("replacecommit", "replace")]


def test_reclaimable_per_partition_adds_up_to_the_plan(demo_project):
    project = load_project(str(demo_project))
    for decl in project.tables:
        storage = storage_for(decl.path)
        meta = read_table_metadata(storage)
        state = read_table_state(storage, metadata=meta)
        plan = plan_table(decl, state, clean_scope(decl.clean, meta, now=NOW))
        rows = charts.reclaimable_by_partition(plan)
        assert plan.clean is not None
        assert sum(r["bytes"] for r in rows) == plan.clean.bytes_to_reclaim
        assert sum(r["files"] for r in rows) == len(plan.clean.files_to_delete)
        assert [r["bytes"] for r in rows] == sorted((r["bytes"] for r in rows), reverse=True)


def test_timeline_kinds_on_the_demo_tables(demo_project):
    kinds = {}
    for name in ("orders", "events"):
        state = read_table_state(storage_for(str(demo_project / "warehouse" / name)))
        kinds[name] = {p["kind"] for p in charts.timeline_points(state)}
        assert len(charts.timeline_points(state)) == len(state.metadata.timeline.instants)
    assert {"commit", "savepoint", "replace"} <= kinds["orders"]
    assert {"commit", "compaction"} <= kinds["events"]  # merge-on-read: a commit is a compaction
    events = read_table_state(storage_for(str(demo_project / "warehouse" / "events")))
    compacted = {str(i.time) for i in events.metadata.timeline.completed(Action.COMMIT)}
    assert {p["time"] for p in charts.timeline_points(events) if p["kind"] == "compaction"} == compacted
