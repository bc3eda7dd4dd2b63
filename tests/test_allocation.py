"""`bulk_allocation` pauses the cyclic collector for a block and always puts it back as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from runner.allocation import bulk_allocation


@pytest.fixture(autouse=True)
def collector_running() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_the_collector_is_paused_inside_and_running_after() -> None:
    with bulk_allocation():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_nested_block_does_not_resume_it_early() -> None:
    with bulk_allocation():
        with bulk_allocation():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_in_the_block_still_resumes_it() -> None:
    with pytest.raises(ValueError), bulk_allocation():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_paused_by_someone_else_stays_paused() -> None:
    gc.disable()
    with bulk_allocation():
        pass
    assert not gc.isenabled()


def test_cycles_made_inside_are_collected_afterwards() -> None:
    class Node:
        other: object = None

    with bulk_allocation():
        a, b = Node(), Node()
        a.other, b.other = b, a
        del a, b
    assert gc.collect() >= 2
