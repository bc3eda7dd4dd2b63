"""Declarations as large as the loader accepts still validate in well under a second, with the
same problems a short file would get."""

from __future__ import annotations

import time

import pytest

from runner.declarations.loader import load_project
from runner.errors import DeclarationError

from .conftest import WriteProject

# Half the loader's node limit: comparing every pair of 10,000 items took 3 s, one pass 0.01 s.
_MANY = 10_000


@pytest.mark.parametrize(("odd", "found"), [("~", "an empty value"), ("[x]", "a list"), ("7", "7")])
def test_a_long_list_with_one_item_of_another_type_is_judged_quickly(
        write_project: WriteProject, odd: str, found: str) -> None:
    # jsonschema's uniqueItems sorts the items to compare neighbours; a list it cannot sort (None,
    # a list or a number among strings) fell back to comparing every pair: 13 s for
    # one file of 20,000 tags.
    tags = ", ".join(f"t{i}" for i in range(_MANY))
    root = write_project({"tables/t.yml": f"name: t\npath: w/t\ntags: [{tags}, {odd}]\n"})
    started = time.monotonic()
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    assert time.monotonic() - started < 2
    (problem,) = caught.value.problems
    assert (problem.line, problem.field) == (3, f"tags[{_MANY}]")
    assert problem.message == f"expected a string, got {found}"


def test_a_repeat_in_a_long_list_that_cannot_be_sorted_is_named_quickly(write_project: WriteProject) -> None:
    tags = ", ".join(f"t{i}" for i in range(_MANY))
    root = write_project({"tables/t.yml": f"name: t\npath: w/t\ntags: [{tags}, 1.5, t{_MANY - 1}]\n"})
    started = time.monotonic()
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    assert time.monotonic() - started < 2
    messages = [(p.field, p.message) for p in caught.value.problems]
    assert ("tags", f'must not repeat items, got "t{_MANY - 1}" more than once') in messages


def test_a_long_record_key_with_an_empty_item_is_judged_quickly(write_project: WriteProject) -> None:
    keys = ", ".join(f"k{i}" for i in range(_MANY))
    root = write_project({"tables/t.yml": f"name: t\npath: w/t\ntable:\n  record_key: [{keys}, ~]\n"})
    started = time.monotonic()
    with pytest.raises(DeclarationError):
        load_project(root)
    assert time.monotonic() - started < 2
