"""Run every `bench/bench_*.py` in turn with its quick settings; `make bench` calls this.

A script's quick settings are its defaults, or `--quick` when its `--help` offers that flag (for
scripts whose defaults are the full-size run). Each script prints its own figures; this driver only
runs them one after the other (never in parallel: they would disturb each other's timings), shows
each one's output as it comes, and exits non-zero if any of them failed, after running the rest.
Usage:

    .venv/bin/python bench/run_all.py              # every benchmark
    .venv/bin/python bench/run_all.py clean resize # only bench_clean.py and bench_resize.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def quick_flag(script: Path) -> list[str]:
    """`["--quick"]` if the script's help lists that flag, else `[]` (its defaults are quick)."""
    shown = subprocess.run([sys.executable, str(script), "--help"], cwd=HERE.parent, capture_output=True,
                           text=True, check=False)
    return ["--quick"] if "--quick" in shown.stdout else []


def main(names: list[str]) -> int:
    if any(name.startswith("-") for name in names):
        print(__doc__)
        return 0 if names in (["-h"], ["--help"]) else 2
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in names]
        missing = set(names) - {s.stem.removeprefix("bench_") for s in scripts}
        if missing:
            print(f"no such benchmark: {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
    failed = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        started = time.perf_counter()
        code = subprocess.run([sys.executable, str(script), *quick_flag(script)], cwd=HERE.parent,
                              check=False).returncode
        print(f"=== {script.name}: {'ok' if code == 0 else f'FAILED (exit {code})'}, "
              f"{time.perf_counter() - started:.0f} s ===", flush=True)
        if code != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
