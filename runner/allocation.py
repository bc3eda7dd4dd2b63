"""`bulk_allocation`: build a large, acyclic object graph without the cyclic collector's help.

Planning a clean builds a few objects per file (listing entries, parsed names, slices, the files to
delete, the clean plan's records): hundreds of thousands for a large table. CPython's cyclic garbage
collector runs every few hundred allocations and, as its older generations fill up, re-walks the
growing set of live objects each time, only to find nothing: these objects hold no reference
cycles, and reference counting frees them as usual. Measured on a 50,000-file table, the collector
was about a quarter of `plan_one`'s CPU (bench/README.md, "clean"). A local bulk delete
(`LocalStorage.delete_many`) is the same kind of work: a result per file, and a full collection
there walked the whole heap, the clean plan included, while the delete threads waited for the GIL.

Pausing it is safe for that reason: nothing is leaked, and any cycle made meanwhile is collected
at the first collection after the block.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic collector for the block, if it was running; nests and tolerates threads.

    Only the call that paused it resumes it, so a nested block, or one in a thread that found it
    already paused, never turns it back on early for good; if two threads race, the collector ends
    running, never paused for good.
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
