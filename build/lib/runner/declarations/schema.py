"""JSON Schema validation of loaded YAML, with every error turned into a located `Problem`.

The schemas in `schemas/` are the contract for the shape of declarations; editors use the same
files through the `# yaml-language-server: $schema=...` line. Validation collects every error
(`iter_errors`) and words each one as expected-vs-found, with the fix where there is an obvious one.
Rules that need more than one file or the merged defaults live in `rules.py`, not here.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators

from runner.declarations.sizes import parse_size
from runner.declarations.yaml_io import FieldPath, Loaded, Trap
from runner.errors import Problem

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
TABLE_SCHEMA = "table.schema.json"
PROJECT_SCHEMA = "project.schema.json"
SIZE_FORMAT = "byte-size"

_NOUNS = {
    "integer": "an integer",
    "string": "a string",
    "boolean": "true or false",
    "object": "a mapping (key: value lines)",
    "array": "a list",
    "number": "a number",
    "null": "nothing",
}
_PATTERN_NOUNS = {
    "^[a-z][a-z0-9_]*$": "a lowercase letter followed by lowercase letters, digits or underscores",
}


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """Read one schema file from `schemas/` (cached: the files do not change while we run)."""
    with open(SCHEMA_DIR / name, encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    # JSON Schema counts 10.0 as an integer; a retention of "10.0" commits is a typo, not a count.
    strict_integers = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    cls = validators.extend(Draft202012Validator, type_checker=strict_integers)  # type: ignore[no-untyped-call]
    formats = FormatChecker(formats=())
    formats.checks(SIZE_FORMAT, raises=ValueError)(_is_size)
    return cls(inline_refs(load_schema(name), name), format_checker=formats)  # type: ignore[no-any-return]


def inline_refs(node: Any, base: str) -> Any:
    """The schema with every `$ref` replaced by its target (ours are never recursive).

    Following references is most of jsonschema's cost per file; resolving them once at start-up
    halves the time `runner validate` takes on a thousand declarations.
    """
    if isinstance(node, list):
        return [inline_refs(item, base) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" not in node:
        return {key: inline_refs(value, base) for key, value in node.items()}
    document, _, pointer = str(node["$ref"]).partition("#")
    document = document or base
    target: Any = load_schema(document)
    for part in pointer.strip("/").split("/") if pointer.strip("/") else ():
        target = target[part]
    siblings = {key: value for key, value in node.items() if key != "$ref"}
    clash = siblings.keys() & target.keys() - _ANNOTATIONS
    assert not clash, f"$ref siblings {sorted(clash)} would override the target's checks"
    return {**inline_refs(target, document), **siblings}


_ANNOTATIONS = frozenset({"description", "default", "title", "examples"})


def _is_size(value: object) -> bool:
    if isinstance(value, str):
        parse_size(value)
    return True


def check(doc: Loaded, schema_name: str) -> list[Problem]:
    """Validate `doc.data` against one schema and return every problem, located in `doc`.

    Args:
        doc: a loaded file whose top level is a mapping.
        schema_name: `TABLE_SCHEMA` or `PROJECT_SCHEMA`.
    """
    problems: list[Problem] = []
    for error in _validator(schema_name).iter_errors(doc.data):
        for path, message in _describe(error):
            problems.append(doc.problem(path, message))
    return problems


def _describe(error: ValidationError) -> Iterator[tuple[FieldPath, str]]:
    path: FieldPath = tuple(error.absolute_path)
    kind, value, schema = error.validator, error.instance, error.schema
    expected: Any = error.validator_value
    if not isinstance(schema, Mapping):
        yield path, error.message
    elif kind == "type":
        if "enum" not in schema:  # the enum error says the same, and lists the choices
            yield path, _type_message(value, expected, schema)
    elif kind == "additionalProperties" and isinstance(value, Mapping):
        allowed = list(schema.get("properties", {}))
        for key in value:
            if key not in allowed:
                yield (*path, key), _unknown_key(key, allowed)
    elif kind == "required" and isinstance(value, Mapping):
        for key in expected:
            if key not in value:
                yield (*path, key), "is required but missing"
    elif kind == "pattern" and schema.get("format") != SIZE_FORMAT:
        pattern = str(expected)
        yield path, f"expected {_PATTERN_NOUNS.get(pattern, f'text matching {pattern}')}, got {show(value)}"
    elif kind != "pattern":
        yield path, _simple_message(error)


def _simple_message(error: ValidationError) -> str:
    kind, value = error.validator, error.instance
    limit: Any = error.validator_value
    if kind == "enum":
        return _enum_message(value, limit)
    if kind == "minimum":
        return f"must be >= {limit}, got {show(value)}"
    if kind == "maximum":
        return f"must be <= {limit}, got {show(value)}"
    if kind in ("minLength", "minItems") and limit == 1:
        return "must not be empty"
    if kind == "maxLength":
        return f"must be at most {limit} characters long, got {len(str(value))}"
    if kind == "uniqueItems" and isinstance(value, list):
        repeated = next(item for i, item in enumerate(value) if item in value[:i])
        return f"must not repeat items, got {show(repeated)} more than once"
    if kind == "format" and error.cause is not None:
        return str(error.cause)
    return error.message


def _type_message(value: object, types: str | Sequence[str], schema: Mapping[str, Any]) -> str:
    wanted = [types] if isinstance(types, str) else list(types)
    expected = expected_phrase(wanted, schema)
    if not isinstance(value, Trap):
        return f"expected {expected}, got {show(value)}"
    message = f'expected {expected}, got "{value.text}" ({value.explain()})'
    is_size = schema.get("format") == SIZE_FORMAT
    if "string" in wanted and not is_size:
        return f'{message}; quote it: "{value.text}"'
    fix = value.integer_fix() if "integer" in wanted else None
    if fix is None and "boolean" in wanted and value.text.lower() in ("yes", "on", "no", "off"):
        fix = "true" if value.text.lower() in ("yes", "on") else "false"
    return f"{message}; write {fix}" if fix is not None else message


def expected_phrase(types: Sequence[str], schema: Mapping[str, Any]) -> str:
    """Say in words what a schema's `type` accepts: `an integer`, `a string, a number or true/false`."""
    if schema.get("format") == SIZE_FORMAT:
        return "a size (a number of bytes, or a string like 120MiB)"
    if len(types) == 1:
        return _NOUNS.get(types[0], types[0])
    nouns = ["true/false" if kind == "boolean" else _NOUNS.get(kind, kind) for kind in types]
    return ", ".join(nouns[:-1]) + " or " + nouns[-1]


def _enum_message(value: object, options: Sequence[object]) -> str:
    found = value.text if isinstance(value, Trap) else value
    listed = ", ".join(str(option) for option in options)
    message = f"expected one of {listed}, got {show(found)}"
    if isinstance(found, str):
        by_case = [str(o) for o in options if str(o).lower() == found.lower()]
        close = by_case or difflib.get_close_matches(found, [str(o) for o in options], n=1)
        if close:
            message += f' (did you mean "{close[0]}"?)'
    return message


def _unknown_key(key: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f' (did you mean "{close[0]}"?)' if close else ""
    listed = ", ".join(allowed) if allowed else "none"
    return f"unknown key{hint}; allowed here: {listed}"


def show(value: object) -> str:
    """Render a found value the way it would be written in YAML, briefly."""
    if isinstance(value, Trap):
        return value.text
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 60 else value[:57] + "...", ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "an empty value"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return str(value)
