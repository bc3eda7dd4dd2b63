from __future__ import annotations

from collections.abc import Iterator

import pytest

from runner.sizing import CommitSize, average_record_size

LIMIT = 100


def _commit(total_bytes: int, records: int, action: str = "commit") -> CommitSize:
    return CommitSize(action=action, total_bytes_written=total_bytes, total_records_written=records)


def test_newest_commit_above_the_threshold_wins() -> None:
    commits = [_commit(50, 1), _commit(1_000, 10), _commit(10_000, 1)]

    assert average_record_size(commits, small_file_limit=LIMIT) == 100


def test_result_is_rounded_up() -> None:
    assert average_record_size([_commit(1_001, 1_000)], small_file_limit=LIMIT) == 2


def test_bytes_must_exceed_the_threshold_strictly() -> None:
    assert average_record_size([_commit(LIMIT, 1)], small_file_limit=LIMIT) == 1024
    assert average_record_size([_commit(LIMIT + 1, 1)], small_file_limit=LIMIT) == LIMIT + 1


@pytest.mark.parametrize("action", ["replacecommit", "deltacommit", "clean", "rollback"])
def test_only_commit_actions_count(action: str) -> None:
    commits = [_commit(10_000, 1, action=action), _commit(2_000, 10)]

    assert average_record_size(commits, small_file_limit=LIMIT) == 200


def test_commit_without_records_is_skipped() -> None:
    commits = [_commit(10_000, 0), _commit(3_000, 10)]

    assert average_record_size(commits, small_file_limit=LIMIT) == 300


def test_default_when_nothing_qualifies() -> None:
    assert average_record_size([], small_file_limit=LIMIT) == 1024
    assert average_record_size([_commit(10, 1)], small_file_limit=LIMIT, default=512) == 512


def test_threshold_scales_the_small_file_limit() -> None:
    commits = [_commit(60, 3)]

    assert average_record_size(commits, small_file_limit=LIMIT) == 1024
    assert average_record_size(commits, small_file_limit=LIMIT, threshold=0.5) == 20


def test_threshold_product_is_truncated_like_java() -> None:
    # 0.5 × 101 = 50.5 becomes 50, so 51 bytes qualify and 50 do not.
    assert average_record_size([_commit(51, 1)], small_file_limit=101, threshold=0.5) == 51
    assert average_record_size([_commit(50, 1)], small_file_limit=101, threshold=0.5) == 1024


def test_disabled_small_file_limit_lets_any_written_commit_qualify() -> None:
    assert average_record_size([_commit(7, 2)], small_file_limit=0) == 4


def test_stops_reading_at_the_first_qualifying_commit() -> None:
    def newest_first() -> Iterator[CommitSize]:
        yield _commit(500, 5)
        raise AssertionError("read past the qualifying commit")

    assert average_record_size(newest_first(), small_file_limit=LIMIT) == 100


@pytest.mark.parametrize(
    ("default", "threshold", "message"),
    [(0, 1.0, "default must be a positive"), (1024, -0.1, "threshold must be >= 0")],
)
def test_invalid_arguments_raise_value_error(default: int, threshold: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        average_record_size([], small_file_limit=LIMIT, default=default, threshold=threshold)
