"""Files the runner writes on the local disk beside a project (the run report, the docs page):
refused before any work when something else stands where they go, and replaced in one rename."""

from __future__ import annotations

import os
import stat
import uuid
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


def replace_text(path: Path, text: str) -> None:
    """Replace `path` with `text`, whole, in one rename, creating its folders.

    Two runs may write the same file at once (two applies in one project, two `runner docs
    generate`). Each writes a temporary file of its own beside `path` and renames it into place,
    so a reader finds the previous content or a new one, never a truncated or interleaved file,
    and what stays is whatever was renamed last, complete.

    A pipe or device (`--out /dev/stdout`, `--out >(jq .)`) is written into as it stands: renamed
    over, it became a plain file (as root, `--out /dev/full` replaced the device). A symbolic link
    names the file to replace, which the rename would otherwise put in the link's place.
    """
    try:
        mode: int | None = path.stat().st_mode
    except OSError:  # absent (or a link to nothing): created below
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name no other run picks; created as any file is (the umask's mode, not mkstemp's 0600).
    temp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        temp.write_text(text, encoding="utf-8")
        _flush_to_disk(temp)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _flush_to_disk(path: Path) -> None:
    """The rename must not publish a file whose bytes are not on disk yet (after a crash the new
    name could hold nothing)."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
