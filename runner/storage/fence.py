"""Write fences: stop every write to a table the moment its lock is lost.

While a process holds a table's lock, `fence` registers a check that every mutating call on that
table (`write_new`, `overwrite`, `delete`, `delete_tree`, `delete_many`) runs first, in any thread of
the process, through whichever `Storage` object makes it. The lock (`runner.storage.lock`) uses it
to refuse all writing once it finds someone else holds the lock. Fences live in this process only:
Spark executors never see one, which is why `check_fence` costs nothing when none is registered.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator

_fences: dict[str, Callable[[], None]] = {}
_fences_guard = threading.Lock()


@functools.lru_cache(maxsize=256)
def fence_key(uri: str) -> str:
    """One key per table root however it is spelled (`s3a://` or `s3://`, a symlinked local path).

    Cached: it runs before every delete of a clean while the lock is held.
    """
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return os.path.realpath(uri)
    return f"{'s3' if scheme.lower() == 's3a' else scheme.lower()}://{rest.rstrip('/')}"


@contextlib.contextmanager
def fence(uri: str, check: Callable[[], None]) -> Iterator[None]:
    """Run `check` before every mutation of the table rooted at `uri`, in this process, until exit.

    `check` raises to forbid the write. Only one fence per table root: a second is a programming
    error (one process holds a table's lock once).
    """
    key = fence_key(uri)
    with _fences_guard:
        if key in _fences:
            raise RuntimeError(f"a write fence is already registered for {uri}")
        _fences[key] = check
    try:
        yield
    finally:
        with _fences_guard:
            _fences.pop(key, None)


def check_fence(uri: str) -> None:
    """Run the fence registered for the table at `uri`, if any (see `fence`)."""
    if not _fences:
        return  # the common case, and always so in Spark executors: no lookup cost per file
    with _fences_guard:
        check = _fences.get(fence_key(uri))
    if check is not None:
        check()
