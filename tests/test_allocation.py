"""`bulk_allocation` pauses the cyclic collector for a block and always puts it back as it was."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from dataclasses import FrozenInstanceError, dataclass, field

import pytest

from runner.allocation import bulk_allocation, collecting, quick_init


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


@quick_init
@dataclass(frozen=True, slots=True)
class _Value:
    name: str
    size: int = -1
    note: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class _Plain:
    name: str
    size: int = -1
    note: str = field(default="", compare=False)


def test_quick_init_makes_the_same_frozen_values_as_the_dataclass_init() -> None:
    for args in (("a",), ("a", 3), ("a", 3, "n")):
        quick, plain = _Value(*args), _Plain(*args)
        assert (quick.name, quick.size, quick.note) == (plain.name, plain.size, plain.note)
        assert repr(quick) == repr(plain).replace("_Plain", "_Value")
    assert _Value("a", 3, "x") == _Value("a", 3, "y") and hash(_Value("a", 3)) == hash(_Value("a", 3))
    assert _Value(size=2, name="b") == _Value("b", 2)
    with pytest.raises(FrozenInstanceError):
        _Value("a").size = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        _Value()  # type: ignore[call-arg]


def test_quick_init_refuses_what_it_would_get_wrong() -> None:
    @dataclass(frozen=True, slots=True)
    class WithFactory:
        items: list[int] = field(default_factory=list)

    @dataclass(slots=True)
    class NotFrozen:
        name: str

    @dataclass(frozen=True, slots=True)
    class Checked:
        name: str

        def __post_init__(self) -> None:
            pass

    for cls in (WithFactory, NotFrozen, Checked):
        with pytest.raises(TypeError):
            quick_init(cls)


def test_collecting_turns_the_collector_on_inside_a_bulk_block_and_off_again() -> None:
    with bulk_allocation():
        with collecting():
            assert gc.isenabled()
        assert not gc.isenabled()
        with pytest.raises(ValueError), collecting():
            raise ValueError("boom")
        assert not gc.isenabled()
    assert gc.isenabled()
    with collecting():  # outside any block it changes nothing
        assert gc.isenabled()
    assert gc.isenabled()


def test_a_collecting_block_that_outlives_the_pausing_block_of_another_thread_leaves_it_running() -> None:
    # `runner apply --threads`: table A's apply (a bulk block) ends while table B's rewrite
    # (`collecting` inside B's own bulk block) is still running; when B is done too, the collector
    # must run again, and it must stay paused for B's own block in between.
    a_open, b_collecting, a_closed, b_done = (threading.Event() for _ in range(4))
    seen: list[bool] = []

    def table_a() -> None:
        with bulk_allocation():
            a_open.set()
            b_collecting.wait()
        a_closed.set()

    def table_b() -> None:
        a_open.wait()
        with bulk_allocation():
            with collecting():
                b_collecting.set()
                a_closed.wait()
                seen.append(gc.isenabled())
            seen.append(gc.isenabled())
        b_done.set()

    threads = [threading.Thread(target=table_a), threading.Thread(target=table_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [True, False] and gc.isenabled()


def test_blocks_of_two_threads_keep_it_paused_until_both_close() -> None:
    first_open, second_open, first_closed = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with bulk_allocation():
            first_open.set()
            second_open.wait()
        first_closed.set()

    def second() -> None:
        first_open.wait()
        with bulk_allocation():
            second_open.set()
            first_closed.wait()
            seen.append(gc.isenabled())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [False] and gc.isenabled()
