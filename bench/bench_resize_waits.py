"""How long the rewrite's two threads wait: the measurement that does not depend on the machine's load.

Generates the benchmark table of `bench_resize.py`, then `--rounds` times rewrites its two first
groups at once on two threads (as the driver engine runs them). Per thread, from
`/proc/thread-self/schedstat` and `getrusage(RUSAGE_THREAD)`, summed over the two threads: wall,
on-CPU time, run-queue wait (other processes had the core), the rest ("sleep": waits for the GIL and
the fsync) and voluntary context switches. Linux only.

    .venv/bin/python bench/bench_resize_waits.py --total-mb 512 --files 500 --rounds 4
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench_resize import MIB, generate

from runner.declarations.model import FileSizing
from runner.execute import resize_job
from runner.hudi.state import read_table_state
from runner.plan.sizing import plan_sizing
from runner.storage import storage_for

FIGURES = ("wall", "cpu", "runq", "sleep", "switches")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-mb", type=int, default=512)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--max-file-mb", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_resize_waits_"))
    try:
        source = generate(root, args.total_mb, args.files)
        limit = args.max_file_mb * MIB
        storage = storage_for(str(source))
        step = plan_sizing(FileSizing(max_file_size=limit, small_file_limit=limit - 1), read_table_state(storage))
        assert step is not None and len(step.groups) >= 2
        groups = [resize_job.GroupRewrite(g.partition, f"0000000{i}-0000-0000-0000-000000000000-0",
                                          tuple(f.path for f in g.files)) for i, g in enumerate(step.groups[:2])]
        results: list[tuple[float, ...]] = []
        for r in range(args.rounds):
            os.sync()
            per_thread: list[tuple[float, ...]] = []
            threads = [threading.Thread(target=_rewrite, args=(storage, source, g, i, per_thread))
                       for i, g in enumerate(groups)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            results.append(tuple(sum(x[k] for x in per_thread) for k in range(len(FIGURES))))
            print(f"round {r + 1} " + ", ".join(f"{f} {v:.2f}" for f, v in zip(FIGURES, results[-1], strict=True))
                  + f"; load average {os.getloadavg()[0]:.1f}", flush=True)
        print("median: " + ", ".join(f"{f} {statistics.median(x[k] for x in results):.2f}"
                                     for k, f in enumerate(FIGURES)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _rewrite(storage: object, source: Path, group: resize_job.GroupRewrite, index: int,
             out: list[tuple[float, ...]]) -> None:
    wall, (cpu, runq, switches) = time.perf_counter(), _thread_clock()
    written = resize_job.rewrite_group(storage, group, "20240102000000000", f"{index}-0-0")  # type: ignore[arg-type]
    wall, (cpu2, runq2, switches2) = time.perf_counter() - wall, _thread_clock()
    out.append((wall, cpu2 - cpu, runq2 - runq, wall - (cpu2 - cpu) - (runq2 - runq), switches2 - switches))
    (source / written.path).unlink()


def _thread_clock() -> tuple[float, float, int]:
    """This thread's on-CPU and run-queue seconds and its voluntary context switches so far."""
    with open("/proc/thread-self/schedstat") as f:
        on_cpu, waiting, _ = f.read().split()
    return int(on_cpu) / 1e9, int(waiting) / 1e9, resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw


if __name__ == "__main__":
    main()
