"""Test support: real Hudi tables on disk and table states in memory, without Spark.

`TableBuilder` writes a Hudi table with pyarrow, one operation at a time, and knows what a correct
reader must see; `StateBuilder` builds a `TableState` for planner tests without touching a disk.
Only `runner.demo`, `bench/` and `tests/` may import this package (tests/test_layering.py): the
product never depends on its own test fixtures. The map is in README.md beside this file.
"""

from runner.testing.expected import ExpectedSlice, SyntheticFile
from runner.testing.states import StateBuilder
from runner.testing.tables import COPY_ON_WRITE, MERGE_ON_READ, TableBuilder

__all__ = ["COPY_ON_WRITE", "MERGE_ON_READ", "ExpectedSlice", "StateBuilder", "SyntheticFile", "TableBuilder"]
