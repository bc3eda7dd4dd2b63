"""What a person at a terminal sees: colours, tables and progress; plain text for everything else.

Colour and live progress are for a TTY only. Under `NO_COLOR` (https://no-color.org) or
`TERM=dumb` there is no colour; when output is piped or captured, the text is exactly what the
command rendered, so scripts and tests read the same bytes every time. `rich` is imported only when
a TTY is attached, which keeps `runner validate` quick.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import IO, Any, Self

from runner.service.jvm_output import jvm_output_to

__all__ = ["Activity", "emit", "jvm_output_to", "summary_table"]

# Line prefixes of the plan and report views, Terraform-style: `-` delete, `~` change or rewrite,
# `=` in sync, `!` failed or drifted.
_STYLES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^! "), "bold red"),
    (re.compile(r"^~ "), "bold yellow"),
    (re.compile(r"^= "), "green"),
    (re.compile(r"^\? "), "bold magenta"),
    (re.compile(r"^\s+- "), "red"),
    (re.compile(r"^\s+~ "), "yellow"),
    (re.compile(r"^\s+\+ "), "green"),
    (re.compile(r"^\s+keep "), "cyan"),
    (re.compile(r"^\s+(note|drift): "), "magenta"),
    (re.compile(r"^(Plan|Apply): "), "bold"),
    (re.compile(r"^error: "), "bold red"),
)


def is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def wants_colour(stream: IO[str]) -> bool:
    return is_tty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def console(stream: IO[str]) -> Any:
    from rich.console import Console

    colour = wants_colour(stream)
    return Console(file=stream, force_terminal=is_tty(stream), no_color=not colour,
                   color_system="auto" if colour else None, highlight=False, soft_wrap=True)


def emit(text: str, *, stream: IO[str] | None = None, pretty: Callable[[], Any] | None = None) -> None:
    """Print a command's text: coloured line by line on a colour TTY, else exactly as rendered.

    `pretty`, when given, builds a rich renderable (a table) shown after the text on a TTY only.
    """
    out = stream or sys.stdout
    if not is_tty(out):
        print(text, file=out)
        return
    from rich.text import Text

    con = console(out)
    for line in text.splitlines() or [""]:
        con.print(Text(line, style=style_of(line) if wants_colour(out) else ""))
    if pretty is not None:
        con.print(pretty())


def style_of(line: str) -> str:
    return next((style for pattern, style in _STYLES if pattern.search(line)), "")


class Activity:
    """Live progress for the long steps of one command, on stderr when it is a TTY; silent otherwise.

    `step(description)` shows a spinner with that description; `count(description, total)` a bar
    that `advance` moves. Both end with `done(line)`, which leaves a one-line record behind.
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stderr
        self._progress: Any = None
        self._task: Any = None
        self._own: IO[str] | None = None
        self._label = ""
        self._done = 0
        self._total: int | None = None

    @property
    def live(self) -> bool:
        return self._progress is not None

    def __enter__(self) -> Self:
        if is_tty(self._stream):
            # A private copy of the terminal's descriptor: the display keeps drawing while fd 2
            # itself is pointed at Spark's log (see `jvm_output_to`).
            self._own = os.fdopen(os.dup(self._stream.fileno()), "w", buffering=1)
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                      TimeElapsedColumn(), console=console(self._own),
                                      transient=False)
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        if self._own is not None:
            self._own.close()
            self._own = None

    def step(self, description: str) -> None:
        self._replace(description, total=None)

    def count(self, description: str, total: int) -> None:
        self._replace(description, total=total)

    def advance(self, amount: int) -> None:
        if self._progress is not None and self._task is not None:
            self._done += amount
            self._progress.update(self._task, advance=amount, description=self._described())
            self._progress.refresh()  # draw every step of the count, however fast the next one comes

    def done(self, line: str) -> None:
        """Finish the current step and leave `line` above the live display."""
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
            self._task = None
        self._progress.console.print(line, markup=False, highlight=False)

    def _replace(self, description: str, *, total: int | None) -> None:
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._label, self._done, self._total = description, 0, total
        self._task = self._progress.add_task(self._described(), total=total)

    def _described(self) -> str:
        return self._label if self._total is None else f"{self._label} ({self._done:,}/{self._total:,})"


def summary_table(title: str, columns: list[str], rows: list[list[str]], *, styles: list[str] | None = None) -> Any:
    """A rich table; the first column holds names, the others numbers (right-aligned)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right", no_wrap=index == 0)
    for index, row in enumerate(rows):
        table.add_row(*row, style=(styles or [""] * len(rows))[index])
    return table
