"""A long list named in a message: its first few items, then how many more.

Refusals and reports name the paths or partitions they are about; a clean of thousands would bury
the reason, so messages show a few and count the rest, all in one way.
"""

from __future__ import annotations

from collections.abc import Sequence


def shortlist(items: Sequence[str], limit: int) -> str:
    """`items` joined by commas, at most `limit` of them, then " and N more" for the rest."""
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more
