"""Declarative maintenance runner for Apache Hudi tables."""

from __future__ import annotations

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # `runner.write` is imported on first use only, so `import runner` (and `runner validate`)
    # stays light and never loads the writer's Spark and Arrow code.
    if name == "write":
        from runner.writer import write

        return write
    raise AttributeError(f"module 'runner' has no attribute {name!r}")
