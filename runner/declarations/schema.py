"""JSON Schema validation of loaded YAML, with every error turned into a located `Problem`.

The schemas in `schemas/` are the contract for the shape of declarations; editors use the same
files through the `# yaml-language-server: $schema=...` line. Validation collects every error
(`iter_errors`) and words each one as expected-vs-found, with the fix where there is an obvious one.
Rules that need more than one file or the merged defaults live in `rules.py`, not here.

Two validators judge the same schema. Most files are valid, and for them only a yes matters: a
validator compiled to Python code (`fastjsonschema`) answers that several times faster than
`jsonschema`, which walks the schema keyword by keyword for every file. Only when the compiled one
says no does `jsonschema` run, to collect and explain every error; it is imported only then, so
`runner validate` on a valid project never loads it. The two must accept exactly the same
documents (`tests/declarations/test_fast_schema.py`); `_compiled` adapts the few places where
fastjsonschema reads a schema differently.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import fastjsonschema

from runner.declarations.sizes import parse_size
from runner.declarations.text import LINES_PATTERN, TEXT_PATTERN, escaped, unseen_message
from runner.declarations.yaml_io import FieldPath, Loaded, Trap
from runner.errors import Problem
from runner.selection import did_you_mean

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
TABLE_SCHEMA = "table.schema.json"
PROJECT_SCHEMA = "project.schema.json"
SIZE_FORMAT = "byte-size"
POSITIVE_SIZE_FORMAT = "positive-byte-size"
_SIZE_FORMATS = (SIZE_FORMAT, POSITIVE_SIZE_FORMAT)

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
    "^[^,]+$": "one field name without commas (Hudi would read it as several fields; write a list such as "
               "[a, b] instead)",
    "^[0-9]{1,9}([kKmMgGtT][bB]?)$": "a size as Spark writes it: a whole number and a unit k, m, g or t, "
                                     "with no space (such as 8g or 4096m)",
}


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """Read one schema file from `schemas/` (cached: the files do not change while we run)."""
    with open(SCHEMA_DIR / name, encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema


@functools.cache
def explainer(name: str) -> Draft202012Validator:
    """The `jsonschema` validator of one schema: every error of a document, each with its place.

    The reference: `is_valid` must say yes exactly when this finds no error.
    """
    # Imported here: only an invalid file needs it, and it is most of `runner validate`'s imports.
    from jsonschema import Draft202012Validator, FormatChecker, validators

    # JSON Schema counts 10.0 as an integer; a retention of "10.0" commits is a typo, not a count.
    strict_integers = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    cls = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator, {"pattern": _end_anchored_pattern, "uniqueItems": _unique_items},
        type_checker=strict_integers,
    )
    formats = FormatChecker(formats=())
    formats.checks(SIZE_FORMAT, raises=ValueError)(_is_size)
    formats.checks(POSITIVE_SIZE_FORMAT, raises=ValueError)(_is_positive_size)
    return cls(inline_refs(load_schema(name), name), format_checker=formats)  # type: ignore[no-any-return]


def is_valid(data: object, name: str) -> bool:
    """Whether `data` has no schema error at all (the compiled validator: no explanation, fast).

    fastjsonschema follows JSON Schema since draft 6, where 10.0 is an integer, and offers no way
    to say otherwise; `explainer` refuses it. So a document holding any float is left to
    `explainer` (declarations rarely hold one: only `spark.conf` values may be numbers).
    """
    if _has_float(data):
        return False
    try:
        _compiled(name)(data)
    except fastjsonschema.JsonSchemaValueException:
        return False
    return True


def _has_float(data: object) -> bool:
    # Exact types suffice: the YAML loader builds plain dicts, lists and floats only.
    pending = [data]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            pending.extend(cast(dict[str, object], item).values())
        elif kind is list:
            pending.extend(cast(list[object], item))
        elif kind is float:
            return True
    return False


@functools.cache
def _compiled(name: str) -> Callable[[object], object]:
    """The schema compiled to Python code, made to read it exactly as `explainer` does.

    - fastjsonschema does not implement draft 2020-12; our schemas use no keyword whose meaning
      changed since draft 7 (`items` is always one schema, never a list), so draft 7 reads them alike.
    - It counts 10.0 as an integer, as JSON Schema does; `is_valid` keeps floats away from it.
    - It turns every `$` of a pattern into `\\Z` (end of text only, as in JSON Schema's ECMA-262
      patterns); `explainer` reads `$` the same way (`_end_anchored_pattern`).
    - Our formats report a bad size by raising; it wants a yes or no.
    """
    schema = inline_refs(load_schema(name), name)
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    formats = {SIZE_FORMAT: _conforms(_is_size), POSITIVE_SIZE_FORMAT: _conforms(_is_positive_size)}
    # use_default=False: by default it writes the schema's defaults into the data it checks.
    return fastjsonschema.compile(schema, formats=formats, use_default=False, detailed_exceptions=False)


_DOLLAR = re.compile(r"(?<!\\)\$")


@functools.cache
def _end_anchored(pattern: str) -> re.Pattern[str]:
    return re.compile(_DOLLAR.sub(lambda _: r"\Z", pattern))


def _end_anchored_pattern(validator: Any, pattern: str, instance: object, schema: Any) -> Iterator[Any]:
    """jsonschema's `pattern` keyword with `$` meaning the end of the text, as in ECMA-262.

    Python's `$` also matches before a final newline, so with jsonschema's own keyword a table
    named "orders\\n" or a path ending in a newline passed every "no control characters" pattern.
    """
    from jsonschema import ValidationError

    if isinstance(instance, str) and not _end_anchored(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _unique_items(validator: Any, unique: bool, instance: object, schema: Any) -> Iterator[Any]:
    """jsonschema's `uniqueItems` in one pass over the items.

    jsonschema's own sorts the items, and compares every pair when they cannot be sorted: a list of
    20,000 names holding one empty item (None) or one number took 13 seconds.
    """
    from jsonschema import ValidationError

    if unique and isinstance(instance, list) and _first_repeat(instance) is not None:
        yield ValidationError(f"{instance!r} has non-unique elements")


def _first_repeat(items: Sequence[object]) -> int | None:
    """The index of the first item equal to an earlier one, by JSON Schema's equality (true is not 1)."""
    seen: set[object] = set()
    for index, item in enumerate(items):
        key = _equality_key(item)
        if key in seen:
            return index
        seen.add(key)
    return None


def _equality_key(value: object) -> object:
    """A hashable value equal for exactly the values JSON Schema calls equal: 1 and 1.0 alike, true
    and 1 not, mappings whatever their key order."""
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_equality_key(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _equality_key(item)) for key, item in value.items()))
    return (type(value).__name__, value)  # str, None and Trap are hashable themselves


def _conforms(check: Callable[[object], bool]) -> Callable[[object], bool]:
    def conforms(value: object) -> bool:
        try:
            return check(value)
        except ValueError:
            return False
    return conforms


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


def _is_positive_size(value: object) -> bool:
    if isinstance(value, str) and parse_size(value) == 0:
        raise ValueError(f'must be at least 1 byte, got "{value}"')
    return _is_size(value)


def check(doc: Loaded, schema_name: str) -> list[Problem]:
    """Validate `doc.data` against one schema and return every problem, located in `doc`.

    Args:
        doc: a loaded file whose top level is a mapping.
        schema_name: `TABLE_SCHEMA` or `PROJECT_SCHEMA`.
    """
    return check_and_prune(doc, schema_name)[0]


def check_and_prune(doc: Loaded, schema_name: str) -> tuple[list[Problem], Loaded]:
    """`check`, plus the document without the values the schema rejected.

    The pruned document lets the semantic rules run on everything that is well-formed, so a
    schema error in one field never hides a rule broken by another field of the same file.
    """
    if is_valid(doc.data, schema_name):
        return [], doc
    problems: list[Problem] = []
    rejected: list[FieldPath] = []
    for error in explainer(schema_name).iter_errors(doc.data):
        rejected += _rejected_paths(error)
        # A value refused while loading was reported as what it is; the None in its place is not news
        # (nor is a list that no branch of a oneOf accepts, or that repeats None, because of it).
        if error.validator in ("oneOf", "uniqueItems") and _holds_refused(tuple(error.absolute_path), doc.refused):
            continue
        problems += [doc.problem(path, message) for path, message in _describe(error) if path not in doc.refused]
    return problems, _pruned(doc, rejected)


def _holds_refused(path: FieldPath, refused: frozenset[FieldPath]) -> bool:
    return any(len(inner) > len(path) and inner[:len(path)] == path for inner in refused)


def _rejected_paths(error: ValidationError) -> list[FieldPath]:
    """The values an error rejects: a missing key rejects nothing, an unknown key only itself."""
    path: FieldPath = tuple(error.absolute_path)
    if error.validator == "required":
        return []
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        return [(*path, key) for key in error.instance if key not in allowed]
    return [path] if path else []


def _pruned(doc: Loaded, rejected: Sequence[FieldPath]) -> Loaded:
    if not rejected:
        return doc
    data = copy.deepcopy(doc.data)
    for path in rejected:
        # A bad list item takes its whole list with it: the rest is not what the author meant.
        cut = next((i for i, part in enumerate(path) if isinstance(part, int)), len(path))
        if cut == 0:
            continue
        parent = data
        for part in path[:cut - 1]:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            parent.pop(path[cut - 1], None)
    return dataclasses.replace(doc, data=data)


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
    elif kind == "pattern" and str(expected) in (TEXT_PATTERN, LINES_PATTERN) and isinstance(value, str):
        lines = "\n\t" if str(expected) == LINES_PATTERN else ""
        yield path, unseen_message(value, lines) or f"expected text matching {expected}, got {show(value)}"
    elif kind == "pattern" and schema.get("format") not in _SIZE_FORMATS:
        pattern = str(expected)
        yield path, f"expected {_PATTERN_NOUNS.get(pattern, f'text matching {pattern}')}, got {show(value)}"
    elif kind == "oneOf":
        yield from _one_of(error, path, value, schema)
    elif kind != "pattern":
        yield path, _simple_message(error)


def _one_of(error: ValidationError, path: FieldPath, value: object,
            schema: Mapping[str, Any]) -> Iterator[tuple[FieldPath, str]]:
    """No branch matched: explain the branch of the value's own type, else name the types."""
    # A type error at the value itself only says that a branch is for another kind of value; one
    # deeper down (an item of the list branch) is what is wrong with the value.
    specific = [e for e in error.context or () if e.validator != "type" or e.relative_path]
    if specific:
        for inner in specific:
            yield from _describe(inner)
        return
    kinds = [str(branch.get("type")) for branch in schema.get("oneOf", ()) if isinstance(branch, Mapping)]
    yield path, f"expected {expected_phrase(kinds, {})}, got {show(value)}"


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
        index = _first_repeat(value)
        if index is not None:
            return f"must not repeat items, got {show(value[index])} more than once"
    if kind == "format" and error.cause is not None:
        return str(error.cause)
    return error.message


def _type_message(value: object, types: str | Sequence[str], schema: Mapping[str, Any]) -> str:
    wanted = [types] if isinstance(types, str) else list(types)
    expected = expected_phrase(wanted, schema)
    if not isinstance(value, Trap):
        return f"expected {expected}, got {show(value)}"
    message = f'expected {expected}, got "{value.text}" ({value.explain()})'
    is_size = schema.get("format") in _SIZE_FORMATS
    if "string" in wanted and not is_size:
        return f'{message}; quote it: "{value.text}"'
    fix = value.integer_fix() if "integer" in wanted else None
    if fix is None and "boolean" in wanted and value.text.lower() in ("yes", "on", "no", "off"):
        fix = "true" if value.text.lower() in ("yes", "on") else "false"
    return f"{message}; write {fix}" if fix is not None else message


def expected_phrase(types: Sequence[str], schema: Mapping[str, Any]) -> str:
    """Say in words what a schema's `type` accepts: `an integer`, `a string, a number or true/false`."""
    if schema.get("format") in _SIZE_FORMATS:
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
        message += did_you_mean(found, [str(o) for o in options])
    return message


def _unknown_key(key: str, allowed: Sequence[str]) -> str:
    hint = did_you_mean(key, allowed)  # `TABLE` is `table`, which difflib alone never suggested
    listed = ", ".join(allowed) if allowed else "none"
    return f"unknown key{hint}; allowed here: {listed}"


def show(value: object) -> str:
    """Render a found value the way it would be written in YAML, briefly."""
    if isinstance(value, Trap):
        return value.text
    if isinstance(value, str):
        return escaped(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "an empty value"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return str(value)
