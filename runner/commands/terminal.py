"""What a person at a terminal sees: colours, tables and progress; plain text for everything else.

Colour and live progress are for a TTY only. Under `NO_COLOR` (https://no-color.org) or
`TERM=dumb` there is no colour; when output is piped or captured, the text is exactly what the
command rendered, so scripts and tests read the same bytes every time. `FORCE_COLOR` or
`CLICOLOR_FORCE` (set and not 0) colours the text and tables even when piped (a CI log, `| less -R`),
as rich and most CLIs do; `NO_COLOR` still wins, and live progress stays a terminal's only. `rich`
is imported only when colour or a TTY is wanted, which keeps `runner validate` quick.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import IO, Any, Self

from runner.declarations.text import shown

__all__ = ["Activity", "emit", "summary_table"]  # and `jvm_output_to`, on first use (below)


def __getattr__(name: str) -> object:
    # Re-exported on first use only: importing the service layer loads pyarrow and the executor,
    # which `runner validate` and `runner ls` never need (about 0.35 s of CPU at every start).
    if name == "jvm_output_to":
        from runner.service.jvm_output import jvm_output_to

        return jvm_output_to
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

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
    (re.compile(r"^(Plan|Apply|Status|Next): "), "bold"),
    (re.compile(r"^error: "), "bold red"),
)


def is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def forced_colour() -> bool:
    """`FORCE_COLOR` or `CLICOLOR_FORCE` asks for colour without a terminal; `NO_COLOR` overrides."""
    if os.environ.get("NO_COLOR"):
        return False
    return any(os.environ.get(name, "") not in ("", "0") for name in ("FORCE_COLOR", "CLICOLOR_FORCE"))


def styled(stream: IO[str]) -> bool:
    """Whether output goes through rich (colour when wanted, tables): a TTY, or colour forced."""
    return is_tty(stream) or forced_colour()


def wants_colour(stream: IO[str]) -> bool:
    if forced_colour():
        return True
    return is_tty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def console(stream: IO[str]) -> Any:
    from rich.console import Console

    colour = wants_colour(stream)
    return Console(file=stream, force_terminal=styled(stream), no_color=not colour,
                   color_system="auto" if colour else None, highlight=False, soft_wrap=True)


def emit(text: str, *, stream: IO[str] | None = None, pretty: Callable[[], Any] | None = None) -> None:
    """Print a command's text: coloured line by line on a colour TTY, else exactly as rendered.

    `pretty`, when given, builds a rich renderable (a table) shown after the text on a TTY only.
    """
    out = stream or sys.stdout
    # Names from storage reach every command's text (paths, messages, notes): a control or bidi
    # character in one is shown escaped, never sent to the terminal (the text's own lines stay).
    text = shown(text, lines=True)
    if not styled(out):
        print(text, file=out)
        return
    from rich.text import Text

    con = console(out)
    lines = text.splitlines() or [""]
    # The summary table goes above the closing lines (`Plan: ...`, `Next: ...`), which stay last.
    closing = len(lines) - next((i for i, line in enumerate(reversed(lines)) if not _CLOSING.match(line)), len(lines))
    for line in lines[:closing]:
        con.print(Text(line, style=style_of(line) if wants_colour(out) else ""))
    if pretty is not None:
        _print_if_it_fits(con, pretty())
    for line in lines[closing:]:
        con.print(Text(line, style=style_of(line) if wants_colour(out) else ""))


def _print_if_it_fits(con: Any, table: Any) -> None:
    """The summary table, unless the terminal is narrower than its narrowest rendering: rich would
    squeeze its columns to nothing (empty headers and cells), and the text above says it all."""
    from rich.measure import Measurement

    # Measured without the terminal's bound, which the measurement would otherwise be clamped to.
    if Measurement.get(con, con.options.update_width(10_000), table).minimum <= con.width:
        con.print(table)


_CLOSING = re.compile(r"^((Plan|Apply|Status|Next): |Nothing to do)")


def style_of(line: str) -> str:
    return next((style for pattern, style in _STYLES if pattern.search(line)), "")


class Activity:
    """Live progress for the long steps of one command, on stderr when it is a TTY; silent otherwise.

    `step(description)` shows a spinner with that description; `count(description, total)` a bar
    that `advance` moves, with the count (and bytes, when given) beside it; a count whose total is
    unknown (a listing) keeps a spinner and shows the running count. Both end with `done(line)`,
    which leaves a one-line record behind.

    Under `NO_COLOR` or `TERM=dumb` on a terminal there is no live drawing (it needs escape codes):
    each counted step leaves one plain line with its final count instead.
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stderr
        self._progress: Any = None
        self._task: Any = None
        self._own: IO[str] | None = None
        self._label = ""
        self._done = 0
        self._total: int | None = None
        self._unit: str | None = None  # None: a plain step, no count shown
        self._bytes = 0
        self._total_bytes: int | None = None
        self._plain = False  # a terminal without colour: final counts as plain lines

    @property
    def live(self) -> bool:
        return self._progress is not None

    def __enter__(self) -> Self:
        if is_tty(self._stream):
            # A private copy of the terminal's descriptor: the display keeps drawing while fd 2
            # itself is pointed at Spark's log (see `jvm_output_to`).
            self._own = os.fdopen(os.dup(self._stream.fileno()), "w", buffering=1)
            if not wants_colour(self._stream):
                self._plain = True
                return self
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                      TimeElapsedColumn(), console=console(self._own),
                                      transient=False)
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._record_count()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        if self._own is not None:
            self._own.close()
            self._own = None

    def step(self, description: str) -> None:
        self._replace(description, total=None, unit=None)

    def count(self, description: str, total: int | None, total_bytes: int | None = None,
              unit: str = "") -> None:
        self._replace(description, total=total, unit=unit, total_bytes=total_bytes)

    def advance(self, amount: int, nbytes: int = 0) -> None:
        self._done += amount
        self._bytes += nbytes
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=amount, description=self._described())
            self._progress.refresh()  # draw every step of the count, however fast the next one comes

    def done(self, line: str) -> None:
        """Finish the current step and leave `line` above the live display."""
        self._record_count()
        self._unit = None
        if self._plain and self._own is not None:
            print(line, file=self._own)
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
            self._task = None
        self._progress.console.print(line, markup=False, highlight=False)

    def _replace(self, description: str, *, total: int | None, unit: str | None,
                 total_bytes: int | None = None) -> None:
        self._record_count()
        self._label, self._done, self._total, self._unit = description, 0, total, unit
        self._bytes, self._total_bytes = 0, total_bytes
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(self._described(), total=total)

    def _record_count(self) -> None:
        """Without live drawing, a counted step that ends leaves its final count as a plain line."""
        if self._plain and self._own is not None and self._unit is not None:
            print(self._described(), file=self._own)
            self._unit = None

    def _described(self) -> str:
        """`t: deleting (2/4 files, 900.0 KiB/1.7 MiB)`; a listing `t: listing (1,200 files, 3.1 GiB)`."""
        if self._unit is None:
            return self._label
        from runner.commands._common import human_bytes

        unit = f" {self._unit}" if self._unit else ""
        counted = f"{self._done:,}{unit}" if self._total is None else f"{self._done:,}/{self._total:,}{unit}"
        if self._total_bytes is not None:
            counted += f", {human_bytes(self._bytes)}/{human_bytes(self._total_bytes)}"
        elif self._bytes:
            counted += f", {human_bytes(self._bytes)}"
        return f"{self._label} ({counted})"


def summary_table(title: str, columns: list[str], rows: list[list[str]], *, styles: list[str] | None = None) -> Any:
    """A rich table; the first column holds names, the others numbers (right-aligned)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right", no_wrap=index == 0)
    for index, row in enumerate(rows):
        table.add_row(*row, style=(styles or [""] * len(rows))[index])
    return table
