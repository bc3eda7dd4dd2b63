"""File sizing: where Hudi writes inserts, its record-size estimate, and small-file bins."""

from __future__ import annotations

from runner.sizing.assign import InsertBucket, assign_inserts
from runner.sizing.bin_packing import Bin, plan_bins
from runner.sizing.record_size import CommitSize, average_record_size

__all__ = [
    "Bin",
    "CommitSize",
    "InsertBucket",
    "assign_inserts",
    "average_record_size",
    "plan_bins",
]
