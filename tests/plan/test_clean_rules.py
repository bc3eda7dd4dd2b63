"""Every rule of Hudi's cleaner (../shared/docs/hudi-format.md §1.3–§1.7), case by case."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.declarations.model import CleanPolicy, CleanPolicyName
from runner.plan.clean import clean_scope, earliest_commit_to_retain, plan_clean
from runner.plan.policies import hours_cutoff
from runner.testing.states import StateBuilder, t

NOW = datetime(2024, 1, 1, 1, 0, tzinfo=UTC)
COMMITS = CleanPolicyName.KEEP_LATEST_COMMITS
VERSIONS = CleanPolicyName.KEEP_LATEST_FILE_VERSIONS
HOURS = CleanPolicyName.KEEP_LATEST_BY_HOURS


def commits(n: int, incremental: bool = True) -> CleanPolicy:
    return CleanPolicy(COMMITS, commits_retained=n, incremental=incremental)


def versions(n: int) -> CleanPolicy:
    return CleanPolicy(VERSIONS, file_versions_retained=n)


def plan(policy: CleanPolicy, b: StateBuilder, now: datetime = NOW):
    state = b.state()
    return plan_clean(policy, state, clean_scope(policy, state.metadata, now=now))


def deleted(policy: CleanPolicy, b: StateBuilder, now: datetime = NOW) -> list[str]:
    return [f.path for f in plan(policy, b, now).files_to_delete]


def history(n: int, groups: tuple[str, ...] = ("a",), partition: str = "p") -> StateBuilder:
    """n commits, each writing a new version of every group."""
    b = StateBuilder()
    for i in range(1, n + 1):
        b.commit(i, {partition: list(groups)})
    return b


# §1.3 earliest commit to retain ----------------------------------------------------------------

def test_ectr_needs_more_completed_commits_than_retained():
    assert earliest_commit_to_retain(commits(3), history(3).metadata(), now=NOW) is None
    assert earliest_commit_to_retain(commits(3), history(4).metadata(), now=NOW).time == t(2)


def test_ectr_is_the_nth_newest_completed_commit():
    assert earliest_commit_to_retain(commits(10), history(15).metadata(), now=NOW).time == t(6)


def test_ectr_is_bounded_by_the_earliest_pending_write():
    b = history(4)
    b.pending(5)
    b.commit(6, {"p": ["a"]})
    # 5 completed (1,2,3,4,6), retain 1 → candidate 6, but 5 is pending → last completed before 5
    assert earliest_commit_to_retain(commits(1), b.metadata(), now=NOW).time == t(4)


def test_ectr_is_bounded_by_a_pending_compaction_too():
    b = StateBuilder()
    for i in (1, 3, 4, 5):
        b.commit(i, {"p": ["a"]})
    b.pending_compaction(2, {("p", "a"): 1})  # requested at t(2), before the candidate t(5)
    assert earliest_commit_to_retain(commits(1), b.metadata(), now=NOW).time == t(1)


def test_ectr_is_none_when_nothing_completed_precedes_the_pending_write():
    b = StateBuilder()
    b.pending(1)
    for i in (2, 3, 4):
        b.commit(i, {"p": ["a"]})
    assert earliest_commit_to_retain(commits(1), b.metadata(), now=NOW) is None


def test_keep_latest_file_versions_has_no_ectr():
    assert earliest_commit_to_retain(versions(1), history(5).metadata(), now=NOW) is None


def test_by_hours_ectr_is_first_completed_commit_at_or_after_the_cutoff():
    b = history(5)  # commits at 00:00:01 .. 00:00:05
    now = datetime(2024, 1, 1, 1, 0, 3, tzinfo=UTC)
    policy = CleanPolicy(HOURS, hours_retained=1)  # cutoff 00:00:03
    assert earliest_commit_to_retain(policy, b.metadata(), now=now).time == t(3)
    later = datetime(2024, 1, 1, 2, 0, 0, tzinfo=UTC)
    assert earliest_commit_to_retain(policy, b.metadata(), now=later) is None


def test_by_hours_cutoff_follows_the_table_timezone():
    now = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    assert hours_cutoff(now, 2, "UTC") == "20240101100000000"


# §1.4 partitions to clean ----------------------------------------------------------------------

def incremental_table() -> StateBuilder:
    b = StateBuilder()
    for i, partition in enumerate(["p1", "p2", "p3", "p1", "p2", "p3", "p1"], start=1):
        b.commit(i, {partition: ["g-" + partition]})
    return b


def test_versions_policy_always_lists_everything():
    b = incremental_table()
    b.clean(8, ectr=3)
    assert clean_scope(versions(1), b.metadata(), now=NOW).partitions is None


def test_no_ectr_means_nothing_to_list():
    assert clean_scope(commits(10), history(3).metadata(), now=NOW).partitions == ()


def test_incremental_lists_partitions_written_between_the_two_ectrs():
    b = incremental_table()
    b.clean(8, ectr=2)
    scope = clean_scope(commits(2), b.metadata(), now=NOW)  # new ECTR t(6): writes t(2)..t(5)
    assert scope.partitions == ("p1", "p2", "p3")
    b2 = incremental_table()
    b2.clean(8, ectr=4)
    assert clean_scope(commits(2), b2.metadata(), now=NOW).partitions == ("p1", "p2")  # t(4), t(5)


def test_incremental_includes_replaced_partitions():
    b = incremental_table()
    b.replace(8, {"p9": ["x"]})
    b.commit(9, {"p1": ["g-p1"]})
    b.commit(10, {"p1": ["g-p1"]})
    b.clean(11, ectr=7)
    assert "p9" in clean_scope(commits(2), b.metadata(), now=NOW).partitions


@pytest.mark.parametrize(("setup", "reason"), [
    (lambda b: None, "no earlier clean"),
    (lambda b: b.clean(8, ectr=None), "recorded no earliest commit"),
    (lambda b: b.clean(8, ectr=0), "archived"),
    (lambda b: (b.clean(8, ectr=3, savepointed=[2])), "savepoint"),
    (lambda b: (b.clean(8, ectr=3), b.clean(9, ectr=None, empty=True)), "is empty"),
])
def test_incremental_falls_back_to_a_full_listing(setup, reason):
    b = incremental_table()
    setup(b)
    scope = clean_scope(commits(2), b.metadata(), now=NOW)
    assert scope.partitions is None and reason in scope.reason


def test_incremental_off_lists_everything():
    b = incremental_table()
    b.clean(8, ectr=2)
    assert clean_scope(commits(2, incremental=False), b.metadata(), now=NOW).partitions is None


# §1.5/§1.6 KEEP_LATEST_COMMITS and BY_HOURS ------------------------------------------------------

def test_keeps_latest_and_newest_before_ectr_and_deletes_older():
    b = history(5)  # slices 1..5 of group a; retain 2 → ECTR t(4)
    assert deleted(commits(2), b) == [f"p/{b.name(n, 'a')}" for n in (1, 2)]


def test_slices_at_or_after_ectr_are_kept():
    b = history(6)
    kept_from = 6 - 3 + 1  # ECTR = t(4)
    paths = deleted(commits(3), b)
    assert all(b.name(n, "a") not in " ".join(paths) for n in range(kept_from - 1, 7))


def test_nothing_is_cleaned_until_there_are_more_commits_than_retained():
    assert deleted(commits(5), history(5)) == []


def test_savepointed_slices_are_never_deleted():
    b = history(5)
    b.savepoint(1, {"p": [b.name(1, "a")]})
    assert deleted(commits(2), b) == [f"p/{b.name(2, 'a')}"]


def test_slices_needed_by_a_pending_compaction_are_kept():
    b = history(5)
    b.pending_compaction(6, {("p", "a"): 2})  # op based on slice t(2): t(2) and newer are needed
    assert deleted(commits(1), b) == [f"p/{b.name(1, 'a')}"]


def test_replaced_groups_go_only_when_replaced_before_the_ectr():
    b = history(2, groups=("a", "b"))
    b.replace(3, {"p": ["b"]}, {"p": ["c"]})
    b.commit(4, {"p": ["a"]})
    b.commit(5, {"p": ["a"]})
    before = deleted(commits(1), b)  # ECTR t(5) > t(3): group b goes, whole
    assert {f"p/{b.name(1, 'b')}", f"p/{b.name(2, 'b')}"} <= set(before)
    kept = deleted(commits(3), b)  # ECTR t(3) == replace time: not strictly before, b stays
    assert not any("_" in p and p.split("/")[1].startswith("b_") for p in kept)


def test_replaced_savepointed_slices_survive():
    b = history(2, groups=("a", "b"))
    b.replace(3, {"p": ["b"]})
    b.commit(4, {"p": ["a"]})
    b.savepoint(2, {"p": [b.name(2, "b")]})
    paths = deleted(commits(1), b)
    assert f"p/{b.name(1, 'b')}" in paths and f"p/{b.name(2, 'b')}" not in paths


def test_log_files_go_with_their_slice():
    b = history(3)
    b.delta_commit(4, {"p": [("a", 1)]})  # a log on the oldest slice
    b.commit(5, {"p": ["a"]})
    paths = deleted(commits(1), b)
    assert any(p.startswith("p/.a_") and ".log." in p for p in paths)


def test_uncommitted_files_are_never_candidates():
    b = history(3)
    b.pending(4, files={"p": ["a", "z"]})
    b.commit(5, {"p": ["a"]})
    paths = deleted(versions(1), b)
    assert b.name(4, "a") not in " ".join(paths) and b.name(4, "z") not in " ".join(paths)


def test_partition_with_only_old_replaced_groups_is_deleted():
    b = history(2, groups=("a",), partition="old")
    b.commit(3, {"new": ["n"]})
    b.replace(4, {"old": ["a"]})
    b.commit(5, {"new": ["n"]})
    b.commit(6, {"new": ["n"]})
    step = plan(commits(1), b)
    assert step.partitions_to_delete == ("old",)


def test_partition_is_kept_while_a_replace_at_or_after_ectr_exists():
    b = history(2, groups=("a",), partition="old")
    b.commit(3, {"new": ["n"]})
    b.replace(4, {"old": ["a"]})
    assert plan(commits(1), b).partitions_to_delete == ()  # ECTR t(4): replaced at the ECTR


def test_partition_with_pending_files_is_kept():
    b = history(2, groups=("a",), partition="old")
    b.replace(3, {"old": ["a"]})
    b.commit(4, {"new": ["n"]})
    b.commit(5, {"new": ["n"]})
    b.pending(6, files={"old": ["q"]})
    b.commit(7, {"new": ["n"]})
    assert plan(versions(1), b).partitions_to_delete == ()


def test_by_hours_deletes_versions_older_than_the_window():
    b = history(5)
    now = datetime(2024, 1, 1, 1, 0, 4, tzinfo=UTC)  # cutoff t(4)
    policy = CleanPolicy(HOURS, hours_retained=1)
    assert deleted(policy, b, now) == [f"p/{b.name(n, 'a')}" for n in (1, 2)]


# §1.7 KEEP_LATEST_FILE_VERSIONS ----------------------------------------------------------------

def test_keeps_the_newest_n_versions():
    b = history(5)
    assert deleted(versions(2), b) == [f"p/{b.name(n, 'a')}" for n in (1, 2, 3)]


def test_versions_cleans_from_the_first_commits():
    assert deleted(versions(1), history(2)) == [f"p/{history(2).name(1, 'a')}"]


def test_pending_compaction_slices_count_as_one_kept_version():
    b = history(4)
    b.pending_compaction(5, {("p", "a"): 4})  # protects t(4) and the new slice t(5)
    assert deleted(versions(2), b) == [f"p/{b.name(n, 'a')}" for n in (1, 2)]


def test_versions_policy_deletes_all_replaced_groups_whenever_replaced():
    b = history(2, groups=("a", "b"))
    b.replace(3, {"p": ["b"]})
    paths = deleted(versions(5), b)
    assert paths == sorted(f"p/{b.name(n, 'b')}" for n in (1, 2))


def test_versions_savepointed_old_slice_is_skipped_not_deleted():
    b = history(4)
    b.savepoint(1, {"p": [b.name(1, "a")]})
    assert deleted(versions(2), b) == [f"p/{b.name(2, 'a')}"]


# invariants ------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(
    n_commits=st.integers(1, 8),
    groups=st.integers(1, 3),
    policy=st.sampled_from([commits(1), commits(3), versions(1), versions(2)]),
    saved=st.integers(0, 8),
)
def test_planner_never_deletes_a_latest_slice_or_a_savepoint(n_commits, groups, policy, saved):
    b = StateBuilder()
    names = [chr(ord("a") + i) for i in range(groups)]
    for i in range(1, n_commits + 1):
        b.commit(i, {"p": names[: 1 + (i % groups)]})
    if 1 <= saved <= n_commits:
        b.savepoint(saved, {"p": [b.name(saved, "a")]})
    state = b.state()
    step = plan_clean(policy, state, clean_scope(policy, state.metadata, now=NOW))
    doomed = {f.path for f in step.files_to_delete}
    latest = {f"p/{g.latest.base_file.name}" for g in state.active_groups}
    assert not doomed & latest
    assert not doomed & {f"p/{n}" for n in state.metadata.savepointed_files}
    assert step == plan_clean(policy, state, clean_scope(policy, state.metadata, now=NOW))


@pytest.mark.parametrize("policy", [commits(1), versions(1)], ids=["commits", "versions"])
def test_a_pending_compaction_naming_the_partition_in_another_form_still_protects_its_slices(policy):
    # A compaction plan records the partition as its writer spelled it (NFC `city=Zürich`); a file
    # system that folds names (macOS: HFS+ lists NFD, APFS and case-insensitive volumes find either)
    # lists the folder otherwise. Hudi's file ids are unique across the table, so the protection
    # follows the file id, whatever the partition's spelling.
    import unicodedata

    nfc = unicodedata.normalize("NFC", "city=Zürich")
    nfd = unicodedata.normalize("NFD", nfc)
    b = history(5, partition=nfd)
    b.pending_compaction(6, {(nfc, "a"): 2})  # op based on slice t(2): t(2) and newer are needed
    assert not {f"{nfd}/{b.name(i, 'a')}" for i in (2, 3, 4, 5)} & set(deleted(policy, b))


def test_a_replaced_file_id_recurring_in_another_partition_is_not_taken_for_a_respelling():
    # Hudi's bucket index may give bucket n of every partition the same fixed-suffix file id. A
    # replacecommit naming that id in one partition, whose files are gone, while another partition
    # still lists a group of that id, is no respelled partition: the clean plans as usual.
    b = StateBuilder()
    b.commit(1, {"p=B": ["a"], "p=A": ["b"]})
    b.commit(2, {"p=B": ["a"], "p=A": ["b"]})
    b.replace(3, {"p=A": ["a"]}, {"p=A": ["c"]})
    b.commit(4, {"p=B": ["a"], "p=A": ["c"]})
    policy = versions(1)
    assert set(deleted(policy, b)) >= {f"p=B/{b.name(1, 'a')}", f"p=B/{b.name(2, 'a')}"}
