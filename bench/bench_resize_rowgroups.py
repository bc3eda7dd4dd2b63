"""The resize task's row-group trade-off: decoded-row buffer size against memory and file size.

Generates one group of `--group-mb` MiB in `--files` small files (the data of `bench_resize.py`),
then rewrites it with `rewrite_group` once per buffer size, each in a fresh process so that its
peak resident memory (`ru_maxrss`) is the task's alone, and reports the peak, the file size, the
row groups written and the time. The record-key footer is left out (the bloom filter's memory is its
own matter, measured in `bench_resize.py`); `--with-footer` keeps it. `--old REV` also runs the
`resize_job.py` of a git revision (e.g. the whole-group rewrite before streaming) in the same way.

    .venv/bin/python bench/bench_resize_rowgroups.py [--group-mb 128] [--files 128] [--buffers 32,64,128,256]
    .venv/bin/python bench/bench_resize_rowgroups.py --quick    # 16 MiB in 16 files, 4 and 128 MiB buffers
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

CHILD = """
import json, os, resource, sys, time, uuid
from pathlib import Path
sys.path.insert(0, {bench!r})
import runner.hudi.footer as footer
if not {with_footer!r}:
    footer.record_key_footer = lambda keys: {{}}
if {old!r}:
    sys.path.insert(0, {old!r})
    import old_resize_job as job
else:
    import runner.execute.resize_job as job
from runner.storage import storage_for
import pyarrow.parquet as pq
table = Path({table!r})
inputs = tuple(f"{partition}/{{p.name}}" for p in sorted((table / {partition!r}).glob("*.parquet")))
kwargs = {{}} if {old!r} else {{"buffer_bytes": {buffer!r}}}
started = time.perf_counter()
done = job.rewrite_group(storage_for(str(table)), job.GroupRewrite({partition!r}, f"{{uuid.uuid4()}}-0", inputs),
                         "20240102000000000", "0-0-0", **kwargs)
seconds = time.perf_counter() - started
groups = pq.ParquetFile(table / done.path).metadata.num_row_groups
os.unlink(table / done.path)
print(json.dumps({{"seconds": seconds, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "size_mib": done.size / 2**20, "row_groups": groups}}))
"""


def run(table: Path, buffer: int, with_footer: bool, old: str) -> dict[str, float]:
    from bench_resize import PARTITION

    code = CHILD.format(bench=str(BENCH), with_footer=with_footer, old=old, table=str(table),
                        partition=PARTITION, buffer=buffer)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--group-mb", type=int, default=128)
    parser.add_argument("--files", type=int, default=128)
    parser.add_argument("--buffers", default="32,64,128,256", help="decoded-row buffers to try, MiB")
    parser.add_argument("--with-footer", action="store_true")
    parser.add_argument("--old", default="", help="also run resize_job.py of this git revision")
    parser.add_argument("--quick", action="store_true", help="a 16 MiB group in 16 files, buffers of 4 and 128 MiB")
    args = parser.parse_args()
    if args.quick:
        args.group_mb, args.files, args.buffers = 16, 16, "4,128"
    sys.path.insert(0, str(BENCH))
    from bench_resize import generate

    with tempfile.TemporaryDirectory(prefix="bench_rowgroups_") as work:
        table = generate(Path(work), args.group_mb, args.files)
        old_dir = ""
        if args.old:
            old_dir = str(Path(work) / "old")
            Path(old_dir).mkdir()
            source = subprocess.run(["git", "show", f"{args.old}:runner/execute/resize_job.py"], check=True,
                                    capture_output=True, text=True, cwd=ROOT).stdout
            (Path(old_dir) / "old_resize_job.py").write_text(source)
        print(f"one group of {args.group_mb} MiB in {args.files} files; footer "
              f"{'included' if args.with_footer else 'left out'}\n")
        print("| rewrite | peak RSS of the task process | file | row groups | seconds |")
        print("|---|---:|---:|---:|---:|")
        if old_dir:
            r = run(table, 0, args.with_footer, old_dir)
            print(f"| {args.old}: whole group in memory | {r['peak_mib']:.0f} MiB | {r['size_mib']:.1f} MiB "
                  f"| {r['row_groups']:.0f} | {r['seconds']:.1f} |")
        for mib in (int(b) for b in args.buffers.split(",")):
            r = run(table, mib * 2**20, args.with_footer, "")
            print(f"| streaming, {mib} MiB buffer | {r['peak_mib']:.0f} MiB | {r['size_mib']:.1f} MiB "
                  f"| {r['row_groups']:.0f} | {r['seconds']:.1f} |")


if __name__ == "__main__":
    main()
