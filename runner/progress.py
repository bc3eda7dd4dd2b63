"""Progress of the long steps (listing, deleting, rewriting), from the code doing the work to
whatever shows it.

The code that lists, deletes and rewrites files reports counts and bytes here; a command with a
display (a terminal) installs a sink around each table's work, and without one every report goes
nowhere. Context variables carry the sink, so tables applied in parallel threads each report to
their own, and no layer below the commands needs to know a display exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Sink(Protocol):
    """Receives one step at a time: `begin` starts it, `advance` moves it."""

    def begin(self, what: str, unit: str, total: int | None, total_bytes: int | None) -> None: ...

    def advance(self, items: int, nbytes: int) -> None: ...


_sink: ContextVar[Sink | None] = ContextVar("runner_progress_sink", default=None)
# Sizes of the files the current step works on (a plan knows them), for byte counts.
_sizes: ContextVar[Mapping[str, int] | None] = ContextVar("runner_progress_sizes", default=None)


@contextmanager
def reporting_to(sink: Sink) -> Iterator[None]:
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


def begin(what: str, unit: str, total: int | None = None, total_bytes: int | None = None) -> None:
    """Start a step: `what` describes it, counted in `unit` (plural, e.g. "files") up to `total`
    (None while unknown, as when listing), with `total_bytes` when the sizes are known."""
    sink = _sink.get()
    if sink is not None:
        sink.begin(what, unit, total, total_bytes)


def advance(items: int, nbytes: int = 0) -> None:
    sink = _sink.get()
    if sink is not None:
        sink.advance(items, nbytes)


@contextmanager
def known_sizes(sizes: Mapping[str, int]) -> Iterator[None]:
    """Make the sizes of the step's files (relative path → bytes) known to `bytes_of`."""
    token = _sizes.set(sizes)
    try:
        yield
    finally:
        _sizes.reset(token)


def bytes_of(paths: Iterable[str]) -> int | None:
    """Total size of `paths` when the current step knows their sizes, else None."""
    sizes = _sizes.get()
    if sizes is None:
        return None
    return sum(sizes.get(path, 0) for path in paths)
