"""Arrow's allocator in a process the runner owns (the `runner` command), chosen before pyarrow
loads: Arrow reads `ARROW_DEFAULT_MEMORY_POOL` once, as it loads.

jemalloc, which pyarrow's Linux builds carry, instead of Arrow's default mimalloc, which returned
each decoded batch's freed pages to the kernel and faulted fresh ones in for the next (13 % of the
rewrite threads' samples in a profile; the rewrite took 0.94x the CPU with jemalloc in 8
interleaved pairs, bench/README.md, "resize6 round"). A Spark session started from the process
passes it on to its Python workers, where `resize_job.use_rewrite_allocator` covers the case of
pyarrow loaded first.

Only the command chooses: `import runner` in someone's pipeline (for `runner.write`) leaves that
process's allocator as its owner set it. A choice already in the environment is always kept.
`runner.write` says once, in its log, how the pipeline's owner can choose it (`library_hint`):
with jemalloc the bench's upsert took about 0.8x the wall of one under mimalloc (bench/README.md,
"writer: the allocator").
"""

from __future__ import annotations

import os
import platform
import sys

ENVIRONMENT_KEY = "ARROW_DEFAULT_MEMORY_POOL"
# pyarrow's Linux wheels carry jemalloc on x86-64 only: since pyarrow 18 the ARM wheels leave it out
# (apache/arrow#44380), and naming it there makes Arrow print "Unsupported backend" on stderr in
# the command and in every Spark worker that inherits the environment.
_JEMALLOC_MACHINES = frozenset({"x86_64", "amd64"})


def choose_before_pyarrow() -> None:
    """Ask for jemalloc, unless pyarrow has loaded (too late: the rewrite then sets pyarrow's
    default pool itself), the environment already names an allocator, or pyarrow's wheels for
    this machine lack jemalloc."""
    if ("pyarrow" not in sys.modules and sys.platform == "linux"
            and platform.machine().lower() in _JEMALLOC_MACHINES):
        os.environ.setdefault(ENVIRONMENT_KEY, "jemalloc")


_hinted = False


def library_hint() -> str | None:
    """Once per process, where Arrow runs on its default mimalloc, the environment chose nothing
    and this pyarrow carries jemalloc: how the process's owner can ask for jemalloc. None otherwise
    (and every time after the first)."""
    global _hinted
    if _hinted or os.environ.get(ENVIRONMENT_KEY):
        return None
    import pyarrow as pa

    if pa.default_memory_pool().backend_name != "mimalloc" or "jemalloc" not in pa.supported_memory_backends():
        return None
    _hinted = True
    return (f"Arrow allocates with mimalloc in this process; set {ENVIRONMENT_KEY}=jemalloc in the "
            "environment before Python starts for faster writes (the upsert bench took about 0.8x the "
            "time; runner.write leaves the process's allocator to its owner)")
