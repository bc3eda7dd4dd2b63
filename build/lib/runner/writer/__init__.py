"""Writing DataFrames into Hudi copy-on-write tables (table version 6), as Hudi 0.14 would.

See `runner.writer.write` for the flow and README.md for the module map.
"""

from runner.writer.write import Operation, WriteResult, write

__all__ = ["Operation", "WriteResult", "write"]
