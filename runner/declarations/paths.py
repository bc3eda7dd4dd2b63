"""Table base paths: resolve what a declaration says into one canonical location.

Two declarations name the same table when their paths resolve to the same location, however they
are spelled: `warehouse/orders/`, `./warehouse/x/../orders` and `file:///proj/warehouse/orders` are
one folder. Local paths (plain or `file:` URIs) become absolute, normalised paths; other URIs keep
their scheme and bucket and lose redundant slashes, `.` and `..` segments and the trailing slash.
Resolution is lexical, because the folder may not exist yet; `real_location` then follows the
symbolic links that do exist, so guards (allowed_roots, overlapping tables) judge where the data
really is rather than how the path is spelled.
"""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import unquote

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", re.DOTALL)
# Hadoop's S3 connectors are one store under three names.
_SAME_SCHEME = {"s3a": "s3", "s3n": "s3"}


class PathError(ValueError):
    """A path or URI that cannot name a table location; the message says what was expected."""


def resolve_path(declared: str, project_dir: str) -> str:
    """Resolve a declared table path to an absolute local path or a normalised URI.

    Args:
        declared: the `path` as written: relative (to the project directory), absolute, a
            `file:` URI, or another URI such as `s3://bucket/warehouse/orders/`.
        project_dir: absolute path of the project directory.

    Returns:
        `/abs/warehouse/orders` for local paths; `s3://bucket/warehouse/orders` for URIs.

    Raises:
        PathError: the path is empty or holds a control character (NUL, a newline, ...), a `file:`
            URI names another host or a relative path, or a URI has no authority (bucket) or no path.
    """
    text = declared.strip()
    if not text:
        raise PathError("expected a path or URI, got an empty string")
    _refuse_control_characters(text)
    match = _URI.fullmatch(text)
    if match is None or len(match.group(1)) == 1:  # one letter: a Windows drive, not a scheme
        return _normpath(os.path.join(project_dir, text))
    scheme, rest = match.group(1).lower(), match.group(2)
    if scheme == "file":
        return _file_uri(text, rest)
    return _remote_uri(text, scheme, rest)


def _refuse_control_characters(declared: str) -> None:
    # No file system or object store takes a NUL in a name, and a newline or escape in a path is a
    # copy-paste accident that would also garble every message that prints the path.
    found = _CONTROL.search(declared)
    if found is not None:
        raise PathError(f"expected a path without control characters, got {declared!r} "
                        f"(character {found.start() + 1} is {_control_name(found.group())}); remove it")


def _control_name(char: str) -> str:
    names = {"\0": "NUL", "\t": "a tab", "\n": "a newline", "\r": "a carriage return", "\x1b": "ESC"}
    return names.get(char, f"U+{ord(char):04X}")


def _file_uri(text: str, rest: str) -> str:
    if rest.startswith("//"):
        host, _, path = rest[2:].partition("/")
        if host not in ("", "localhost"):
            raise PathError(f'expected a local file URI such as file:///data/orders, got "{text}" '
                            f'(host "{host}" is not this machine)')
        path = "/" + path
    else:
        path = rest
    if not path.startswith("/"):
        raise PathError(f'expected an absolute file URI such as file:///data/orders, got "{text}"')
    return _normpath(unquote(path))


def _remote_uri(text: str, scheme: str, rest: str) -> str:
    if not rest.startswith("//"):
        raise PathError(f'expected a URI such as s3://bucket/warehouse/orders, got "{text}"')
    authority, _, path = rest[2:].partition("/")
    if not authority:
        raise PathError(f'expected a bucket or host after "{scheme}://", got "{text}"')
    clean = _normpath("/" + path) if path else ""
    return f"{scheme}://{authority}{'' if clean == '/' else clean}"


def _normpath(path: str) -> str:
    # POSIX keeps a leading "//" as possibly special; for table locations it is a typo.
    return posixpath.normpath(re.sub("/{2,}", "/", path))


def location_key(resolved: str) -> str:
    """The form two resolved paths are compared in: one spelling per store (`s3a://` → `s3://`)."""
    match = _URI.fullmatch(resolved)
    if match is None or len(match.group(1)) == 1:
        return resolved
    scheme = match.group(1).lower()
    return f"{_SAME_SCHEME.get(scheme, scheme)}:{match.group(2)}"


def is_under(location: str, root: str) -> bool:
    """Whether resolved `location` is `root` itself or inside it (both compared by `location_key`)."""
    path, base = location_key(location), location_key(root)
    return path == base or path.startswith(base.rstrip("/") + "/")


def is_local(resolved: str) -> bool:
    """Whether a resolved location is a local path (absolute, as `resolve_path` returns them)."""
    return resolved.startswith("/")


def real_location(resolved: str) -> str:
    """A resolved location with the symbolic links that exist followed (local paths only).

    Object-store URIs have no links and are returned unchanged. Parts that do not exist yet stay
    as written, so the answer is the same before and after the table is created.
    """
    return os.path.realpath(resolved) if is_local(resolved) else resolved


class RealLocations:
    """`real_location` for the many tables of one load, following each folder's links only once.

    A table's real location is its folder's real location joined with its own name, unless that
    name is itself a link (then it is resolved in full, as `real_location` does). Tables side by
    side in one folder so cost one `lstat` each instead of one per part of their path, and the
    allowed roots are resolved once instead of once per table. Answers are kept for the object's
    life, one `load_project`: a link changed later is judged again by plan and apply.
    """

    def __init__(self) -> None:
        self._known: dict[str, str] = {}

    def __call__(self, resolved: str) -> str:
        if not is_local(resolved):
            return resolved
        known = self._known.get(resolved)
        if known is None:
            known = self._known[resolved] = self._follow(resolved)
        return known

    def _follow(self, resolved: str) -> str:
        folder, name = posixpath.split(resolved)
        if name in ("", ".", ".."):
            return os.path.realpath(resolved)
        joined = posixpath.join(self(folder), name)
        return os.path.realpath(resolved) if os.path.islink(joined) else joined
