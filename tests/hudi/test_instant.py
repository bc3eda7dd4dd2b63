"""Instant and file names parse and format back exactly; orderings follow Hudi's rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.errors import TimelineError
from runner.hudi.files import BaseFile, LogFile, is_data_file_name
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.timeline import Timeline

NAMES = [
    ("20240418173550988.commit", "20240418173550988", Action.COMMIT, State.COMPLETED, None),
    ("20240418173550988.inflight", "20240418173550988", Action.COMMIT, State.INFLIGHT, None),
    ("20240418173550988.commit.requested", "20240418173550988", Action.COMMIT, State.REQUESTED, None),
    ("20260307135709297.clustering.requested", "20260307135709297", Action.CLUSTERING, State.REQUESTED, None),
    ("20260307135709297_20260307135709818.replacecommit", "20260307135709297", Action.REPLACE_COMMIT,
     State.COMPLETED, "20260307135709818"),
    ("20251220210129235.compaction.inflight", "20251220210129235", Action.COMPACTION, State.INFLIGHT, None),
    ("20250126040936578.rollback.requested", "20250126040936578", Action.ROLLBACK, State.REQUESTED, None),
    ("20240101000000.savepoint", "20240101000000", Action.SAVEPOINT, State.COMPLETED, None),
    ("20240101000000123.savepoint.inflight", "20240101000000123", Action.SAVEPOINT, State.INFLIGHT, None),
    ("20240101000000123.logcompaction.requested", "20240101000000123", Action.LOG_COMPACTION,
     State.REQUESTED, None),
    ("20240101000000123.indexing.inflight", "20240101000000123", Action.INDEXING, State.INFLIGHT, None),
    ("20240101000000123.schemacommit", "20240101000000123", Action.SCHEMA_COMMIT, State.COMPLETED, None),
    ("20240101000000123_20240101000001000.clean", "20240101000000123", Action.CLEAN, State.COMPLETED,
     "20240101000001000"),
    ("20240101000000123.restore.requested", "20240101000000123", Action.RESTORE, State.REQUESTED, None),
]


@pytest.mark.parametrize(("name", "time", "action", "state", "completion"), NAMES)
def test_parse_and_format_are_inverse(name, time, action, state, completion):
    instant = Instant.parse(name)
    assert (instant.time, instant.action, instant.state, instant.completion_time) == (
        time, action, state, completion)
    assert instant.file_name == name


@pytest.mark.parametrize("name", [
    "2024.commit", "20240101000000123.unknownaction", "20240101000000123.commit.inflight",
    "20240101000000123_20240101000001000.commit.requested", "abc.commit", "20240101000000123",
])
def test_malformed_instant_names_are_refused_with_the_name(name):
    with pytest.raises(TimelineError, match=name.replace(".", r"\.")):
        Instant.parse(name)


times = st.from_regex(r"20[0-9]{12}([0-9]{3})?", fullmatch=True)


@given(times, st.sampled_from(list(Action)), st.sampled_from(list(State)), st.booleans(), times)
def test_round_trip_property(time, action, state, with_completion, completion):
    done = InstantTime(completion) if with_completion and state is State.COMPLETED else None
    instant = Instant(InstantTime(time), action, state, done)
    assert Instant.parse(instant.file_name) == instant


def test_fourteen_digit_times_order_as_if_ending_in_999():
    assert InstantTime("20240101000000500") < InstantTime("20240101000000")
    assert InstantTime("20240101000000") < InstantTime("20240101000001000")
    assert InstantTime("20240101000000") <= "20240101000000999"


def test_completing_a_pending_action_gives_its_completed_family():
    compaction = Instant.parse("20240101000000123.compaction.inflight")
    assert compaction.with_state(State.COMPLETED).file_name == "20240101000000123.commit"
    done = InstantTime("20240101000000999")
    clustering = Instant.parse("20240101000000123.clustering.inflight")
    assert clustering.with_state(State.COMPLETED, done).file_name == (
        "20240101000000123_20240101000000999.replacecommit")


def test_timeline_folds_states_and_keeps_pending_action_names():
    timeline = Timeline.from_file_names([
        ".20240101000000100.commit.crc", "hoodie.properties", "archived",
        "20240101000000100.commit.requested", "20240101000000100.inflight", "20240101000000100.commit",
        "20240101000000200.compaction.requested", "20240101000000200.compaction.inflight",
        "20240101000000100.savepoint",
    ], folder=".hoodie")
    assert [(i.time, i.action, i.state) for i in timeline.instants] == [
        ("20240101000000100", Action.COMMIT, State.COMPLETED),
        ("20240101000000100", Action.SAVEPOINT, State.COMPLETED),
        ("20240101000000200", Action.COMPACTION, State.INFLIGHT),
    ]
    assert timeline.ignored == (".20240101000000100.commit.crc", "archived", "hoodie.properties")
    assert len(timeline.files) == 6
    assert timeline.earliest_write == "20240101000000100"


def test_timeline_refuses_an_unknown_instant_like_file():
    with pytest.raises(TimelineError, match="does not understand"):
        Timeline.from_file_names(["20240101000000100.frobnicate"], folder=".hoodie/timeline")


@pytest.mark.parametrize("name", [
    "a079bdb3-731c-4894-b855-abfcd6921007-0_0-203-274_20240418173551906.parquet",
    "6e1d5cc4-1f3a-4a5f-9a0b-8c3b1b2d0e11-0_0-1112-3190_20251220210129235.lance",
    "f1-0_1-0-1_20240101000000.orc",
    # Hudi 0.14/0.15 metadata tables: compaction base files at `<deltacommit>001`
    "files-0000-0_0-44-70_20240101000000000001.hfile",
])
def test_base_file_names_round_trip(name):
    parsed = BaseFile.parse(name)
    assert parsed is not None and parsed.name == name and is_data_file_name(name)


@pytest.mark.parametrize("name", [
    ".8aa68f7e-7f8b-4d6e-9d7c-2a1b3c4d5e6f-0_20251220210130911.log.1_0-1139-3316",
    ".abc-0_20240101000000123.log.12_1-2-3.cdc",
    ".abc-0_20240101000000.log.1",
    # ... and the log versions appended over them, or over an initialization at `<instant>010`
    ".files-0000-0_20240101000000000001.log.3_0-1-0",
    ".files-0000-0_20240101000000000010.log.1_0-0-0",
])
def test_log_file_names_round_trip(name):
    parsed = LogFile.parse(name)
    assert parsed is not None and parsed.name == name and is_data_file_name(name)


@pytest.mark.parametrize("name", [
    ".hoodie_partition_metadata", "part-0000.parquet", ".abc_20240101000000.archive.1_1-0-1",
    "abc_0-1-2_20240101000000123.parquet.crc", "notes.txt",
])
def test_other_files_are_not_data_files(name):
    assert not is_data_file_name(name)


@pytest.mark.parametrize("name", [
    "f1-0_1-0-1_20240101000000.orc", "abc_0-1-2_2024010100000.parquet", "abc_0-1-2_20240101000000123.avro",
    ".abc-0_20240101000000123.log.12_1-2-3.cdc", ".abc_20240101000000.archive.1_1-0-1", ".abc-0_2024.log.1",
    "x/abc_0-1-2_20240101000000123.parquet", "", ".hoodie_partition_metadata.parquet",
])
def test_the_data_file_check_agrees_with_the_parsers(name):
    # `is_data_file_name` skips building the parsed object; it must accept exactly what they accept.
    assert is_data_file_name(name) == (BaseFile.parse(name) is not None or LogFile.parse(name) is not None)
