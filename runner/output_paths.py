"""Files the runner writes on the local disk beside a project (the run report, the docs page):
refused before any work when something else stands where they go."""

from __future__ import annotations

import os
from pathlib import Path

from runner.errors import StorageError


def refuse_blocked_output(target: Path, *, what: str, fix: str | None = None) -> None:
    """Refuse, before any work, to write `target` (a file) when something else stands in its way.

    A file where its folder (or a parent) goes, or a folder where the file goes, fails the write
    late and with only the system's words ("File exists", "Not a directory"); this names the path,
    what was expected there and what was found.

    Args:
        target: the file the command will write, its folders created as needed.
        what: what the file is, for the message ("the report").
        fix: another way out than moving PATH away ("pass another folder with --out").
    """
    for path in target.parents:
        if path.is_dir():
            break  # every folder above an existing one exists
        if path.is_symlink() and not path.exists():
            found = f"a symbolic link to {os.readlink(path)}, which does not exist"
        elif path.exists():
            found = "a file"
        else:
            continue  # created by the write
        raise StorageError(f"cannot write {target}: {path} is {found}, but {what} needs a folder there; "
                           "nothing was changed", hint=_hint(path, fix))
    if target.is_dir():
        raise StorageError(f"cannot write {target}: {target} is a folder, but {what} is written to a file of "
                           "that name; nothing was changed", hint=_hint(target, fix))


def _hint(path: Path, fix: str | None) -> str:
    return f"move or remove {path}" + (f", or {fix}" if fix else ".")
