"""Path guards for everything apply deletes or rewrites, whoever wrote the path.

Paths reach the executor from three untrusted places: a saved plan (table-relative), a pending
clean plan on the timeline (fully qualified URIs) and a clustering plan (partition + file name).
Each is normalised *first* and only then checked, so spellings such as `./.hoodie/x`,
`a/../.hoodie/x`, `p//f`, `p\\f` or `file:/other/table/p/f` cannot slip past a check made on the
raw text.
"""

from __future__ import annotations

import functools
import re

from runner.errors import RefusedError
from runner.hudi.files import DATA_FILE_PATTERN, is_data_file_name

_HINT = "re-create the plan with `runner plan` rather than editing it, and check who wrote this plan."


def table_relative(path: str, *, what: str = "path") -> str:
    """The canonical table-relative form of `path` (no `.`, no empty segments).

    Raises:
        RefusedError: the path is empty, absolute, carries a scheme, a backslash, a NUL byte or a
            `..` segment, or lies in the `.hoodie` folder (at any depth).
    """
    if not path or "\x00" in path or "\\" in path or "://" in path or path.startswith("/") or ":" in path.split("/")[0]:
        raise RefusedError(f"refusing {what} {path!r}: expected a path relative to the table, found "
                           "an absolute path, a URI (a ':' before the first '/' names a scheme, as Hudi's own "
                           "paths read it), a backslash or a NUL byte; nothing was changed", hint=_HINT)
    segments = [s for s in path.split("/") if s not in ("", ".")]
    if not segments or ".." in segments:
        raise RefusedError(f"refusing {what} {path!r}: it leaves the table folder (a '..' segment) or names "
                           "the table root; nothing was changed", hint=_HINT)
    if any(s == ".hoodie" or s.startswith(".hoodie_") for s in segments):  # .hoodie_partition_metadata too
        raise RefusedError(f"refusing {what} {path!r}: it lies in Hudi's own metadata (.hoodie); "
                           "nothing was changed", hint=_HINT)
    return "/".join(segments)


def partition_path(partition: str, *, what: str = "partition") -> str:
    """A partition's canonical table-relative form; the empty string is the non-partitioned root."""
    if partition in ("", ".", "./"):
        return ""
    return table_relative(partition, what=what)


def data_file_path(path: str, *, what: str = "file") -> str:
    """A deletable data file: canonical, inside the table and named like a Hudi base or log file."""
    normal = table_relative(path, what=what)
    if not is_data_file_name(normal.rsplit("/", 1)[-1]):
        raise RefusedError(f"refusing to delete {path!r}: only Hudi base and log files inside the table "
                           "may be deleted; nothing was changed", hint=_HINT)
    return normal


def in_partition(partition: str, file_name: str, *, what: str = "file") -> str:
    """`<partition>/<file_name>` checked: the name must be a single path segment."""
    if not file_name or "/" in file_name or "\\" in file_name or file_name in (".", ".."):
        raise RefusedError(f"refusing {what} {file_name!r} in partition {partition!r}: a file name must be "
                           "one path segment; nothing was changed", hint=_HINT)
    folder = partition_path(partition, what=f"partition of {what}")
    return data_file_path(f"{folder}/{file_name}" if folder else file_name, what=what)


def relativize(base_uri: str, full_path: str, *, folder: str | None = None) -> str:
    """The canonical table-relative path of a qualified path Hudi recorded in a plan.

    The scheme forms Hudi writes for the same place are accepted (`file:/t`, `file:///t`, `/t`;
    `s3://` and `s3a://`); the remainder is then normalised and checked like any relative path, so
    `file:/t/../u/f` or `file:/t/./.hoodie/f` is refused.

    `folder`: the canonical partition folder the caller expects the file in. A remainder that is
    exactly `<folder>/<plain data file name>` is already canonical and is returned without the full
    normalisation (a clean of 400,000 files is checked file by file); anything else takes the full
    path and its checks.
    """
    for prefix in _qualified_prefixes(base_uri):
        if full_path.startswith(prefix):
            rest = full_path[len(prefix):]
            if folder is not None:
                found, _, name = rest.rpartition("/")
                if found == folder and _plain_data_file_name(name):
                    return rest
            return data_file_path(rest, what="clean plan path")
    raise RefusedError(
        f"clean plan path {full_path!r} lies outside the table at {base_uri}; nothing was deleted",
        hint="check who wrote this clean plan; the runner only deletes files inside the table.",
    )


def plain_paths_in(base_uri: str, folder: str, full_paths: list[str]) -> list[str] | None:
    """What `relativize(base_uri, p, folder=folder)` returns for each of `full_paths`, checked as one
    batch: all of them under one spelling of `<table>/<folder>/`, each a plain data file name (the
    names of a whole partition joined by `/` match one pattern once, rather than one per file);
    None as soon as any path might need more, and then the caller checks each path on its own,
    with the full checks and their messages.
    """
    if not full_paths:
        return []
    first = full_paths[0]
    head = next((p for p in _qualified_prefixes(base_uri) if first.startswith(p)), None)
    if head is None:
        return None
    head = f"{head}{folder}/" if folder else head
    cut = len(head)
    if not all(p.startswith(head) for p in full_paths):
        return None
    names = [p[cut:] for p in full_paths]
    joined = "/".join(names)
    if (joined.count("/") != len(names) - 1  # a name holding a `/` lies deeper than the folder
            or "\\" in joined or "\x00" in joined or ":" in joined or "/.hoodie" in f"/{joined}"
            or _DATA_FILE_NAMES.fullmatch(joined) is None):
        return None
    return [f"{folder}/{name}" for name in names] if folder else names


# Data file names joined by `/`, which no data file name holds: one match checks a whole partition.
# ASCII digits only (twice as fast, and what Hudi writes): a name with other digits, which
# `is_data_file_name` accepts, is left to the path-by-path checks, never refused here.
_DATA_FILE_NAMES = re.compile(f"(?:{DATA_FILE_PATTERN})(?:/(?:{DATA_FILE_PATTERN}))*", re.ASCII)


@functools.lru_cache(maxsize=256)
def _qualified_prefixes(base_uri: str) -> tuple[str, ...]:
    """Every spelling of the table root Hudi may record, each with its trailing `/`, longest first."""
    root = base_uri.rstrip("/")
    if "://" in root:
        scheme, rest = root.split("://", 1)
        prefixes = [f"{s}://{rest}" for s in ({scheme, "s3", "s3a"} if scheme in ("s3", "s3a") else {scheme})]
    else:
        prefixes = [root, f"file:{root}", f"file://{root}"]
    return tuple(p + "/" for p in sorted(prefixes, key=len, reverse=True))


def _plain_data_file_name(name: str) -> bool:
    """A data file name that `data_file_path` would accept unchanged as the last segment of a path
    below a canonical folder (no characters or prefixes it refuses or rewrites)."""
    return ("\\" not in name and "\x00" not in name and ":" not in name and not name.startswith(".hoodie")
            and is_data_file_name(name))
