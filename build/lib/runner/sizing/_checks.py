"""Argument checks shared by the sizing functions.

The sizing functions are internal, pure helpers fed by already validated declarations and a
parsed table state, so a bad argument is a bug in the caller: they raise `ValueError`, not a
`RunnerError`, and the message names the argument and the value found.
"""

from __future__ import annotations

from collections.abc import Sequence


def require_positive(name: str, value: int) -> None:
    """Raise `ValueError` unless `value > 0`."""
    if value <= 0:
        raise ValueError(f"{name} must be a positive number of bytes or records, found {value}")


def require_non_negative(name: str, value: int) -> None:
    """Raise `ValueError` unless `value >= 0`."""
    if value < 0:
        raise ValueError(f"{name} must be >= 0, found {value}")


def require_file_sizes(files: Sequence[tuple[str, int]]) -> None:
    """Check `(file_id, size_bytes)` pairs: sizes >= 0 and each file id listed once.

    A partition has one latest base file per file group, so a repeated file id means the caller
    passed every version of a file group rather than its latest base file.
    """
    seen: set[str] = set()
    for file_id, size in files:
        if file_id in seen:
            raise ValueError(
                f"file id {file_id!r} is listed twice; pass only the latest base file of each file group"
            )
        seen.add(file_id)
        require_non_negative(f"size of file {file_id!r}", size)
