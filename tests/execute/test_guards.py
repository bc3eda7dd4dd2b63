"""Guards on what the executor reads from the timeline: clustering plans, clean steps, markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.declarations.model import CleanPolicyName
from runner.errors import CorruptMetadataError, RefusedError
from runner.execute.clean import CleanRunner
from runner.execute.paths import relativize, table_relative
from runner.execute.resize_plan import decode_plan, encode_plan
from runner.hudi.instant import InstantTime
from runner.hudi.pending_writes import read_pending_writes
from runner.hudi.timeline import Timeline
from runner.hudi.timeline_writer import TimelineWriter
from runner.plan.model import CleanStep, FileToRewrite, RewriteGroup, SizingStep
from runner.storage import storage_for

NAME = "a-0_0-1-2_20240101000000000.parquet"


def _step(*groups: RewriteGroup) -> SizingStep:
    return SizingStep(10 * 1024 * 1024, 5 * 1024 * 1024, groups)


@pytest.mark.parametrize("partition", ["./.hoodie", "p/../.hoodie", "../outside", "/abs", "p\\..\\x", ".hoodie/.aux"])
def test_a_clustering_plan_partition_is_normalised_then_checked(partition):
    data = encode_plan(_step(RewriteGroup(partition, (FileToRewrite("a-0", f"{partition}/{NAME}", 1),))),
                       base_uri="file:/data/t")
    with pytest.raises(RefusedError):
        decode_plan(data, path="r")


def test_a_clustering_plan_with_spelled_partitions_decodes_to_canonical_paths():
    data = encode_plan(_step(RewriteGroup("./p//q", (FileToRewrite("a-0", f"p/q/{NAME}", 1),))), base_uri="file:/t")
    (group,) = decode_plan(data, path="r")
    assert group.partition == "p/q" and group.inputs == (f"p/q/{NAME}",)


def test_a_clustering_plan_naming_a_group_twice_is_refused():
    file = FileToRewrite("a-0", f"p/{NAME}", 1)
    data = encode_plan(_step(RewriteGroup("p", (file,)), RewriteGroup("p", (file,))), base_uri="file:/t")
    with pytest.raises(CorruptMetadataError, match="more than once"):
        decode_plan(data, path="r")


@pytest.mark.parametrize("path", ["p/../../x", "", ".", "./", "a/.hoodie/b", ".hoodie_partition_metadata", "c:/x"])
def test_table_relative_refuses_escapes(path):
    with pytest.raises(RefusedError):
        table_relative(path)


@pytest.mark.parametrize("folder", [None, "p"])
@pytest.mark.parametrize("full", [f"file:/t/p/{NAME}", f"file:///t/p/{NAME}", f"/t/p/{NAME}", f"file:/t/./p//{NAME}"])
def test_relativize_accepts_hudis_spellings_of_the_table(full, folder):
    assert relativize("/t", full, folder=folder) == f"p/{NAME}"


@pytest.mark.parametrize("folder", [None, "p", ""])
@pytest.mark.parametrize("full", [f"file:/t2/p/{NAME}", f"file:/t/../t2/p/{NAME}", f"s3://b/t/p/{NAME}",
                                  f"file:/t/.hoodie/{NAME}", "file:/t/p/hoodie.properties",
                                  # names the base-file pattern matches but a path check refuses
                                  "file:/t/p/.hoodie_0-1-2_20240101000000000.parquet",
                                  "file:/t/p/a\\b_0-1-2_20240101000000000.parquet",
                                  "file:/t/c:x_0-1-2_20240101000000000.parquet",
                                  "file:/t/p/..\\x_0-1-2_20240101000000000.parquet"])
def test_relativize_refuses_other_places(full, folder):
    """With or without the expected folder (the shortcut for plain names), the same refusals."""
    with pytest.raises(RefusedError):
        relativize("/t", full, folder=folder)


def test_relativize_with_a_folder_returns_what_the_full_check_returns():
    for full in (f"file:/t/p/{NAME}", f"file:/t/q/{NAME}", f"file:/t/{NAME}", f"file:/t/p/q/{NAME}"):
        for folder in ("p", "", "p/q"):
            assert relativize("/t", full, folder=folder) == relativize("/t", full)


def test_an_empty_clean_is_never_scheduled(tmp_path: Path):
    (tmp_path / ".hoodie").mkdir()
    storage = storage_for(str(tmp_path))
    runner = CleanRunner(storage, TimelineWriter(storage, ".hoodie", 1), lambda s, p: [],
                         completion_time=lambda: InstantTime("20240101000002000"))
    empty = CleanStep(CleanPolicyName.KEEP_LATEST_COMMITS, None, "", (), ())
    with pytest.raises(RefusedError, match="no files and no partitions"):
        runner.start(InstantTime("20240101000001000"), empty)
    assert list((tmp_path / ".hoodie").iterdir()) == []


def test_markers_of_a_pending_write_name_its_groups_direct_and_timeline_server(tmp_path: Path):
    hoodie = tmp_path / ".hoodie"
    (hoodie / ".temp" / "20240101000001000" / "p").mkdir(parents=True)
    (hoodie / ".temp" / "20240101000001000" / "p" / f"{NAME}.marker.MERGE").write_bytes(b"")
    (hoodie / ".temp" / "20240101000002000").mkdir(parents=True)
    (hoodie / ".temp" / "20240101000002000" / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    (hoodie / ".temp" / "20240101000002000" / "MARKERS0").write_text(
        "q/b-0_0-1-2_20240101000002000.parquet.marker.CREATE\n")
    names = ["20240101000001000.commit.requested", "20240101000002000.commit.requested"]
    writes = read_pending_writes(
        storage_for(str(tmp_path)), ".hoodie", Timeline.from_file_names(names, folder=".hoodie")
    )
    assert {("p", "a-0"), ("q", "b-0")} <= writes.groups
    assert len(writes.unknown) == 2  # no workload profile yet: the whole table waits


@pytest.mark.parametrize(
    "operation, action, groups, partitions, unknown",
    [
        ("UPSERT", "commit", {("p", "a-0")}, {"q"}, False),
        ("INSERT_OVERWRITE", "replacecommit", {("p", "a-0")}, {"p", "q"}, False),
        ("INSERT_OVERWRITE_TABLE", "replacecommit", set(), set(), True),
    ],
)
def test_a_workload_profile_bounds_a_pending_write(tmp_path: Path, operation, action, groups, partitions, unknown):
    from runner.hudi.metadata import CommitMetadata, WriteStat, encode_commit_metadata

    (tmp_path / ".hoodie").mkdir()
    profile = CommitMetadata(
        operation_type=operation,
        partition_to_write_stats={
            "p": (WriteStat("p", "a-0", None, "20240101000000000", num_update_writes=3),),
            "q": (WriteStat("q", "", None, None, num_inserts=5),),
        },
    )
    time = "20240101000001000"
    inflight = f"{time}.inflight" if action == "commit" else f"{time}.{action}.inflight"
    (tmp_path / ".hoodie" / f"{time}.{action}.requested").write_bytes(b"")
    (tmp_path / ".hoodie" / inflight).write_bytes(encode_commit_metadata(profile, layout=1))
    timeline = Timeline.from_file_names([f"{time}.{action}.requested", inflight], folder=".hoodie")
    writes = read_pending_writes(storage_for(str(tmp_path)), ".hoodie", timeline)
    assert (writes.groups, writes.partitions, bool(writes.unknown)) == (groups, partitions, unknown)


LOG = ".a-0_20240101000000000.log.1_0-1-2"
# Plans a clean may read back from the timeline: Hudi's spellings, and every way a path can lie
# elsewhere or be named twice, mixed into partitions of plain files.
_PLANS: list[dict[str, list[str]]] = [
    {"p": [f"file:/t/p/{NAME}", f"file:/t/p/{LOG}", "file:/t/p/b-0_0-1-2_20240101000000000.parquet"]},
    {"p": [f"file:///t/p/{NAME}", f"/t/p/{LOG}"]},  # two spellings of the root in one partition
    {"": [f"file:/t/{NAME}"], "p/q": [f"file:/t/p/q/{NAME}"]},
    {"p": [f"file:/t/p/{NAME}", f"file:/t/p/{NAME}"]},  # twice in one partition
    {"p": [f"file:/t/p/{NAME}"], "./p": [f"file:/t/p/{NAME}"]},  # twice across partitions
    {"p": [f"file:/t/p/{NAME}", f"file:/t/q/{NAME}"]},  # a file of another partition
    {"p": [f"file:/t/p/{NAME}", f"file:/t/p/x/{NAME}"]},  # deeper than the partition
    {"p": [f"file:/t/p/{NAME}/{NAME}"]},  # a `/` inside what would be one name
    {"p": [f"file:/t/p/{NAME}", "file:/t/p/.hoodie_0-1-2_20240101000000000.parquet"]},
    {"p": [f"file:/t/p/{NAME}", "file:/t/p/hoodie.properties"]},
    {"p": [f"file:/t/p/{NAME}", "file:/t/p/a\\b_0-1-2_20240101000000000.parquet"]},
    {"p": [f"file:/t/p/{NAME}", "file:/t/p/c:x_0-1-2_20240101000000000.parquet"]},
    {"p": [f"file:/t/p/{NAME}", "file:/t/p/a\x00_0-1-2_20240101000000000.parquet"]},
    {"p": [f"file:/t/p/{NAME}", "file:/t/p/.a-0_20240101000000000.archive.1"]},  # not a data file
    {"p": [f"file:/t/p/{NAME}", "file:/t/p/a-0_0-1-2_2024010100000000\u0663.parquet"]},  # a non-ASCII digit
    {"p": [f"file:/t/p/./{NAME}", f"file:/t/p//{LOG}"]},
    {"p": [f"file:/t2/p/{NAME}"]},
    {"p": [f"file:/t/p/../../t2/p/{NAME}"]},
    {"p": []},
    # Line breaks, which the partition-at-once check uses as its separator: in a name, a path that
    # holds a second path, and a partition's name.
    {"p": [f"file:/t/p/{NAME}", "file:/t/p/a\n_0-1-2_20240101000000000.parquet"]},
    {"p": [f"file:/t/p/{NAME}\nfile:/t/p/{LOG}"]},
    {"p": [f"file:/t/p/{NAME}\n", f"file:/t/p/{LOG}"]},
    {"p\nq": [f"file:/t/p\nq/{NAME}", f"file:/t/p\nq/{LOG}"]},
    {"p": [f"file:/t/p/{NAME}", f"\nfile:/t/p/{LOG}"]},
]


def _files_of_or_refusal(plan: dict[str, list[str]]) -> object:
    from runner.execute.clean import files_of
    from runner.hudi.metadata import CleanFileInfo, CleanPlan

    clean = CleanPlan(None, "", "KEEP_LATEST_COMMITS",
                      {p: tuple(CleanFileInfo(f) for f in fs) for p, fs in plan.items()}, (), {}, 2)
    try:
        return files_of(clean, "/t")
    except RefusedError as refusal:
        return ("refused", refusal.message)


@pytest.mark.parametrize("plan", _PLANS)
def test_a_clean_plan_read_a_partition_at_once_gives_what_path_by_path_gives(plan, monkeypatch):
    import runner.execute.clean as clean_module

    at_once = _files_of_or_refusal(plan)
    monkeypatch.setattr(clean_module, "plain_paths_in", lambda base, folder, paths: None)
    assert at_once == _files_of_or_refusal(plan)


def test_a_partition_of_plain_files_is_checked_at_once():
    from runner.execute.paths import plain_paths_in

    paths = [f"file:/t/p/{NAME}", f"file:/t/p/{LOG}"]
    assert plain_paths_in("/t", "p", paths) == [f"p/{NAME}", f"p/{LOG}"]
    assert plain_paths_in("/t", "", [f"/t/{NAME}"]) == [NAME]
    assert plain_paths_in("/t", "p", [*paths, f"file:/t/p/{NAME}/x"]) is None
