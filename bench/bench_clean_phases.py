"""CPU and wall time per phase of an in-process clean apply, for comparing two versions of the runner.

Times `plan_one` as apply calls it, `LocalStorage.delete_many` alone and `apply_table` with the
deleter `runner apply` builds, each on a fresh hard-linked copy of a table that
`bench_clean.py --only apply --table DIR` built (hard links make the copies cheap, so this measures
the CPU side; the floor and real copies are `bench_clean.py`'s). CPU is the whole process's, the
delete threads' included. To compare versions, run it alternately from a snapshot of each commit
(`git archive COMMIT | tar -x -C DIR`, then `PYTHONPATH=DIR python DIR/bench/bench_clean_phases.py
...`, since the virtualenv's own `runner` is this worktree's): a version without
`plan_one(sizes=...)` is timed as it plans.
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table
from runner.execute.deleter import Deleter
from runner.planner import plan_one
from runner.storage import LocalStorage

KEEP_ONE = CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
LOCAL = SparkSettings(master="local[2]")


def declaration(path: str) -> TableDeclaration:
    return TableDeclaration(name="bench_clean", path=path, source_file="tables/bench_clean.yml", clean=KEEP_ONE,
                            file_sizing=FileSizing(small_file_limit=0))


def fresh_copy(master: str, copy: str) -> None:
    shutil.rmtree(copy, ignore_errors=True)
    subprocess.run(["cp", "-al", master, copy], check=True)
    os.sync()


def timed(action: Callable[[], Any]) -> tuple[float, float, Any]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = action()
    return time.process_time() - cpu, time.perf_counter() - wall, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help="the table bench_clean.py --table built (never changed)")
    parser.add_argument("--workdir", required=True, help="where the hard-linked copies go (same file system)")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    copy = os.path.join(args.workdir, "phases-copy")
    as_apply = {"sizes": False} if "sizes" in inspect.signature(plan_one).parameters else {}
    now = datetime.now(UTC)
    for _ in range(args.runs):
        fresh_copy(args.table, copy)
        plan_cpu, plan_wall, plan = timed(
            lambda: plan_one(declaration(copy), LocalStorage(copy), now=now, explain=False, **as_apply))
        paths = [f.path for f in plan.clean.files_to_delete]
        delete_cpu, delete_wall, results = timed(lambda paths=paths: LocalStorage(copy).delete_many(paths))
        assert all(r.deleted for r in results), "a delete failed"
        fresh_copy(args.table, copy)
        apply_cpu, apply_wall, done = timed(lambda: apply_table(
            declaration(copy), None, now=now, spark_settings=LOCAL, deleter_factory=lambda: Deleter(LOCAL)))
        assert done.files_deleted == len(paths), done
        print(f"plan_one cpu {plan_cpu * 1000:.0f} ms wall {plan_wall * 1000:.0f} ms | "
              f"delete_many cpu {delete_cpu * 1000:.0f} ms wall {delete_wall * 1000:.0f} ms | "
              f"apply cpu {apply_cpu * 1000:.0f} ms wall {apply_wall * 1000:.0f} ms | "
              f"bytes freed {done.bytes_deleted:,} | load {os.getloadavg()[0]:.1f}", flush=True)
    shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    main()
