"""The runner's one error hierarchy.

Every failure the user can cause or meet (a bad declaration, a corrupt timeline file, a table that
changed since planning) is a `RunnerError`. The CLI prints `str(error)` and exits 1; only an
unexpected exception (a bug) gets a traceback, and only with `--debug`.

Messages say what went wrong, where (file, field), what was expected and what was found, and end
with a "To fix this" line when there is an obvious fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class RunnerError(Exception):
    """Root of every error the runner reports to the user (exit code 1).

    Args:
        message: what went wrong, including where and expected-vs-found.
        hint: an optional "To fix this, ..." sentence appended on its own line.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message)

    def __str__(self) -> str:
        return f"{self.message}\nTo fix this, {self.hint}" if self.hint else self.message

    @property
    def kind(self) -> str:
        """Stable, machine-readable error type used in JSON output (`error.type`)."""
        return type(self).__name__

    def to_json(self) -> dict[str, str]:
        """The `error` object of every JSON output (plan tables, run report, `--format json`)."""
        return {"type": self.kind, "message": str(self)}


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem in one declaration file, located as precisely as YAML allows.

    Rendered as `tables/orders.yml:7:3: clean.commits_retained: must be >= 1, got 0`.
    `line` and `column` are 1-based; 0 means unknown (for example a file that failed to read).
    """

    file: str
    line: int
    column: int
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line <= 0 else f"{self.file}:{self.line}:{self.column}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "field": self.field,
            "message": self.message,
        }


class DeclarationError(RunnerError):
    """The project or table declarations are invalid; carries every problem found in one run."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        count = len(self.problems)
        header = f"{count} problem{'s' if count != 1 else ''} in the declarations:"
        super().__init__("\n".join([header, *(f"  {p}" for p in self.problems)]))


class SelectionError(RunnerError):
    """A `--select`/`--exclude`/`--state` argument cannot be understood or resolved."""


class StorageError(RunnerError):
    """Reading, listing, writing or deleting a path failed (not a format problem)."""


class TableError(RunnerError):
    """A problem with one Hudi table on disk. `path` is the file or folder at fault."""

    def __init__(self, message: str, *, path: str, hint: str | None = None) -> None:
        self.path = path
        super().__init__(message, hint=hint)


class NotAHudiTableError(TableError):
    """The folder has no `.hoodie/hoodie.properties`."""

    @staticmethod
    def found(root_is_dir: bool | None) -> str:
        """What stands at a declared path without a `.hoodie` folder (None: nothing), for the message."""
        if root_is_dir is None:
            return "it does not exist"
        return "it has no .hoodie folder" if root_is_dir else "it is a file, not a table's folder"


class UnsupportedTableError(TableError):
    """The table's version or layout is one the runner refuses to touch."""


class TimelineError(TableError):
    """A timeline file name or its content is malformed."""


class CorruptMetadataError(TableError):
    """An instant file's Avro or JSON content cannot be decoded."""


class PlanError(RunnerError):
    """A plan file cannot be read, is of an unknown version, or asks for something unsafe."""


class RequirementFailed(RunnerError):
    """The table changed between planning and applying; nothing was written."""


class RefusedError(RunnerError):
    """The runner declines to act because acting could break a reader or lose data."""


class LockError(RunnerError):
    """Another runner holds the table's lock."""


class StepFailed(RunnerError):
    """A Spark job or a timeline write failed while applying a plan."""


class InternalError(RunnerError):
    """An unexpected exception (a bug), reported like any other error so that one table's bug
    never stops the other tables; the CLI shows its traceback only with `--debug`."""

    @classmethod
    def wrapping(cls, error: BaseException) -> InternalError:
        return cls(f"internal error: {type(error).__name__}: {error}")


class Interrupted(RunnerError):
    """The user stopped the run (Ctrl-C); the next run resumes where this one stopped."""
