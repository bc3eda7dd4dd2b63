"""Benchmark `runner import` over a lake of many small real tables.

Copies one hudi-rs fixture table (v6_nonpartitioned: hoodie.properties, two commits) N times into
`lake/domain_<k>/table_<i>/` under a temporary folder, then, in this process, times:

- the baseline: `load_project` of the project the import produced (what `runner validate` costs on
  the same declarations, which import must also prove before writing);
- the first import into an empty project (search, hoodie.properties and timeline of each table,
  drafts, the check with the loader, the writes);
- a re-run, which finds every table declared and writes nothing.

Each figure is the median of `--runs` runs of wall and CPU time (`time.process_time`: on a shared
machine the steadier measure); ratios are against the baseline's median. Usage:

    .venv/bin/python bench/bench_import.py [--tables 1000] [--runs 3] [--same-name]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from _common import markdown_table, median

from runner.cli import main
from runner.declarations.loader import load_project

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "hudi-rs" / "sample_table" / "cow" / \
    "v6_nonpartitioned.zip"


def build_lake(root: Path, tables: int, *, same_name: bool = False) -> Path:
    """`tables` copies of the fixture; each named `table_<i>` in its hoodie.properties unless `same_name`
    (every copy keeps `v6_nonpartitioned`: the worst case for choosing unique names)."""
    source = root / "source"
    with zipfile.ZipFile(FIXTURE) as archive:
        for member in archive.namelist():
            if not member.startswith("__MACOSX/") and not member.endswith(".DS_Store"):
                archive.extract(member, source)
    for index in range(tables):
        name = f"table_{index:05d}"
        copy = shutil.copytree(source / "v6_nonpartitioned", root / "lake" / f"domain_{index % 20}" / name)
        if not same_name:
            properties = copy / ".hoodie" / "hoodie.properties"
            text = properties.read_text(encoding="iso-8859-1")
            properties.write_text(text.replace("hoodie.table.name=v6_nonpartitioned", f"hoodie.table.name={name}"),
                                  encoding="iso-8859-1")
    return root / "lake"


def timed(action: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - wall, time.process_time() - cpu


def run_import(lake: Path, project: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["import", str(lake), "--project-dir", str(project)])
    assert code == 0, code


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--same-name", action="store_true", help="every table keeps one hoodie.table.name")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        root = Path(tmp)
        lake = build_lake(root, args.tables, same_name=args.same_name)
        first: list[tuple[float, float]] = []
        again: list[tuple[float, float]] = []
        base: list[tuple[float, float]] = []
        for run in range(args.runs):
            project = root / f"project_{run}"
            project.mkdir()
            (project / "project.yml").write_text("name: bench\n")
            first.append(timed(lambda p=project: run_import(lake, p)))
            assert len(load_project(project).tables) == args.tables
            again.append(timed(lambda p=project: run_import(lake, p)))
            base.append(timed(lambda p=project: load_project(p)))
        rows = []
        base_wall, base_cpu = median([w for w, _ in base]), median([c for _, c in base])
        for label, runs in (("baseline: load_project of the imported project", base),
                            ("runner import, first run (writes every file)", first),
                            ("runner import, re-run (every table declared)", again)):
            wall, cpu = median([w for w, _ in runs]), median([c for _, c in runs])
            rows.append([label, f"{wall:.2f}", f"{cpu:.2f}", f"{wall / base_wall:.2f}x", f"{cpu / base_cpu:.2f}x"])
        print(f"{args.tables:,} tables{' of one name' if args.same_name else ''}, median of {args.runs} runs")
        print(markdown_table(["", "wall s", "CPU s", "wall / baseline", "CPU / baseline"], rows, "lrrrr"))


if __name__ == "__main__":
    main_()
