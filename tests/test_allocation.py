"""`bulk_allocation` pauses the cyclic collector for a block and always puts it back as it was."""

from __future__ import annotations

import gc
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
        quick, plain = _Value(*args), _Plain(*args)  # type: ignore[arg-type]
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
