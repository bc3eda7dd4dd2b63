from __future__ import annotations

import time

import pytest

from runner.declarations.loader import load_project
from runner.declarations.yaml_io import Mark, Trap, TrapKind, field_name, load_yaml
from runner.errors import DeclarationError, Problem

from .conftest import WriteProject


def load(text: str) -> object:
    loaded = load_yaml(text, "f.yml")
    assert loaded.problems == ()
    return loaded.data


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("10", 10),
        ("-3", -3),
        ("0", 0),
        ("1.5", 1.5),
        ("true", True),
        ("False", False),
        ("~", None),
        ("null", None),
        ("", None),
        ('"010"', "010"),
        ("'yes'", "yes"),
        ("1e3", "1e3"),  # YAML 1.1 reads this as a string too: no disagreement, no trap
        ("0:30", "0:30"),
        ("hello world", "hello world"),
        ("[a, 1]", ["a", 1]),
    ],
)
def test_plain_scalars_follow_the_yaml_1_2_core_schema(text: str, value: object) -> None:
    assert load(f"key: {text}\n") == {"key": value}


@pytest.mark.parametrize(
    ("text", "kind", "explanation", "fix"),
    [
        ("010", TrapKind.OCTAL, "YAML 1.1 reads it as octal 8, YAML 1.2 as 10", "10"),
        ("09", TrapKind.OCTAL, "YAML readers disagree about numbers with a leading zero", "9"),
        ("0x1F", TrapKind.RADIX, "YAML reads it as hexadecimal 31", "31"),
        ("0o17", TrapKind.RADIX, "YAML 1.2 reads it as octal 15", "15"),
        ("0b101", TrapKind.RADIX, "YAML 1.1 reads it as binary 5", "5"),
        ("500_000", TrapKind.UNDERSCORE, "YAML 1.1 reads it as 500000, YAML 1.2 as a string", "500000"),
        ("1:30", TrapKind.SEXAGESIMAL, "YAML 1.1 reads it as the base-60 number 90, YAML 1.2 as a string", None),
        ("yes", TrapKind.BOOLEAN, "YAML 1.1 reads it as true, YAML 1.2 as a string", None),
        ("Off", TrapKind.BOOLEAN, "YAML 1.1 reads it as false, YAML 1.2 as a string", None),
        ("2024-01-01", TrapKind.DATE, "YAML 1.1 reads it as a date, YAML 1.2 as a string", None),
        ("2024-01-01 10:00:00", TrapKind.DATE, "YAML 1.1 reads it as a date, YAML 1.2 as a string", None),
    ],
)
def test_yaml_1_1_traps_stay_text_and_explain_themselves(
    text: str, kind: TrapKind, explanation: str, fix: str | None
) -> None:
    trap = load(f"key: {text}\n")["key"]  # type: ignore[index]
    assert trap == Trap(text, kind)
    assert trap.explain() == explanation
    assert trap.integer_fix() == fix


def test_marks_point_at_keys_and_list_items_one_based() -> None:
    loaded = load_yaml("# comment\nclean:\n  commits_retained: 3\ntags: [a, b]\n", "f.yml")
    assert loaded.marks[("clean", "commits_retained")] == Mark(3, 3)
    assert loaded.marks[("tags", 1)] == Mark(4, 11)
    assert loaded.where(("clean", "missing")) == Mark(2, 1)


def test_duplicate_keys_are_reported_at_the_second_and_the_first_value_is_kept() -> None:
    loaded = load_yaml("a: 1\nb: 2\na: 3\n", "f.yml")
    assert loaded.data == {"a": 1, "b": 2}
    assert loaded.problems == (
        Problem("f.yml", 3, 1, "a", "duplicate key (first defined at line 1); YAML readers silently keep one "
                "of the two values, so remove one"),
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: 1\n b: 2\n", Problem("f.yml", 2, 3, "", "invalid YAML: mapping values are not allowed in this context; "
                                 "usually a `key: value` line indented deeper than the line above allows, or a "
                                 'value holding ": " (quote it)')),
        ("a: 1\nb 2\nc: 3\n", Problem("f.yml", 3, 1, "", "invalid YAML: could not find expected ':' (while scanning "
                                      "a simple key at line 2); usually a line missing the `: ` after its key (or "
                                      "a value spread over lines: quote it)")),
        ("a:\n    b: 1\n  c: 2\n", Problem("f.yml", 3, 3, "", "invalid YAML: did not find expected key (while "
                                        "parsing a block mapping at line 1); usually a line indented differently "
                                        "from the other keys of its block (align them)")),
        ("a: {b: 1\n", Problem("f.yml", 2, 1, "", "invalid YAML: did not find expected ',' or '}' (while parsing a "
                               "flow mapping at line 1); close the { mapping with } (and separate its entries "
                               "with commas)")),
        ("a: @b\n", Problem("f.yml", 1, 4, "", "invalid YAML: found character that cannot start any token (while "
                            "scanning for the next token); quote the value")),
        ("a: 'open\n", Problem("f.yml", 2, 1, "", "invalid YAML: found unexpected end of stream "
                               "(while scanning a quoted scalar at line 1)")),
        ("a: 1\n---\nb: 2\n", Problem("f.yml", 2, 1, "", "invalid YAML: expected a single document in the "
                                      "stream at line 1, but found another document")),
        ("a: \x07\n", Problem("f.yml", 1, 4, "", "invalid YAML: non-printable character #x0007 is not "
                              "allowed; remove it")),
    ],
)
def test_syntax_errors_carry_line_and_column(text: str, problem: Problem) -> None:
    loaded = load_yaml(text, "f.yml")
    assert loaded.data is None
    assert loaded.problems == (problem,)


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("a: &x [*x]\n", "a[0]", "an alias refers to its own anchor (a recursive structure)"),
        ("a: 1\n<<: {b: 2}\n", '["<<"]', "YAML merge keys (<<) are not supported; write the keys out, or put "
                                          "shared settings under `defaults` in project.yml"),
        ("a: !!binary aGk=\n", "a", "unsupported YAML tag 'tag:yaml.org,2002:binary': declarations use plain "
                                    "strings, numbers, true/false, lists and mappings"),
        ("a: !custom x\n", "a", "unsupported YAML tag '!custom': declarations use plain strings, numbers, "
                                "true/false, lists and mappings"),
        ("? [a]\n: 1\n", "", "keys must be plain names, not lists or mappings"),
        ("a: " + "9" * 200 + "\n", "a", "number too long to be a setting"),
        ("a: 0" + "1" * 5000 + "\n", "a", "number too long to be a setting"),
        ("a: 1_" + "1" * 5000 + "\n", "a", "number too long to be a setting"),
        ("a: 1." + "1" * 5000 + "\n", "a", "number too long to be a setting"),
    ],
)
def test_structures_no_declaration_needs_are_problems(text: str, field: str, message: str) -> None:
    (problem,) = load_yaml(text, "f.yml").problems
    assert (problem.field, problem.message) == (field, message)


def test_alias_bombs_and_deep_nesting_are_cut_short() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in "bcdefg":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [" + ", ".join([f"*{previous}"] * 10) + "]\n"
    (problem,) = load_yaml(bomb, "f.yml").problems
    assert problem.message == "too large or too deeply nested to be a declaration"
    (problem,) = load_yaml("a: " + "[" * 200 + "]" * 200, "f.yml").problems
    assert problem.message == "too large or too deeply nested to be a declaration"


def test_a_list_too_long_is_one_problem_and_quick(write_project: WriteProject) -> None:
    # The None put after every item past the limit made the schema say "tags: must not repeat
    # items, got an empty value more than once", and its uniqueItems check, unable to sort a list
    # holding None, compared every pair: 13 seconds for one file of 30,000 tags.
    tags = ", ".join(f"t{i}" for i in range(30_000))
    root = write_project({"tables/t.yml": f"name: t\npath: w/t\ntags: [{tags}]\n"})
    started = time.monotonic()
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    assert time.monotonic() - started < 5
    (problem,) = caught.value.problems
    assert (problem.file, problem.line, problem.field) == ("tables/t.yml", 3, "tags[19996]")
    assert problem.message == "too large or too deeply nested to be a declaration"


def test_field_names_read_like_yaml_paths() -> None:
    assert field_name(("clean", "commits_retained")) == "clean.commits_retained"
    assert field_name(("tags", 2)) == "tags[2]"
    assert field_name(("spark", "conf", "spark.ui.enabled")) == 'spark.conf["spark.ui.enabled"]'
    assert field_name(()) == ""
