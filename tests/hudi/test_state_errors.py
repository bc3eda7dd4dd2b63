"""Corrupt or foreign inputs give one clear error naming the file, never a traceback-only failure."""

from __future__ import annotations

import re

import pytest

from runner.errors import CorruptMetadataError, NotAHudiTableError, TimelineError, UnsupportedTableError
from runner.hudi.state import read_table_state
from runner.storage import storage_for

V6 = "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"
V9 = "sample_table/cow/v9_txns_simple_nometa"


def read(base):
    return read_table_state(storage_for(str(base)))


def test_folder_that_is_not_a_hudi_table(tmp_path):
    (tmp_path / "data.parquet").write_bytes(b"x")
    with pytest.raises(NotAHudiTableError, match=re.escape("no .hoodie folder")):
        read(tmp_path)


def test_missing_hoodie_properties(hudi_fixture):
    base = hudi_fixture(V6)
    (base / ".hoodie" / "hoodie.properties").unlink()
    with pytest.raises(NotAHudiTableError, match=re.escape("hoodie.properties is missing")):
        read(base)


def test_unsupported_table_version(hudi_fixture):
    base = hudi_fixture(V6)
    props = base / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.version=6", "hoodie.table.version=5"))
    with pytest.raises(UnsupportedTableError, match=r"5.*6, 8"):
        read(base)


# Commit metadata is decoded lazily, when a planner first looks a commit up (as Hudi does), so a
# corrupt commit fails the read that needs it, with the same error naming the file.


def test_bad_json_commit_names_the_file(hudi_fixture):
    base = hudi_fixture(V6)
    (base / ".hoodie" / "20240707001301554.commit").write_text("{not json")
    commits = read(base).metadata.commits
    with pytest.raises(CorruptMetadataError, match=re.escape("20240707001301554.commit")):
        dict(commits)


def test_truncated_avro_commit_names_the_file(hudi_fixture):
    base = hudi_fixture(V9)
    commit = next((base / ".hoodie" / "timeline").glob("*_*.commit"))
    commit.write_bytes(commit.read_bytes()[:40])
    commits = read(base).metadata.commits
    with pytest.raises(CorruptMetadataError, match=commit.name):
        dict(commits)


def test_truncated_avro_clustering_plan_names_the_file(hudi_fixture):
    base = hudi_fixture(V9)
    plan = next((base / ".hoodie" / "timeline").glob("*.clustering.requested"))
    time = plan.name.split(".")[0]
    next((base / ".hoodie" / "timeline").glob(f"{time}_*.replacecommit")).unlink()  # pending again
    plan.write_bytes(plan.read_bytes()[:30])
    with pytest.raises(CorruptMetadataError, match=plan.name):
        read(base)


def test_unknown_instant_like_file_is_refused(hudi_fixture):
    base = hudi_fixture(V9)
    plan = next((base / ".hoodie" / "timeline").glob("*.clustering.requested"))
    (base / ".hoodie" / "timeline" / plan.name.replace(".clustering.requested", ".fake")).write_bytes(b"")
    with pytest.raises(TimelineError, match="does not understand"):
        read(base)


_WIDE = str.maketrans("0123456789", "０１２３４５６７８９")  # fullwidth digits, as an IME types them
_ARABIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@pytest.mark.parametrize("respell", [
    lambda time, completion: f"{time.translate(_WIDE)}_{completion}",
    lambda time, completion: f"{time}_{completion.translate(_ARABIC)}",
])
def test_an_instant_named_with_digits_hudi_does_not_read_is_refused(hudi_fixture, respell):
    """Python's \\d takes any script's digits, Hudi's instant pattern only 0-9: a commit named in
    fullwidth digits was read as one (January 2026 to `to_datetime`) that sorts after every real
    instant, the table's latest commit to the planner (one more retained commit moves the earliest
    commit to retain later than Hudi's), and an Arabic-Indic completion time as the latest completion."""
    base = hudi_fixture(V9)
    timeline = base / ".hoodie" / "timeline"
    commit = sorted(timeline.glob("*_*.commit"))[-1]
    time, completion = commit.name.split(".")[0].split("_")
    odd = timeline / f"{respell(time, completion)}.commit"
    commit.rename(odd)
    with pytest.raises(TimelineError, match="does not understand") as refused:
        read(base)
    assert odd.name in str(refused.value)


def test_empty_files_where_hudi_allows_them(hudi_fixture):
    base = hudi_fixture(V6)
    hoodie = base / ".hoodie"
    (hoodie / "20240707001301554.inflight").write_bytes(b"")  # inflight files may be empty
    (hoodie / "20990101000000000.clean.requested").write_bytes(b"")  # Hudi skips empty clean plans
    (hoodie / "20990101000000001.clean").write_bytes(b"")  # Hudi deletes empty completed cleans
    (hoodie / "20990101000000002.commit").write_bytes(b"")  # Hudi reads empty commit metadata
    state = read(base)
    assert [(str(i.time), p) for i, p in state.metadata.pending_cleans] == [("20990101000000000", None)]
    assert [str(i.time) for i in state.metadata.empty_completed_cleans] == ["20990101000000001"]


def test_empty_files_where_hudi_does_not_allow_them(hudi_fixture):
    base = hudi_fixture(V6)
    (base / ".hoodie" / "20990101000000000.compaction.requested").write_bytes(b"")
    with pytest.raises(CorruptMetadataError, match=re.escape("20990101000000000.compaction.requested is empty")):
        read(base)


def test_empty_savepoint_is_refused(hudi_fixture):
    base = hudi_fixture(V6)
    (base / ".hoodie" / "20240707001301554.savepoint").write_bytes(b"")
    with pytest.raises(CorruptMetadataError, match="savepoint is empty"):
        read(base)


def test_uncommitted_files_are_set_aside(hudi_fixture):
    base = hudi_fixture(V6)
    hoodie = base / ".hoodie"
    (hoodie / "20240707001304000.commit.requested").write_bytes(b"")
    (hoodie / "20240707001304000.inflight").write_bytes(b"")
    stray = base / "30" / "deadbeef-0000-0000-0000-000000000000-0_0-1-1_20240707001304000.parquet"
    stray.write_bytes(b"PAR1")
    state = read(base)
    assert "30/" + stray.name in state.uncommitted_files
    assert all(g.file_id != "deadbeef-0000-0000-0000-000000000000-0" for g in state.file_groups)
