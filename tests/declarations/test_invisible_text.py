"""Characters a reader cannot see in a declaration's text: bidi controls (Trojan Source: the
`owner` shown is not the owner stored), zero-width spaces, and control characters. Each is one
problem naming the file, line, field, which character it is and where, with the value shown escaped."""

from __future__ import annotations

import pytest

from runner.declarations.loader import load_project
from runner.errors import DeclarationError

from .conftest import WriteProject


def _problems(files: dict[str, str], write_project: WriteProject, project: str = "name: test\n") -> list[str]:
    root = write_project(files, project=project)
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    return [str(problem) for problem in caught.value.problems]


def test_a_bidi_override_in_the_owner_is_named_and_located(write_project: WriteProject) -> None:
    # "sales\u202egnp.exe" shows as "salesexe.png": the owner read is not the owner --select matches.
    text = 'name: orders\npath: w/orders\nowner: "sales\\u202egnp.exe"\n'
    assert _problems({"tables/orders.yml": text}, write_project) == [
        'tables/orders.yml:3:1: owner: expected text without invisible or control characters, found U+202E '
        'RIGHT-TO-LEFT OVERRIDE (a bidirectional control) at character 6 of "sales\\u202egnp.exe"; remove it']


def test_a_bidi_isolate_in_the_path_is_named(write_project: WriteProject) -> None:
    text = 'name: orders\npath: "w/\\u2066orders"\n'
    assert _problems({"tables/orders.yml": text}, write_project) == [
        'tables/orders.yml:2:1: path: expected text without invisible or control characters, found U+2066 '
        'LEFT-TO-RIGHT ISOLATE (a bidirectional control) at character 3 of "w/\\u2066orders"; remove it']


@pytest.mark.parametrize(("field", "yaml", "found"), [
    ("tags[0]", 'tags: ["gold\\u200b"]', "U+200B ZERO WIDTH SPACE (invisible) at character 5"),
    ("description", 'description: "a\\u202ab"', "U+202A LEFT-TO-RIGHT EMBEDDING (a bidirectional control) at "
                                                "character 2"),
    ("owner", 'owner: "crm\\x1b[31m"', "U+001B ESC (a control character) at character 4"),
    ("owner", 'owner: "crm\\tteam"', "U+0009 a tab (a control character) at character 4"),
    ("owner", 'owner: "crm\\u2028team"', "U+2028 LINE SEPARATOR (invisible) at character 4"),
])
def test_other_invisible_and_control_characters_are_named(write_project: WriteProject, field: str, yaml: str,
                                                          found: str) -> None:
    problems = _problems({"tables/orders.yml": f"name: orders\npath: w/orders\n{yaml}\n"}, write_project)
    assert len(problems) == 1
    assert f": {field}: expected text without invisible or control characters, found {found}" in problems[0]
    assert problems[0].startswith("tables/orders.yml:3:")
    assert all(ord(c) < 0x7f and (c.isprintable()) for c in problems[0]), "the message shows the value escaped"


def test_a_description_may_hold_lines_and_tabs(write_project: WriteProject) -> None:
    root = write_project({"tables/orders.yml": "name: orders\npath: w/orders\ndescription: |\n  one\n  \ttwo\n"})
    assert load_project(root).tables[0].description == "one\n\ttwo\n"


def test_text_outside_ascii_that_can_be_seen_is_accepted(write_project: WriteProject) -> None:
    root = write_project({"tables/orders.yml": "name: orders\npath: w/commandes_été\nowner: équipe ventes\n"
                                               "tags: [données, 販売]\n"})
    table = load_project(root).tables[0]
    assert (table.owner, table.tags) == ("équipe ventes", ("données", "販売"))


def test_project_defaults_are_checked_too(write_project: WriteProject) -> None:
    project = 'name: "lake\\u202eteam"\n'
    problems = _problems({"tables/orders.yml": "name: orders\npath: w/orders\n"}, write_project, project)
    assert problems == [
        'project.yml:1:1: name: expected text without invisible or control characters, found U+202E '
        'RIGHT-TO-LEFT OVERRIDE (a bidirectional control) at character 5 of "lake\\u202eteam"; remove it']
