"""Declarative maintenance runner for Apache Hudi tables."""

from __future__ import annotations

import os
import sys

__version__ = "0.1.0"

# Arrow's allocator, chosen before pyarrow loads (Arrow reads this once, as it loads), unless the
# environment chose one: jemalloc, which pyarrow's Linux builds carry, instead of Arrow's default
# mimalloc, which returned each decoded batch's freed pages to the kernel and faulted fresh ones in
# for the next (13 % of the rewrite threads' samples in a profile; the rewrite took 0.94x the CPU
# with jemalloc in 8 interleaved pairs, bench/README.md, "resize6 round"). A Spark session started
# from this process passes it on to its Python workers. Where pyarrow loaded first,
# `resize_job.use_rewrite_allocator` sets pyarrow's own default pool instead, which most but not all
# of Arrow's allocations take.
if "pyarrow" not in sys.modules and sys.platform == "linux":
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")


def __getattr__(name: str) -> object:
    # `runner.write` is imported on first use only, so `import runner` (and `runner validate`)
    # stays light and never loads the writer's Spark and Arrow code.
    if name == "write":
        from runner.writer import write

        return write
    raise AttributeError(f"module 'runner' has no attribute {name!r}")
