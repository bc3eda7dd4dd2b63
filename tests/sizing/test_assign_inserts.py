from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.sizing import InsertBucket, assign_inserts

MB = 1_000_000


def _assign(
    files: list[tuple[str, int]],
    inserts: int,
    *,
    max_file_size: int = 120 * MB,
    small_file_limit: int = 100 * MB,
    insert_split_size: int = 120_000,
    avg_record_size: int = 1000,
    auto_split: bool = False,
) -> list[InsertBucket]:
    """The seed article's settings unless a test overrides them."""
    return assign_inserts(
        files,
        inserts,
        max_file_size=max_file_size,
        small_file_limit=small_file_limit,
        insert_split_size=insert_split_size,
        avg_record_size=avg_record_size,
        auto_split=auto_split,
    )


def _records(buckets: list[InsertBucket]) -> list[tuple[str | None, int]]:
    return [(b.file_id, b.records) for b in buckets]


def test_worked_example_from_the_file_sizing_article() -> None:
    sizes_mb = {"File_1": 40, "File_2": 80, "File_3": 90, "File_4": 130, "File_5": 105}
    files = [(file_id, size * MB) for file_id, size in sizes_mb.items()]

    buckets = _assign(files, 450_000)

    assert _records(buckets) == [
        ("File_1", 80_000),
        ("File_2", 40_000),
        ("File_3", 30_000),
        (None, 120_000),
        (None, 120_000),
        (None, 60_000),
    ]


def test_small_files_are_filled_in_view_order_not_by_size() -> None:
    buckets = _assign([("big", 90 * MB), ("small", 40 * MB)], 35_000)

    assert _records(buckets) == [("big", 30_000), ("small", 5_000)]


def test_small_file_without_room_for_one_record_gets_no_bucket() -> None:
    files = [("almost_full", 120 * MB - 999), ("f2", 100 * MB)]

    buckets = _assign(files, 10_000, small_file_limit=120 * MB)

    assert _records(buckets) == [("f2", 10_000)]


@pytest.mark.parametrize("limit", [0, -1])
def test_small_file_limit_zero_or_less_disables_padding(limit: int) -> None:
    buckets = _assign([("f1", 1 * MB)], 130_000, small_file_limit=limit)

    assert _records(buckets) == [(None, 120_000), (None, 10_000)]


def test_files_at_or_above_the_limit_are_not_small() -> None:
    buckets = _assign([("at_limit", 100 * MB), ("f2", 130 * MB)], 1_000)

    assert _records(buckets) == [(None, 1_000)]


def test_few_inserts_fit_in_the_first_small_file() -> None:
    buckets = _assign([("f1", 40 * MB), ("f2", 50 * MB)], 10_000)

    assert _records(buckets) == [("f1", 10_000)]


def test_file_above_max_gets_nothing_even_under_a_larger_limit() -> None:
    buckets = _assign([("f1", 125 * MB)], 10, small_file_limit=130 * MB)

    assert _records(buckets) == [(None, 10)]


def test_no_inserts_gives_no_buckets() -> None:
    assert _assign([("f1", 40 * MB)], 0) == []


def test_remainder_that_divides_evenly_gives_no_partial_bucket() -> None:
    assert _records(_assign([], 240_000)) == [(None, 120_000), (None, 120_000)]


def test_auto_split_sizes_new_groups_from_max_file_size() -> None:
    buckets = _assign([], 250_000, insert_split_size=500_000, auto_split=True)

    assert _records(buckets) == [(None, 120_000), (None, 120_000), (None, 10_000)]


def test_auto_split_rounds_down_like_hudi_0_14() -> None:
    # 1000 / 300 = 3.33: Hudi 0.14 puts 3 records per group, Hudi 1.x would put 4.
    buckets = _assign([], 7, max_file_size=1000, small_file_limit=0, avg_record_size=300, auto_split=True)

    assert _records(buckets) == [(None, 3), (None, 3), (None, 1)]


def test_auto_split_puts_at_least_one_record_per_group() -> None:
    buckets = _assign([], 2, max_file_size=1000, small_file_limit=0, avg_record_size=5000, auto_split=True)

    assert _records(buckets) == [(None, 1), (None, 1)]


def test_buckets_are_frozen() -> None:
    bucket = InsertBucket("f1", 1)

    with pytest.raises(AttributeError):
        bucket.records = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("files", "inserts", "overrides", "message"),
    [
        ([], -1, {}, "inserts must be >= 0, found -1"),
        ([], 1, {"max_file_size": 0}, "max_file_size must be a positive"),
        ([], 1, {"insert_split_size": 0}, "insert_split_size must be a positive"),
        ([], 1, {"avg_record_size": -5}, "avg_record_size must be a positive"),
        ([("f1", -1)], 1, {}, "size of file 'f1' must be >= 0, found -1"),
        ([("f1", 1), ("f1", 2)], 1, {}, "file id 'f1' is listed twice"),
    ],
)
def test_invalid_arguments_raise_value_error(
    files: list[tuple[str, int]], inserts: int, overrides: dict[str, int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _assign(files, inserts, **overrides)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Scenario:
    base_files: list[tuple[str, int]]
    inserts: int
    max_file_size: int
    small_file_limit: int
    insert_split_size: int
    avg_record_size: int
    auto_split: bool

    def assign(self) -> list[InsertBucket]:
        return _assign(
            self.base_files,
            self.inserts,
            max_file_size=self.max_file_size,
            small_file_limit=self.small_file_limit,
            insert_split_size=self.insert_split_size,
            avg_record_size=self.avg_record_size,
            auto_split=self.auto_split,
        )

    @property
    def per_group(self) -> int:
        return self.max_file_size // self.avg_record_size if self.auto_split else self.insert_split_size

    def is_small(self, size: int) -> bool:
        return self.small_file_limit > 0 and size < self.small_file_limit


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    # At least 100 records per new group keeps the bucket lists short.
    avg = draw(st.integers(1, 5_000))
    max_file_size = avg * draw(st.integers(100, 10_000)) + draw(st.integers(0, avg - 1))
    sizes = draw(st.lists(st.integers(0, 2 * max_file_size), max_size=8))
    return Scenario(
        base_files=[(f"fg-{i}", size) for i, size in enumerate(sizes)],
        inserts=draw(st.integers(0, 200_000)),
        max_file_size=max_file_size,
        small_file_limit=draw(st.integers(-1, 2 * max_file_size)),
        insert_split_size=draw(st.integers(100, 200_000)),
        avg_record_size=avg,
        auto_split=draw(st.booleans()),
    )


@given(scenarios())
def test_records_add_up_to_the_inserts(s: Scenario) -> None:
    buckets = s.assign()

    assert sum(b.records for b in buckets) == s.inserts
    assert all(b.records > 0 for b in buckets)


@given(scenarios())
def test_small_files_are_padded_in_order_and_never_beyond_max(s: Scenario) -> None:
    sizes = dict(s.base_files)
    order = [file_id for file_id, _ in s.base_files]

    padded = [(b.file_id, b.records) for b in s.assign() if b.file_id is not None]

    assert all(s.is_small(sizes[file_id]) for file_id, _ in padded)
    assert all(sizes[file_id] + records * s.avg_record_size <= s.max_file_size for file_id, records in padded)
    positions = [order.index(file_id) for file_id, _ in padded]
    assert positions == sorted(set(positions))


@given(scenarios())
def test_new_groups_are_full_except_the_last_and_come_after_padding(s: Scenario) -> None:
    buckets = s.assign()
    new = [b.records for b in buckets if b.file_id is None]

    assert all(b.file_id is None for b in buckets[len(buckets) - len(new) :])
    if new:
        assert new[:-1] == [s.per_group] * (len(new) - 1)
        assert 0 < new[-1] <= s.per_group


@given(scenarios())
def test_new_groups_open_only_once_every_small_file_is_full(s: Scenario) -> None:
    buckets = s.assign()
    if all(b.file_id is not None for b in buckets):
        return
    taken = {b.file_id: b.records for b in buckets}
    for file_id, size in s.base_files:
        if s.is_small(size):
            assert s.max_file_size - size - taken.get(file_id, 0) * s.avg_record_size < s.avg_record_size


@given(scenarios())
def test_assignment_is_deterministic(s: Scenario) -> None:
    assert s.assign() == s.assign()
