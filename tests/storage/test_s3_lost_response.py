"""Conditional S3 requests whose answer was lost: boto3 retries, and the retry trips over the first
attempt's own success. The storage must report what happened to the object, not the retry's 412."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from runner.storage.base import AlreadyExists
from runner.storage.guard import PROPERTIES
from runner.storage.lock import LOCK_PATH, TableLock
from runner.storage.s3 import ObjectStorage
from tests.s3 import botocore_hooks

pytestmark = pytest.mark.s3


@contextmanager
def first_answer_lost(storage: ObjectStorage, operation: str) -> Iterator[list[int]]:
    """Make botocore retry the first `operation` request after S3 has carried it out, as it does
    when the connection drops before the answer arrives. Yields the attempts seen."""
    attempts_seen: list[int] = []

    def lose_first_answer(attempts: int, **_: Any) -> int | None:
        attempts_seen.append(attempts)
        return 0 if attempts == 1 else None  # retry at once, once

    with botocore_hooks(storage._client(), {f"needs-retry.s3.{operation}": lose_first_answer}):
        yield attempts_seen


def test_a_create_whose_answer_was_lost_is_reported_as_created(s3: ObjectStorage) -> None:
    with first_answer_lost(s3, "PutObject") as attempts:
        s3.write_new("a/instant.commit", b"ours")
    assert attempts == [1, 2], "the put was not retried: the test does not exercise the lost answer"
    assert s3.read("a/instant.commit") == b"ours"


def test_a_retried_create_over_someone_elses_object_still_fails(s3: ObjectStorage) -> None:
    s3.write_new("a/instant.commit", b"theirs")
    with first_answer_lost(s3, "PutObject"), pytest.raises(AlreadyExists):
        s3.write_new("a/instant.commit", b"ours")
    assert s3.read("a/instant.commit") == b"theirs"


def test_a_compare_and_swap_whose_answer_was_lost_is_reported_as_done(s3: ObjectStorage) -> None:
    s3.write_new("lock", b"v1")
    with first_answer_lost(s3, "PutObject") as attempts:
        assert s3.replace_if("lock", b"v1", b"v2")
    assert attempts == [1, 2]
    assert s3.read("lock") == b"v2"


def test_a_conditional_delete_whose_answer_was_lost_is_reported_as_done(s3: ObjectStorage) -> None:
    s3.write_new("lock", b"v1")
    with first_answer_lost(s3, "DeleteObject") as attempts:
        assert s3.delete_if("lock", b"v1")
    assert attempts[:1] == [1] and len(attempts) >= 2
    assert s3.stat("lock") is None


def test_a_lock_taken_through_a_lost_answer_is_held_and_released(s3: ObjectStorage) -> None:
    """Before the fix the retry's 412 made the runner treat its own fresh lock as a rival's: the run
    failed and the table stayed locked until the lock went stale."""
    s3.write_new(PROPERTIES, b"hoodie.table.name=t\n")
    with first_answer_lost(s3, "PutObject"):
        lock = TableLock(s3, owner="nightly", run_id="run-1")
        lock.acquire()
    try:
        assert b"run-1" in s3.read(LOCK_PATH)
    finally:
        assert lock.release()
    assert s3.stat(LOCK_PATH) is None
