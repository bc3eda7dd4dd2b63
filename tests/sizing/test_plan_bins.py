from __future__ import annotations

from itertools import combinations
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.sizing import Bin, plan_bins

MB = 1_000_000
MAX = 120 * MB
LIMIT = 100 * MB


def test_first_fit_decreasing_pairs_small_files_and_drops_a_lone_leftover() -> None:
    sizes_mb = {"a": 40, "b": 80, "c": 90, "d": 130, "e": 105, "f": 30, "g": 10}
    files = [(file_id, size * MB) for file_id, size in sizes_mb.items()]

    bins = plan_bins(files, max_file_size=MAX, small_file_limit=LIMIT)

    # 90 opens a bin, 80 opens a second, 40 joins 80, 30 joins 90, 10 fits nowhere and stays alone.
    assert bins == [Bin(("c", "f"), 120 * MB), Bin(("b", "a"), 120 * MB)]


def test_many_tiny_files_share_one_bin() -> None:
    files = [(f"fg-{i}", 1 * MB) for i in range(5)]

    assert plan_bins(files, max_file_size=MAX, small_file_limit=LIMIT) == [
        Bin(("fg-0", "fg-1", "fg-2", "fg-3", "fg-4"), 5 * MB)
    ]


def test_files_that_cannot_pair_give_no_bins() -> None:
    files = [("a", 70 * MB), ("b", 70 * MB)]

    assert plan_bins(files, max_file_size=MAX, small_file_limit=LIMIT) == []


def test_files_at_or_above_the_limit_are_not_candidates() -> None:
    files = [("at_limit", LIMIT), ("a", 10 * MB), ("b", 10 * MB)]

    assert plan_bins(files, max_file_size=MAX, small_file_limit=LIMIT) == [Bin(("a", "b"), 20 * MB)]


@pytest.mark.parametrize("limit", [0, -1])
def test_limit_zero_or_less_disables_small_file_handling(limit: int) -> None:
    assert plan_bins([("a", 1), ("b", 1)], max_file_size=MAX, small_file_limit=limit) == []


def test_candidate_larger_than_max_stays_alone() -> None:
    files = [("big", 125 * MB), ("a", 10 * MB), ("b", 10 * MB)]

    assert plan_bins(files, max_file_size=MAX, small_file_limit=130 * MB) == [Bin(("a", "b"), 20 * MB)]


def test_equal_sizes_are_ordered_by_file_id_whatever_the_input_order() -> None:
    files = [("z", 5), ("m", 5), ("a", 5)]

    assert plan_bins(files, max_file_size=100, small_file_limit=50) == [Bin(("a", "m", "z"), 15)]
    assert plan_bins(files[::-1], max_file_size=100, small_file_limit=50) == [Bin(("a", "m", "z"), 15)]


@pytest.mark.parametrize(
    ("files", "max_file_size", "message"),
    [
        ([], 0, "max_file_size must be a positive"),
        ([("a", -1)], MAX, "size of file 'a' must be >= 0"),
        ([("a", 1), ("a", 1)], MAX, "file id 'a' is listed twice"),
    ],
)
def test_invalid_arguments_raise_value_error(
    files: list[tuple[str, int]], max_file_size: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        plan_bins(files, max_file_size=max_file_size, small_file_limit=LIMIT)


Case = tuple[list[tuple[str, int]], int, int]


def _named(sizes: list[int]) -> list[tuple[str, int]]:
    return [(f"fg-{i:02}", size) for i, size in enumerate(sizes)]


# (files, max_file_size, small_file_limit); a limit above the max is allowed on purpose.
partitions = st.tuples(
    st.lists(st.integers(0, 150), max_size=25).map(_named),
    st.integers(1, 120),
    st.integers(-1, 130),
)


def _candidates(files: list[tuple[str, int]], limit: int) -> dict[str, int]:
    return {file_id: size for file_id, size in files if limit > 0 and size < limit}


@given(partitions)
def test_bins_fit_and_use_each_small_file_at_most_once(case: Case) -> None:
    files, max_file_size, limit = case
    candidates = _candidates(files, limit)

    bins = plan_bins(files, max_file_size=max_file_size, small_file_limit=limit)

    used = [file_id for b in bins for file_id in b.file_ids]
    assert len(used) == len(set(used))
    assert set(used) <= set(candidates)
    for b in bins:
        assert len(b.file_ids) >= 2
        assert b.total_bytes == sum(candidates[file_id] for file_id in b.file_ids)
        assert b.total_bytes <= max_file_size


@given(partitions)
def test_no_two_groups_could_be_merged(case: Case) -> None:
    files, max_file_size, limit = case
    candidates = _candidates(files, limit)
    bins = plan_bins(files, max_file_size=max_file_size, small_file_limit=limit)
    binned = {file_id for b in bins for file_id in b.file_ids}

    left_alone = [size for file_id, size in candidates.items() if file_id not in binned]
    groups = [b.total_bytes for b in bins] + left_alone

    assert all(x + y > max_file_size for x, y in combinations(groups, 2))
    assert sum(1 for total in groups if 2 * total <= max_file_size) <= 1


@given(partitions, st.randoms(use_true_random=False))
def test_bins_depend_only_on_the_set_of_files(case: Case, rnd: Random) -> None:
    files, max_file_size, limit = case
    shuffled = list(files)
    rnd.shuffle(shuffled)

    first = plan_bins(files, max_file_size=max_file_size, small_file_limit=limit)

    assert first == plan_bins(files, max_file_size=max_file_size, small_file_limit=limit)
    assert first == plan_bins(shuffled, max_file_size=max_file_size, small_file_limit=limit)
