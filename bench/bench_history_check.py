"""CPU of the re-check apply makes before a clean's plan is written and before its first delete
(`runner.hudi.pending_undo.history_moved`): one timeline read, whose listing of `.hoodie` also says
whether a metadata table is there, on synthetic tables of 10 and 200 commits. A resize conflict
check runs the same comparison on the table metadata it has just read, with no read of its own.

    .venv/bin/python bench/bench_history_check.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from runner.hudi.pending_undo import history_moved
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-history-"))
    try:
        for commits in (10, 200):
            builder = TableBuilder(work / str(commits), name="t", partitions=["p=a"], version=8, tiny=True)
            for _ in range(commits):
                builder.commit(writes=1)
            storage = storage_for(str(work / str(commits)))
            meta = read_table_metadata(storage)
            runs = []
            for _ in range(50):
                started = time.process_time()
                assert history_moved(storage, meta, savepoints=True) is None
                runs.append(time.process_time() - started)
            print(f"{commits} commits ({len(meta.timeline.files)} instant files): history_moved CPU median "
                  f"{1000 * statistics.median(runs):.2f} ms, min {1000 * min(runs):.2f}, max {1000 * max(runs):.2f} "
                  f"(50 calls), load {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
