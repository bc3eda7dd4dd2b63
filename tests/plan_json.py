"""Reading a plan's JSON in tests: the step of one kind of a table entry."""

from __future__ import annotations

from typing import Any


def step(table: dict[str, Any], kind: str) -> Any:
    """The table's step of `kind` (`clean`, `resize`, `update_metadata_table`, ...), or None."""
    return next((s for s in table["steps"] if s["kind"] == kind), None)
