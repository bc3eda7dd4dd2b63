"""Benchmark `runner validate` on a generated project of many table declarations.

Writes N table files (default 1,000) into a temporary project, then times, in one process:

- the baseline: reading and `yaml.safe_load`-ing the same files (what any YAML-based tool pays);
- `load_project` in-process (YAML with marks, JSON Schema, merging, every rule);
- `python -m runner validate` as a subprocess (adds interpreter start-up and imports).

Each figure is the median of `--runs` runs, of wall time and of CPU time (this process's for the
in-process rows, the child's for the subprocess rows: on a machine shared with other jobs the CPU
time is the steadier measure); ratios are against the baseline median, so they hold across
machines better than the seconds do. Usage:

    .venv/bin/python bench/bench_validate.py [--tables 1000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from runner.declarations.loader import load_project

PROJECT = """\
# yaml-language-server: $schema=schemas/project.schema.json
name: bench
allowed_roots: [warehouse]
defaults:
  clean: {policy: KEEP_LATEST_COMMITS, commits_retained: 5, incremental: true}
  file_sizing: {max_file_size: 120MiB, small_file_limit: 100MiB}
spark: {master: "local[2]", conf: {spark.sql.shuffle.partitions: "2"}}
"""
BASELINE = "baseline: yaml.safe_load of every file"
POLICIES = (
    "  policy: KEEP_LATEST_COMMITS\n  commits_retained: {n}\n",
    "  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: {n}\n",
    "  policy: KEEP_LATEST_BY_HOURS\n  hours_retained: {n}\n",
)


def table_text(index: int) -> str:
    """A realistic declaration: comments, every block, the three policies in turn."""
    return (
        "# yaml-language-server: $schema=../../schemas/table.schema.json\n"
        f"name: table_{index:05d}\n"
        f"path: warehouse/domain_{index % 20}/table_{index:05d}\n"
        f"description: Generated table number {index} for the validate benchmark.\n"
        f"owner: team-{index % 7}\n"
        f"tags: [bench, tier{index % 3}]\n"
        "clean:\n" + POLICIES[index % 3].format(n=2 + index % 9) +
        "file_sizing:\n"
        f"  max_file_size: {64 + index % 4 * 32}MiB\n"
        "  small_file_limit: 32MiB\n"
        "table:\n"
        "  type: COPY_ON_WRITE\n"
        "  record_key: [id]\n"
        "  partition_by: [day]\n"
        "  precombine_field: ts\n"
    )


def write_project(root: Path, tables: int) -> list[Path]:
    (root / "project.yml").write_text(PROJECT)
    files = []
    for index in range(tables):
        path = root / "tables" / f"domain_{index % 20}" / f"table_{index:05d}.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(table_text(index))
        files.append(path)
    return files


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (user + system)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def medians(actions: dict[str, Callable[[], object]], runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds per action; runs are interleaved so that load changes hit every
    action alike."""
    timings: dict[str, list[tuple[float, float]]] = {label: [] for label in actions}
    for _ in range(runs):
        for label, action in actions.items():
            started, cpu = time.perf_counter(), cpu_seconds()
            action()
            timings[label].append((time.perf_counter() - started, cpu_seconds() - cpu))
    return {label: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
            for label, values in timings.items()}


def safe_load_all(files: list[Path], loader: type) -> None:
    for path in files:
        yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


def cli(root: Path, *args: str) -> None:
    done = subprocess.run([sys.executable, *args, "--project-dir", str(root)], capture_output=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files = write_project(root, options.tables)
        started, cpu = time.perf_counter(), cpu_seconds()
        assert len(load_project(root).tables) == options.tables  # the first call also compiles the schemas
        cold = (time.perf_counter() - started, cpu_seconds() - cpu)
        timed = medians({
            BASELINE: lambda: safe_load_all(files, yaml.SafeLoader),
            "yaml.load with CSafeLoader (libyaml)": lambda: safe_load_all(files, yaml.CSafeLoader),
            "load_project, in-process": lambda: load_project(root),
            "python -c pass (interpreter start-up)": lambda: cli(root, "-c", "pass"),
            "python -m runner validate (CLI)": lambda: cli(root, "-m", "runner", "validate"),
        }, options.runs)
    rows = [*timed.items(), ("load_project, first call in a process (single run)", cold)]
    baseline = timed[BASELINE][0]
    print(f"{options.tables} table files, median of {options.runs} runs, Python {sys.version.split()[0]}, "
          f"libyaml {'yes' if yaml.__with_libyaml__ else 'no'}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| what | wall, median | CPU, median | wall per file | wall vs baseline |")
    print("|---|---:|---:|---:|---:|")
    for label, (wall, cpu) in rows:
        print(f"| {label} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms | {wall / options.tables * 1e6:.0f} µs | "
              f"{wall / baseline:.2f}× |")


if __name__ == "__main__":
    main()
