"""Characters in a declaration's text that a reader cannot see: each refused where it is written.

A bidirectional control reorders what an editor, a code review or a terminal shows (Trojan Source,
CVE-2021-42574): `owner: "sales\u202egnp.exe"` reads as `salesexe.png`, so the owner a reviewer
approves is not the one `--select owner:` matches. Zero-width and other format characters make two
equal-looking tags differ; control characters (ESC) rewrite the terminal that prints them. None has
a place in a path, an owner, a tag or a name; a `description` may hold lines and tabs.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator

from runner.declarations.yaml_io import FieldPath, Loaded
from runner.errors import Problem

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_CONTROL_NAMES = {"\0": "NUL", "\t": "a tab", "\n": "a newline", "\r": "a carriage return", "\x1b": "ESC"}
_MULTILINE = frozenset({"description"})  # free text for people: lines and tabs are text there

# The same rule as JSON Schema patterns (schemas/*.json), for editors and other schema users: the
# characters of the Basic Multilingual Plane in the categories `_unseen` refuses (a pattern has no
# Unicode categories; the few such characters beyond U+FFFF are refused by the runner alone).
_RANGES = ("\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890-\\u0891"
           "\\u08e2\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ud800-\\uf8ff"
           "\\ufeff\\ufff9-\\ufffb")
TEXT_PATTERN = f"^[^{_RANGES}]*$"
LINES_PATTERN = "^[^" + _RANGES.replace("\\u0000-\\u001f", "\\u0000-\\u0008\\u000b-\\u001f") + "]*$"  # tab, newline


def text_problems(doc: Loaded) -> list[Problem]:
    """One problem for each string (value or key) of `doc` holding a character no reader can see."""
    problems = []
    for path, text in _strings(doc.data, ()):
        allowed = "\n\t" if path and path[-1] in _MULTILINE else ""
        message = unseen_message(text, allowed)
        if message is not None:
            problems.append(doc.problem(path, message))
    return problems


def unseen_message(text: str, allowed: str = "") -> str | None:
    """What is wrong with `text`, naming its first unseen character and where, or None."""
    found = first_unseen(text, allowed)
    if found is None:
        return None
    index, char = found
    return (f"expected text without invisible or control characters, found {describe(char)} at character "
            f"{index + 1} of {escaped(text)}; remove it")


def first_unseen(text: str, allowed: str = "") -> tuple[int, str] | None:
    """The first character of `text` a reader cannot see (and its index), or None."""
    for index, char in enumerate(text):
        if char not in allowed and _unseen(char):
            return index, char
    return None


def describe(char: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE (a bidirectional control)`: what the character is."""
    code = f"U+{ord(char):04X}"
    if unicodedata.category(char) == "Cc":
        return f"{code} {_CONTROL_NAMES.get(char, unicodedata.name(char, ''))} (a control character)".replace(
            "  ", " ")
    kind = "a bidirectional control" if char in _BIDI else "invisible"
    return f"{code} {unicodedata.name(char, 'unnamed')} ({kind})"


def escaped(text: str, most: int = 60) -> str:
    """`text` quoted as JSON writes it (cut short past `most` characters), with every character a
    reader cannot see written as an escape, so that the message itself shows what is there."""
    short = text if len(text) <= most else text[:most - 3] + "..."
    return "".join(f"\\u{ord(c):04x}" if _unseen(c) else c for c in json.dumps(short, ensure_ascii=False))


# The same characters as one regular expression (the Basic Multilingual Plane's, as `TEXT_PATTERN`), to
# escape them in long texts fast: a plan lists hundreds of thousands of paths.
_UNSEEN_CHARS = re.compile(f"[{_RANGES}]")
_UNSEEN_BUT_LINES = re.compile("[" + _RANGES.replace("\\u0000-\\u001f", "\\u0000-\\u0008\\u000b-\\u001f") + "]")


def shown(text: str, *, lines: bool = False) -> str:
    """`text` with every character a reader cannot see written as a `\\uXXXX` escape (newlines and
    tabs too, unless `lines`): for names that come from storage, not from a declaration (a partition
    folder is named by its partition value, often taken from the data), before they are printed. An
    ESC or a carriage return in one would rewrite the terminal that shows it, a newline forge a line.
    """
    pattern = _UNSEEN_BUT_LINES if lines else _UNSEEN_CHARS
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _unseen(char: str) -> bool:
    # Cc: C0/C1 controls; Cf: format characters (bidi, zero-width, BOM, soft hyphen);
    # Zl/Zp: the line and paragraph separators; Co/Cs: private use and lone surrogates.
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cs")


def _strings(data: object, path: FieldPath) -> Iterator[tuple[FieldPath, str]]:
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str):
                yield (*path, key), key
            yield from _strings(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _strings(value, (*path, index))
