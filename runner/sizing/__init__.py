"""File sizing: where Hudi writes inserts, its record-size estimate, and small-file bins."""

from __future__ import annotations

from runner.sizing.assign import InsertBucket, assign_inserts

__all__ = [
    "InsertBucket",
    "assign_inserts",
]
