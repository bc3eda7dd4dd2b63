"""YAML text → plain Python values plus the line and column of every key, without YAML 1.1's traps.

PyYAML implements YAML 1.1, where an unquoted `010` is the octal number 8, `1:30` is 90 (base 60),
`2024-01-01` is a date and `yes`/`on` are booleans. Editors and most other tools implement YAML 1.2,
where these are a string or a different number. A declaration that means different things to
different readers is a bug waiting to happen, so such scalars load as `Trap` values, which no JSON
Schema type accepts; the schema stage then explains the trap and the fix.

The loader resolves only YAML 1.2's core schema (null, true/false, decimal integers, floats with a
dot) and builds values itself from the node tree rather than through PyYAML's constructors. That
gives us duplicate-key detection, a mark for every key, and no arbitrary-object construction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import ClassVar, NamedTuple

import yaml

from runner.errors import Problem

FieldPath = tuple[str | int, ...]
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_STR, _SEQ, _MAP = _TAG + "str", _TAG + "seq", _TAG + "map"
_TRAP_TAG = "tag:runner,2024:trap-"
_MAX_NODES = 20_000  # aliases can expand a small file into billions of values ("billion laughs")
_MAX_DEPTH = 64
_MAX_NUMBER = 100  # characters; Python refuses to convert decimal strings over 4300 digits


class TrapKind(StrEnum):
    """The YAML 1.1 readings that YAML 1.2 readers (and most people) do not expect."""

    OCTAL = "octal"
    RADIX = "radix"
    UNDERSCORE = "underscore"
    SEXAGESIMAL = "sexagesimal"
    BOOLEAN = "boolean"
    DATE = "date"


@dataclass(frozen=True, slots=True)
class Trap:
    """An unquoted scalar that YAML 1.1 and YAML 1.2 read differently; kept as its source text."""

    text: str
    kind: TrapKind

    def explain(self) -> str:
        """How YAML readers disagree about the text, for example `YAML 1.1 reads it as octal 8, ...`."""
        plain = self.text.replace("_", "")
        if self.kind is TrapKind.OCTAL and re.fullmatch(r"[-+]?0[0-7]+", plain):
            return f"YAML 1.1 reads it as octal {int(plain, 8)}, YAML 1.2 as {int(plain)}"
        if self.kind is TrapKind.OCTAL:
            return "YAML readers disagree about numbers with a leading zero"
        if self.kind is TrapKind.RADIX:
            base, name, versions = _RADIXES[plain.lstrip("+-")[1]]
            return f"{versions} it as {name} {int(plain, base)}"
        if self.kind is TrapKind.SEXAGESIMAL:
            return f"YAML 1.1 reads it as the base-60 number {_sexagesimal(plain)}, YAML 1.2 as a string"
        if self.kind is TrapKind.UNDERSCORE:
            reading = str(int(plain))
        elif self.kind is TrapKind.BOOLEAN:
            reading = "true" if self.text.lower() in ("yes", "on") else "false"
        else:
            reading = "a date"
        return f"YAML 1.1 reads it as {reading}, YAML 1.2 as a string"

    def integer_fix(self) -> str | None:
        """The plain decimal to write instead, when the intended integer is clear."""
        plain = self.text.replace("_", "")
        if self.kind in (TrapKind.OCTAL, TrapKind.UNDERSCORE):
            return str(int(plain))
        if self.kind is TrapKind.RADIX:
            return str(int(plain, _RADIXES[plain.lstrip("+-")[1]][0]))
        return None


_RADIXES = {
    "x": (16, "hexadecimal", "YAML reads"),
    "o": (8, "octal", "YAML 1.2 reads"),
    "b": (2, "binary", "YAML 1.1 reads"),
}


def _sexagesimal(text: str) -> int | float:
    total: int | float = 0
    for part in text.lstrip("+-").split(":"):
        total = total * 60 + (float(part) if "." in part else int(part))
    return -total if text.startswith("-") else total


class Mark(NamedTuple):
    """A 1-based line and column in a YAML file (a tuple: one is made for every key of every file)."""

    line: int
    column: int


class Alias(NamedTuple):
    """Where a value is repeated through an alias (`*k`), and where its anchor (`&k`) is."""

    name: str
    mark: Mark
    anchor: Mark


@dataclass(frozen=True, slots=True)
class Loaded:
    """One YAML file after loading.

    Args:
        file: the file name shown in problems (relative to the project directory).
        data: plain values (dict, list, str, int, float, bool, None, Trap); None also when the
            file could not be parsed at all, in which case `problems` says why.
        marks: for each field path, where its key (mapping entries) or item (list items) starts.
        problems: what went wrong while loading (syntax, duplicate keys, unsupported tags).
        refused: the fields whose value a load problem refused (an unsupported tag, a recursive
            alias, a number too long); `data` holds None there, which no later check should judge.
        aliases: the fields whose value is an alias (`clean: *c`), with where the alias and its
            anchor are. Marks inside such a value are where it is written, under the anchor.
    """

    file: str
    data: object
    marks: Mapping[FieldPath, Mark]
    problems: tuple[Problem, ...] = ()
    refused: frozenset[FieldPath] = frozenset()
    aliases: Mapping[FieldPath, Alias] = field(default_factory=dict)

    def where(self, path: FieldPath) -> Mark:
        """Where `path` is used: its own mark (or its nearest ancestor's), or, inside a value
        repeated through an alias, the alias, since the field is there and not at the anchor."""
        through = self._through(path)
        if through is not None:
            alias, at = through
            if at != path or not isinstance(path[-1], str):  # a key's own line is already the alias's
                return alias.mark
        return self.written(path)

    def written(self, path: FieldPath) -> Mark:
        """Where the value of `path` is written: its mark, or its nearest ancestor's."""
        for end in range(len(path), -1, -1):
            mark = self.marks.get(path[:end])
            if mark is not None:
                return mark
        return Mark(1, 1)

    def problem(self, path: FieldPath, message: str) -> Problem:
        """A problem located at `path` in this file; through an alias, it also names where the value is written."""
        mark = self.where(path)
        through = self._through(path)
        if through is not None:
            message += _alias_note(through[0], self.written(path), deeper=through[1] != path)
        return Problem(self.file, mark.line, mark.column, field_name(path), message)

    def aliased(self, path: FieldPath) -> bool:
        """Whether `path` is, or lies in, a value repeated through an alias."""
        return self._through(path) is not None

    def _through(self, path: FieldPath) -> tuple[Alias, FieldPath] | None:
        """The outermost alias `path` lies in (and the field it is the value of): where the user wrote the field."""
        if not self.aliases:
            return None
        for end in range(1, len(path) + 1):
            found = self.aliases.get(path[:end])
            if found is not None:
                return found, path[:end]
        return None


def _alias_note(alias: Alias, written: Mark, *, deeper: bool) -> str:
    if not deeper:
        return f" (through the alias *{alias.name}, anchored at line {alias.anchor.line})"
    return (f" (through the alias *{alias.name}: written at line {written.line}, column {written.column}, "
            f"in the value anchored &{alias.name} at line {alias.anchor.line})")


def field_name(path: FieldPath) -> str:
    """Render a field path the way users write it: `clean.commits_retained`, `tags[1]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}" if out else part
        else:
            out += '["' + part.replace('"', '\\"') + '"]'
    return out


class _Resolver(_BaseLoader):  # type: ignore[misc,valid-type]
    """Resolves plain scalars by YAML 1.2's core schema, tagging YAML 1.1 traps on the way."""

    # PyYAML looks resolvers up on the class; this class's own table replaces the inherited one.
    yaml_implicit_resolvers: ClassVar[dict[str | None, list[tuple[str, re.Pattern[str]]]]] = {}

    def resolve(self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
        """The tag of a node, as PyYAML's own `resolve` finds it with this class's table.

        Called for every key and value of every file, so it skips what PyYAML's generic version
        checks each time and this loader never has: wildcard and path resolvers.
        """
        if kind is yaml.ScalarNode:
            if implicit[0]:
                for tag, pattern in self.yaml_implicit_resolvers.get(value[:1], ()):
                    if pattern.match(value):
                        return tag
            return _STR
        return _SEQ if kind is yaml.SequenceNode else _MAP


_DIGITS = list("-+0123456789")
# Order matters: for each first character the first matching pattern wins.
_RESOLVERS: tuple[tuple[str, str, list[str]], ...] = (
    (_TAG + "null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    (_TAG + "bool", r"true|True|TRUE|false|False|FALSE", list("tTfF")),
    (_TRAP_TAG + "boolean", r"yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF", list("yYnNoO")),
    (_TAG + "int", r"[-+]?(?:0|[1-9][0-9]*)", _DIGITS),
    (_TRAP_TAG + "radix", r"[-+]?0(?:x[0-9a-fA-F][0-9a-fA-F_]*|o[0-7][0-7_]*|b[01][01_]*)", _DIGITS),
    (_TRAP_TAG + "octal", r"[-+]?0[0-9_]+", _DIGITS),
    (_TRAP_TAG + "date", r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}"
     r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?", list("0123456789")),
    (_TRAP_TAG + "sexagesimal", r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
     _DIGITS),
    (_TRAP_TAG + "underscore", r"(?=.*_)[-+]?[0-9][0-9_]*", _DIGITS),
    (_TAG + "float", r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
     list("-+.0123456789")),
)
_FLOAT = re.compile(_RESOLVERS[-1][1])
for _tag, _pattern, _first in _RESOLVERS:
    _Resolver.add_implicit_resolver(_tag, re.compile(f"^(?:{_pattern})$"), _first)


def load_yaml(text: str, file: str) -> Loaded:
    """Parse one YAML document into plain values and key marks; never raises on bad input.

    Args:
        text: the file's content.
        file: the name used in problems.

    Returns:
        A `Loaded` whose `problems` lists syntax errors, duplicate keys, unsupported tags, and
        documents too large or too deep to be a declaration.
    """
    try:
        node = yaml.compose(text, Loader=_Resolver)
    except yaml.MarkedYAMLError as error:
        problem = _tab_problem(file, text, error) or _anchor_problem(file, text, error) or _syntax_problem(file, error)
        return Loaded(file, None, {}, (problem,))
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, error.position) + 1
        column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
        message = f"invalid YAML: non-printable character #x{error.character:04x} is not allowed; remove it"
        return Loaded(file, None, {}, (Problem(file, line, column, "", message),))
    except yaml.YAMLError as error:
        return Loaded(file, None, {}, (Problem(file, 0, 0, "", f"invalid YAML: {error}"),))
    except RecursionError:
        return Loaded(file, None, {}, (Problem(file, 0, 0, "", "invalid YAML: nested too deeply"),))
    if node is None:
        return Loaded(file, None, {})
    builder = _Builder(file)
    data = builder.build(node, (), 0)
    if builder.saw_alias:  # rare: find where each alias is, which libyaml's composer does not keep
        tracked = _compose_tracking_aliases(text)
        if tracked is not None:
            node, uses = tracked
            builder = _Builder(file, uses)
            data = builder.build(node, (), 0)
    return builder.loaded(data, node)


class _AliasTracker(yaml.SafeLoader):
    """PyYAML's pure-Python composer, which (unlike libyaml's) can be told where each alias is."""

    yaml_implicit_resolvers = _Resolver.yaml_implicit_resolvers
    resolve = _Resolver.resolve

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.uses: dict[tuple[int, int], Alias] = {}

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if not self.check_event(yaml.AliasEvent):
            return super().compose_node(parent, index)
        event: yaml.AliasEvent = self.peek_event()  # type: ignore[no-untyped-call]
        node = super().compose_node(parent, index)
        # A mapping's value is composed with its key node as `index` (the stubs say int), a list's
        # item with its position.
        slot: object = index
        if node is not None and event.start_mark is not None:
            at = Mark(event.start_mark.line + 1, event.start_mark.column + 1)
            self.uses[(id(parent), slot if isinstance(slot, int) else id(slot))] = Alias(
                str(event.anchor), at, _mark(node))
        return node


def _compose_tracking_aliases(text: str) -> tuple[yaml.Node, dict[tuple[int, int], Alias]] | None:
    loader = _AliasTracker(text)
    try:
        node = loader.get_single_node()
    except (yaml.YAMLError, RecursionError):  # libyaml read the text; without the aliases' places, the marks stand
        return None
    finally:
        loader.dispose()
    return (node, loader.uses) if node is not None else None


def _tab_problem(file: str, text: str, error: yaml.MarkedYAMLError) -> Problem | None:
    """YAML forbids tabs for indentation, and PyYAML's wording of it does not mention tabs."""
    mark = error.problem_mark
    if mark is None:
        return None
    lines = text.splitlines()
    line = lines[mark.line] if mark.line < len(lines) else ""
    if "\t" not in line[: mark.column + 1]:
        return None
    column = line.index("\t") + 1
    return Problem(file, mark.line + 1, column, "", "invalid YAML: a tab character; YAML does not allow tabs "
                   "for indentation, so indent with spaces (and set your editor to insert spaces)")


def _anchor_problem(file: str, text: str, error: yaml.MarkedYAMLError) -> Problem | None:
    """libyaml's words for an alias to nothing, or an anchor defined twice, name neither the anchor nor the fix."""
    mark = error.problem_mark
    if mark is None:
        return None
    lines = text.splitlines()
    rest = lines[mark.line][mark.column:] if mark.line < len(lines) else ""
    name = re.match(r"[*&]([0-9A-Za-z_-]+)", rest)  # the characters PyYAML allows in an anchor's name
    if name is None:
        return None
    if str(error.problem).startswith("found undefined alias"):
        message = (f"the alias *{name[1]} names no anchor; write &{name[1]} before the value to repeat, above this "
                   "line in the same file (anchors do not reach across files)")
    elif str(error.context).startswith("found duplicate anchor") and error.context_mark is not None:
        message = (f"the anchor &{name[1]} is also defined at line {error.context_mark.line + 1}; give each anchor "
                   "a name of its own")
    else:
        return None
    return Problem(file, mark.line + 1, mark.column + 1, "", f"invalid YAML: {message}")


def _syntax_problem(file: str, error: yaml.MarkedYAMLError) -> Problem:
    mark = error.problem_mark or error.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    detail = error.problem or "syntax error"
    if error.context:
        where = ""
        if error.context_mark is not None and error.context_mark.line != getattr(mark, "line", None):
            where = f" at line {error.context_mark.line + 1}"
        # PyYAML phrases some errors as context + "but found ...": keep them in reading order.
        if detail.startswith("but "):
            detail = f"{error.context}{where}, {detail}"
        else:
            detail = f"{detail} ({error.context}{where})"
    fix = next((fix for phrase, fix in _SYNTAX_FIXES if phrase in detail), "")
    return Problem(file, line, column, "", f"invalid YAML: {detail}{fix}")


# PyYAML says what the parser met, not what the writer most likely did: the usual cause, and the fix.
_SYNTAX_FIXES = (
    ("mapping values are not allowed", "; usually a `key: value` line indented deeper than the line above "
     "allows, or a value holding \": \" (quote it)"),
    ("could not find expected ':'", "; usually a line missing the `: ` after its key (or a value spread over "
     "lines: quote it)"),
    ("did not find expected key", "; usually a line indented differently from the other keys of its block "
     "(align them)"),
    ("did not find expected node content", "; usually an unclosed [ or { (close it) or a stray , or -"),
    ("expected ',' or ']'", "; close the [ list with ] (and separate its items with commas)"),
    ("expected ',' or '}'", "; close the { mapping with } (and separate its entries with commas)"),
    ("that cannot start any token", "; quote the value"),
)


def _mark(node: yaml.Node) -> Mark:
    return Mark(node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    """Walks a composed node tree once, building values and recording marks and problems."""

    def __init__(self, file: str, uses: Mapping[tuple[int, int], Alias] | None = None) -> None:
        self.file = file
        self.marks: dict[FieldPath, Mark] = {}
        self.problems: list[tuple[FieldPath, Mark, str, bool]] = []  # path, mark, message, whether to add an alias note
        self.refused: set[FieldPath] = set()
        self.visited = 0
        self.too_big = False
        self.active: set[int] = set()
        self.uses = uses
        self.aliases: dict[FieldPath, Alias] = {}
        self.seen: set[int] = set()
        self.saw_alias = False  # a node met twice: the file repeats a value through an alias

    def loaded(self, data: object, root: yaml.Node) -> Loaded:
        self.marks.setdefault((), _mark(root))
        loaded = Loaded(self.file, data, self.marks, refused=frozenset(self.refused), aliases=self.aliases)
        # Inside an aliased value the node's own mark is the anchor's copy: say where the field is.
        problems = []
        for path, mark, message, note in self.problems:
            if self.aliases and loaded.aliased(path):
                mark = loaded.where(path)
                if note:
                    message = loaded.problem(path, message).message
            problems.append(Problem(self.file, mark.line, mark.column, field_name(path), message))
        return replace(loaded, problems=tuple(problems))

    def build(self, node: yaml.Node, path: FieldPath, depth: int) -> object:
        self.visited += 1
        if self.uses is None:
            if id(node) in self.seen:
                self.saw_alias = True
            self.seen.add(id(node))
        if self.visited > _MAX_NODES or depth > _MAX_DEPTH:
            if not self.too_big:
                self._add(node, path[:4], "too large or too deeply nested to be a declaration", alias_note=False)
            self.too_big = True
            self.refused.add(path)
            return None
        if isinstance(node, yaml.ScalarNode):  # most nodes; a scalar cannot contain itself
            return self._scalar(node, path)
        if id(node) in self.active:
            self._add(node, path, "an alias refers to its own anchor (a recursive structure)", alias_note=False)
            self.refused.add(path)
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path, depth)
            assert isinstance(node, yaml.SequenceNode)
            return self._sequence(node, path, depth)
        finally:
            self.active.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, path: FieldPath, depth: int) -> object:
        if node.tag != _MAP:
            self._unsupported(node, path)
            return None
        out: dict[str, object] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, path)
            if key is None:
                continue
            where = (*path, key)
            if key in out:
                first = self.marks[where]
                self._add(key_node, where, f"duplicate key (first defined at line {first.line}); "
                          "YAML readers silently keep one of the two values, so remove one")
                continue
            self.marks[where] = _mark(key_node)
            if self.uses:
                self._note_alias(where, (id(node), id(key_node)))
            out[key] = self.build(value_node, where, depth + 1)
            if self.too_big:  # reported once; walking on would only add None after None
                break
        return out

    def _key(self, node: yaml.Node, path: FieldPath) -> str | None:
        if not isinstance(node, yaml.ScalarNode):
            self._add(node, path, "keys must be plain names, not lists or mappings")
            return None
        if node.value == "<<" and not node.style:
            self._add(node, (*path, "<<"), "YAML merge keys (<<) are not supported; write the keys "
                      "out, or put shared settings under `defaults` in project.yml")
            return None
        return str(node.value)

    def _sequence(self, node: yaml.SequenceNode, path: FieldPath, depth: int) -> object:
        if node.tag != _SEQ:
            self._unsupported(node, path)
            return None
        out: list[object] = []
        for index, item in enumerate(node.value):
            self.marks[(*path, index)] = _mark(item)
            if self.uses:
                self._note_alias((*path, index), (id(node), index))
            value = self.build(item, (*path, index), depth + 1)
            if self.too_big:  # reported once: the items read so far stand, none after them
                break
            out.append(value)
        return out

    def _scalar(self, node: yaml.ScalarNode, path: FieldPath) -> object:
        tag, text = node.tag, node.value
        if tag == _STR:
            return text
        if len(text) > _MAX_NUMBER and (tag.startswith(_TRAP_TAG) or tag in (_TAG + "int", _TAG + "float")):
            self._add(node, path, "number too long to be a setting")
            self.refused.add(path)
            return None
        if tag.startswith(_TRAP_TAG):
            return Trap(text, TrapKind(tag.removeprefix(_TRAP_TAG)))
        if tag == _TAG + "null" and text in ("~", "null", "Null", "NULL", ""):
            return None
        if tag == _TAG + "bool" and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if tag == _TAG + "int" and re.fullmatch(r"[-+]?[0-9]+", text):
            return int(text)
        if tag == _TAG + "float" and _FLOAT.fullmatch(text):
            return float(text.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf")
                         .replace(".nan", "nan").replace(".NaN", "nan").replace(".NAN", "nan"))
        self._unsupported(node, path)
        return None

    def _unsupported(self, node: yaml.Node, path: FieldPath) -> None:
        self._add(node, path, f"unsupported YAML tag {node.tag!r}: declarations use plain strings, "
                  "numbers, true/false, lists and mappings")
        self.refused.add(path)

    def _note_alias(self, path: FieldPath, slot: tuple[int, int]) -> None:
        assert self.uses is not None
        alias = self.uses.get(slot)
        if alias is not None:
            self.aliases[path] = alias

    def _add(self, node: yaml.Node, path: FieldPath, message: str, *, alias_note: bool = True) -> None:
        self.problems.append((path, _mark(node), message, alias_note))
