"""What every command returns: an exit code plus a text and a JSON rendering of the same result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """The exit-code contract: 0 OK / in sync, 1 failure, 2 changes pending (plan only), 3 drift
    only (plan: nothing to apply, but a table differs from its `table:` block)."""

    OK = 0
    FAILURE = 1
    CHANGES = 2
    DRIFT = 3


@dataclass(frozen=True, slots=True)
class CommandResult:
    exit_code: ExitCode
    text: str
    data: dict[str, Any]
    # Builds a rich renderable (a summary table) shown after `text` on a terminal only; built
    # lazily so that piped and JSON output never import rich.
    pretty: Callable[[], Any] | None = None
