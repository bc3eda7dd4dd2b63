"""One table's progress reports (`runner.progress`) shown on the run's live display."""

from __future__ import annotations

from typing import Protocol


class Display(Protocol):
    """What `runner.commands.terminal.Activity` offers (directly, or locked for threads)."""

    def count(self, description: str, total: int | None, total_bytes: int | None = None, unit: str = "") -> None: ...

    def advance(self, amount: int, nbytes: int = 0) -> None: ...


class TableProgress:
    """A `runner.progress.Sink` labelling each step with its table: `orders: deleting 4 files`."""

    def __init__(self, display: Display, table: str) -> None:
        self._display = display
        self._table = table

    def begin(self, what: str, unit: str, total: int | None, total_bytes: int | None) -> None:
        self._display.count(f"{self._table}: {what}", total, total_bytes, unit)

    def advance(self, items: int, nbytes: int) -> None:
        self._display.advance(items, nbytes)
