"""The metadata-table update's share of a real clean: `apply_table` on a table with a metadata table,
each phase timed, on data files of a realistic size.

The table (built once, or reused with `--table`): `runner.testing.TableBuilder` in tiny mode, table
version 8, copy-on-write, `--partitions` hive-style partitions `dt=NNNN`, each file group written by
an insert and `--versions - 1` updates, with a metadata table holding `files` and `column_stats`
(2 file groups, a record per base file and column, as Hudi writes them). Its column_stats index
definition lists `--columns` columns: the table's 7 indexed columns, then `pad_NN` names up to the
count (the fixture v9_txns_simple_meta indexes 16; a tombstone costs the same whether or not the
MDT holds a record for it). Declared KEEP_LATEST_FILE_VERSIONS with 1 retained and sizing off, so
the clean deletes every base file but each group's latest: `--files` files, 1 % of them per partition.

Each run, interleaved:
1. the baseline, as in bench_mdt.py: a bare `os.unlink` loop over as many *empty* files (created and
   synced, not timed);
2. a fresh copy of the table (hard links), whose files to delete are then rewritten as files of
   their own (their few KiB of data; `runner.testing.data.unshare`) and given real disk blocks of
   `--file-kb` KiB each: `posix_fallocate` over each file's length (tiny-mode files are sparse
   holes of that size; ext4 marks the extents unwritten, so nothing is written, and each file's
   `st_blocks` is checked), then `os.sync()`; not timed. Deleting them frees real extents,
   as deleting a real table's files does;
3. `apply_table` as `runner apply --auto-approve` runs it (no saved plan; the deleter `runner apply`
   builds, on a local master: the in-process thread pool), with the time of each phase taken at
   the runner's own step boundaries (the `failpoint` calls, and wrappers around the functions apply
   calls; nothing else is replaced): lock and planning, the MDT checks (in planning and again in
   `prepare_clean_maintenance`, with the MDT's schema read), `clean.requested`/`.inflight`, the
   deletes, the clean's metadata, the MDT records (`clean_commit`) and deltacommit
   (`write_mdt_commit`), the completed clean. `runner apply` encodes the index tombstones' log
   files in a child process while the deletes run (`CleanMaintenance.ahead`; nothing is written
   before the deletes end), so that work's wall time falls in the deletes' row.
   `--variants` lists how runs go, taken in turn run by run (an interleaved comparison):
   - `ahead`: as `runner apply` runs it (the tombstones encoded in a child process, from
     `maintain.CHILD_FROM` tombstones; on a thread below that);
   - `thread`: encoded on a thread of this process instead (the mdt3 round's way), for an A/B;
   - `off`: the whole update after the deletes (`ahead` not called);
   - `none`: **no metadata-table work at all**, the baseline of the share: the bench replaces
     `maintain.refusal_reasons` and `check.listing_problems` (planning's MDT checks: the
     metadata table's state, and its files listing against storage) with ones that find nothing and
     `maintain.prepare_clean_maintenance` with one that returns None, so `apply` builds the clean
     runner with no hook (as for a table without a metadata table). The table's MDT is then left
     behind the clean, which is fine for a copy removed after the run; nothing in runner/ offers
     this.
The first run then checks the table: every planned file gone, the rest still there, the MDT
deltacommit of the clean completed and its `files` listing in step with storage (`runner status`'s
check), and exactly one tombstone per deleted file and indexed column in the clean's column_stats
logs.

Wall-clock seconds and CPU seconds of the process (every thread: the delete pool's kernel time
included; plus the encoder child's, counted when it is reaped: in the deletes' row when it ends
before them, else in the hook's) per phase. The
share of the MDT update is `(whole clean with it - whole clean with none) / whole clean with it`,
medians of the `ahead` and `none` runs of the same invocation, and per pair of neighbouring runs;
the update's own phases (checks, records, deltacommit) over the whole apply are shown too. Before
starting, the bench checks the free disk space (`--files` x `--file-kb`, plus the table copies and
a margin) and refuses if it is short; everything it creates is removed after each run and on exit
(Ctrl-C included; a `--table` it did not build stays). Usage:

    .venv/bin/python bench/bench_mdt_clean.py --files 2000                  # smoke run: 2,000 files
    .venv/bin/python bench/bench_mdt_clean.py --files 100000 --runs 3 --workdir /tmp/pv-mdt
    .venv/bin/python bench/bench_mdt_clean.py --files 100000 --runs 6 --variants none,ahead \
        --table /tmp/pv-mdt-table --workdir /tmp/pv-mdt    # build the table once (about 10 min), keep it
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from _common import empty_unlink_floor, fresh_copy, markdown_table, median, remove_tree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import runner.execute.apply as apply_module  # noqa: E402
import runner.execute.clean as clean_module  # noqa: E402
import runner.hudi.mdt.check as check_module  # noqa: E402
import runner.hudi.mdt.maintain as maintain_module  # noqa: E402
from runner.declarations.model import (  # noqa: E402
    CleanPolicy,
    CleanPolicyName,
    FileSizing,
    SparkSettings,
    TableDeclaration,
)
from runner.execute.deleter import Deleter  # noqa: E402
from runner.hudi.files import BaseFile  # noqa: E402
from runner.testing import TableBuilder  # noqa: E402
from runner.testing.data import allocate_blocks, unshare  # noqa: E402
from runner.testing.metadata_indexes import INDEX_DEFS_PATH, index_definitions  # noqa: E402

KEEP_ONE = CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
LOCAL = SparkSettings(master="local[2]")
# Not timed, but on disk during a run: a copy of the table (sparse files of a few KiB each) and the
# MDT's logs; beyond that, keep this much free for everyone else on the machine.
MARGIN_BYTES = 3 << 30


# --- the table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    partitions: int
    groups: int  # per partition
    versions: int  # base files per group

    @property
    def deletes(self) -> int:
        return self.partitions * self.groups * (self.versions - 1)

    @property
    def files(self) -> int:
        return self.partitions * self.groups * self.versions


def shape_for(files: int, partitions: int, versions: int) -> Shape:
    groups = max(1, -(-files // (partitions * (versions - 1))))
    return Shape(partitions, groups, versions)


def build_table(path: Path, shape: Shape, file_bytes: int, columns: int) -> None:
    """The benchmark table (see the module docstring): tiny-mode files of `file_bytes`, sparse."""
    b = TableBuilder(
        path, name="bench_mdt_clean", partitions=[f"dt={p:04d}" for p in range(shape.partitions)], version=8,
        tiny=True, metadata_table=True, metadata_indexes=("column_stats",), file_bytes=file_bytes,
    )
    b.commit(writes=shape.groups)
    for _ in range(shape.versions - 1):
        b.commit(updates=shape.groups)
    assert b.metadata_table is not None
    real = list(b.metadata_table.stats_columns)
    names = real + [f"pad_{i:02d}" for i in range(max(0, columns - len(real)))]
    (path / INDEX_DEFS_PATH).write_bytes(index_definitions(names[:columns]))


def files_to_delete(table: Path) -> list[str]:
    """Every base file but the newest of its group (what KEEP_LATEST_FILE_VERSIONS 1 deletes),
    relative to the table."""
    out: list[str] = []
    for partition in sorted(p for p in os.listdir(table) if p.startswith("dt=")):
        groups: dict[str, list[tuple[str, str]]] = {}
        for name in os.listdir(table / partition):
            parsed = BaseFile.parse(name)
            if parsed is not None:
                groups.setdefault(parsed.file_id, []).append((str(parsed.instant_time), name))
        for versions in groups.values():
            out += [f"{partition}/{name}" for _, name in sorted(versions)[:-1]]
    return out


def declaration(path: Path) -> TableDeclaration:
    return TableDeclaration(name="bench_mdt_clean", path=str(path), source_file="tables/bench_mdt_clean.yml",
                            clean=KEEP_ONE, file_sizing=FileSizing(small_file_limit=0))


# --- phase timing -----------------------------------------------------------------------------

Stamp = tuple[float, float]  # (perf_counter, process_time)


def _now() -> Stamp:
    # The encoder child's CPU counts once it is reaped (its waiter thread does that as it ends).
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), time.process_time() + children.ru_utime + children.ru_stime


@dataclass
class Phases:
    """Spans (start, end stamps per name, in call order) and the runner's failpoint moments."""

    spans: dict[str, list[tuple[Stamp, Stamp]]] = field(default_factory=dict)
    points: dict[str, Stamp] = field(default_factory=dict)

    def span(self, name: str, action: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = _now()
            try:
                return action(*args, **kwargs)
            finally:
                self.spans.setdefault(name, []).append((started, _now()))

        return timed

    def total(self, name: str) -> Stamp:
        pairs = self.spans.get(name, [])
        return sum(e[0] - s[0] for s, e in pairs), sum(e[1] - s[1] for s, e in pairs)

    def between(self, first: Stamp, last: Stamp) -> Stamp:
        return last[0] - first[0], last[1] - first[1]


class _TimedHook:
    """The clean hook `prepare_clean_maintenance` returns, its call timed; `ahead` (encoding the
    index tombstones beside the deletes) passed on, or left out to time the update without it."""

    def __init__(self, phases: Phases, hook: Any, ahead: bool) -> None:
        self._call = phases.span("mdt_hook", hook)
        self.ahead = phases.span("mdt_ahead", hook.ahead) if ahead else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)


VARIANTS = ("ahead", "thread", "off", "none")


@contextmanager
def timing(phases: Phases, variant: str = "ahead") -> Iterator[None]:
    """Time the runner's clean phases in this process: the failpoint calls of apply and the clean
    runner mark moments; the functions apply calls for planning, the MDT checks and the MDT update
    are wrapped to record their spans. `variant`: see the module docstring (`none` replaces the
    MDT checks and the hook; `thread` the encoder). Everything is put back on exit."""
    ahead = variant != "off"

    def mark(name: str, original: Callable[[str], None]) -> None:
        phases.points[name] = _now()
        original(name)

    swaps: list[tuple[Any, str, Any]] = []

    def swap(module: Any, name: str, value: Any) -> None:
        swaps.append((module, name, getattr(module, name)))
        setattr(module, name, value)

    for module in (apply_module, clean_module):
        original = module.failpoint
        swap(module, "failpoint", lambda name, _o=original: mark(name, _o))
    swap(apply_module, "plan_one", phases.span("plan", apply_module.plan_one))
    if variant == "none":  # no metadata-table work at all: no checks, no hook (see the module docstring)
        swap(maintain_module, "refusal_reasons", lambda *args, **kwargs: [])
        swap(check_module, "listing_problems", lambda *args, **kwargs: [])
        swap(maintain_module, "prepare_clean_maintenance", lambda *args, **kwargs: None)
    else:
        swap(maintain_module, "refusal_reasons", phases.span("mdt_checks", maintain_module.refusal_reasons))
        swap(check_module, "listing_problems", phases.span("mdt_listing", check_module.listing_problems))
        prepare = maintain_module.prepare_clean_maintenance

        def prepared(*args: Any, **kwargs: Any) -> Any:
            return _TimedHook(phases, phases.span("mdt_prepare", prepare)(*args, **kwargs), ahead)

        swap(maintain_module, "prepare_clean_maintenance", prepared)
    if variant == "thread":
        swap(maintain_module, "CHILD_FROM", sys.maxsize)  # never a child: always the thread
    swap(maintain_module, "clean_commit", phases.span("mdt_records", maintain_module.clean_commit))
    swap(maintain_module, "write_mdt_commit", phases.span("mdt_write", maintain_module.write_mdt_commit))
    try:
        yield
    finally:
        for module, name, value in reversed(swaps):
            setattr(module, name, value)


ROWS = (
    ("plan", "planning (`plan_one`: listing, file groups, the clean plan)"),
    ("mdt_prepare", "MDT checks again and its schema read (`prepare_clean_maintenance`)"),
    ("start", "`clean.requested` + `.inflight` (the plan encoded)"),
    ("deletes", "deletes (`Deleter`: the thread pool's `delete_many`) and the plan's path checks"),
    ("metadata", "clean metadata (HoodieCleanMetadata)"),
    ("mdt_records", "MDT records (`clean_commit`)"),
    ("mdt_write", "MDT deltacommit (`write_mdt_commit`: HFile blocks, gzip, CRC32C, log files, timeline)"),
    ("complete", "completed clean"),
    ("other", "the rest (lock, timeline read, deleter set-up, result)"),
)


def phase_times(phases: Phases, total: Stamp) -> dict[str, Stamp]:
    """Wall and CPU seconds per row of ROWS, plus `mdt` (the MDT update: its checks, records and
    deltacommit) and `apply` (the whole call)."""
    p = phases.points
    if "mdt_hook" not in phases.spans:  # variant `none`: no MDT work; the metadata row runs to completion
        zero = (0.0, 0.0)
        out = {
            "plan": phases.total("plan"), "plan_mdt": zero, "mdt_prepare": zero,
            "start": phases.between(p["after_lock"], p["after_clean_inflight"]),
            "deletes": phases.between(p["after_clean_inflight"], p["after_delete"]),
            "metadata": phases.between(p["after_delete"], p["after_clean_completed"]),
            "mdt_records": zero, "mdt_write": zero, "mdt_hook": zero, "complete": zero, "apply": total,
        }
        out["start"] = (out["start"][0] - out["plan"][0], out["start"][1] - out["plan"][1])
        counted = [out[k] for k in ("plan", "start", "deletes", "metadata")]
        out["other"] = (total[0] - sum(c[0] for c in counted), total[1] - sum(c[1] for c in counted))
        out["mdt"] = zero
        return out
    hook = phases.spans["mdt_hook"][0]
    out = {
        "plan": phases.total("plan"),
        # Planning's MDT checks: its state (`refusal_reasons`), then its files listing against storage.
        "plan_mdt": tuple(sum(e[i] - b[i] for name in ("mdt_checks", "mdt_listing")
                              for b, e in phases.spans.get(name, [])[:1]) for i in (0, 1)),
        "mdt_prepare": phases.total("mdt_prepare"),
        "start": phases.between(phases.spans["mdt_prepare"][0][1], p["after_clean_inflight"]),
        "deletes": phases.between(p["after_clean_inflight"], p["after_delete"]),
        "metadata": phases.between(p["after_delete"], hook[0]),
        # Only the hook's own: with `ahead`, `clean_commit` also runs on a thread during the deletes.
        "mdt_records": _within(phases.spans.get("mdt_records", []), hook),
        "mdt_write": phases.total("mdt_write"),
        "mdt_hook": phases.between(*hook),
        "complete": phases.between(hook[1], p["after_clean_completed"]),
        "apply": total,
    }
    # The hook also re-reads the MDT timeline between the two: counted with the deltacommit.
    rest = out["mdt_hook"][0] - out["mdt_records"][0], out["mdt_hook"][1] - out["mdt_records"][1]
    out["mdt_write"] = rest
    counted = [out[k] for k in ("plan", "mdt_prepare", "start", "deletes", "metadata", "mdt_hook", "complete")]
    out["other"] = (total[0] - sum(c[0] for c in counted), total[1] - sum(c[1] for c in counted))
    parts = (out["plan_mdt"], out["mdt_prepare"], out["mdt_hook"])
    out["mdt"] = (sum(p[0] for p in parts), sum(p[1] for p in parts))
    return out


def _within(spans: list[tuple[Stamp, Stamp]], outer: tuple[Stamp, Stamp]) -> Stamp:
    inside = [(s, e) for s, e in spans if outer[0][0] <= s[0] and e[0] <= outer[1][0]]
    return sum(e[0] - s[0] for s, e in inside), sum(e[1] - s[1] for s, e in inside)


# --- one run ----------------------------------------------------------------------------------


def prepare_copy(template: Path, copy: Path, deleted: Sequence[str]) -> int:
    """A fresh copy of the table whose files to delete are files of their own holding real blocks;
    returns the bytes allocated. The copy is hard links (a byte copy of 100,000 files' holes takes
    many minutes); each file to delete is then written anew (`unshare`: its few KiB of data, the
    hole left a hole) and allocated, so deleting it frees its blocks and leaves the table intact."""
    fresh_copy(template, copy, hardlink=True)
    allocated = 0
    for path in deleted:
        unshare(str(copy / path))
        allocated += allocate_blocks(str(copy / path))
    os.sync()
    return allocated


def run_clean(copy: Path, variant: str = "ahead") -> tuple[dict[str, Stamp], Any]:
    phases = Phases()
    with timing(phases, variant):
        started = _now()
        result = apply_module.apply_table(
            declaration(copy), None, now=datetime.now(UTC), spark_settings=LOCAL,
            deleter_factory=lambda: Deleter(LOCAL),
        )
        ended = _now()
    if result.status != "success":
        raise SystemExit(f"the clean failed: {result.error}")
    return phase_times(phases, (ended[0] - started[0], ended[1] - started[1])), result


def check_table(copy: Path, deleted: Sequence[str], kept: Sequence[str], columns: Sequence[str]) -> None:
    """The planned files are gone and the others remain; the MDT recorded the clean as Hudi does:
    its deltacommit completed, its `files` listing in step with storage (`runner status`'s check),
    and the clean's column_stats logs hold exactly one tombstone per deleted file and indexed column
    (every key compared; a sample of the values decoded, since decoding 1.6 million takes minutes)."""
    from runner.hudi.instant import Action
    from runner.hudi.mdt import keys
    from runner.hudi.mdt.check import check_metadata_table
    from runner.hudi.mdt.hfile import read_hfile
    from runner.hudi.mdt.logfile import HeaderKey, read_log_blocks
    from runner.hudi.mdt.reader import read_metadata_table
    from runner.hudi.mdt.records import decode_record
    from runner.hudi.state import read_table_metadata, read_table_state
    from runner.storage import storage_for

    left = [p for p in deleted if (copy / p).exists()]
    assert not left, f"{len(left)} planned files remain, e.g. {left[0]}"
    missing = [p for p in kept if not (copy / p).exists()]
    assert not missing, f"{len(missing)} kept files are gone, e.g. {missing[0]}"
    storage = storage_for(str(copy))
    data = read_table_metadata(storage)
    (clean,) = data.timeline.completed(Action.CLEAN)
    mdt = read_metadata_table(storage)
    assert any(i.time == clean.time and i.is_completed for i in mdt.timeline.instants), "no MDT deltacommit"
    health = check_metadata_table(storage, read_table_state(storage))
    assert health.ok, health.to_json()
    cells: list[tuple[bytes, bytes]] = []
    schema = ""
    for log in (copy / ".hoodie/metadata/column_stats").glob(f".*_{clean.time}.log.*"):
        for block in read_log_blocks(log.read_bytes(), where=str(log)):
            schema = block.header[HeaderKey.SCHEMA]
            cells += read_hfile(block.content, where=str(log)).cells
    expected = {keys.column_stats_key(c, *path.split("/", 1)) for c in columns for path in deleted}
    assert len(cells) == len(expected) and {row.decode() for row, _ in cells} == expected, (len(cells), len(expected))
    for _, value in cells[:: max(1, len(cells) // 1000)]:
        stats = decode_record(schema, value, where="column_stats")["ColumnStatsMetadata"]
        assert stats["isDeleted"] and stats["columnName"] in columns, stats


# --- main -------------------------------------------------------------------------------------


def room_needed(shape: Shape, file_bytes: int) -> int:
    # The allocated files, two sparse copies of the table (about two 4 KiB blocks a file, the
    # template and the run's copy) and the MDT, and the margin.
    return shape.deletes * file_bytes + 2 * shape.files * 8192 + MARGIN_BYTES


def refuse_without_room(where: Path, needed: int) -> None:
    free = shutil.disk_usage(where).free
    if free < needed:
        raise SystemExit(
            f"{where}: {free / 2**30:.1f} GiB free, but this run needs {needed / 2**30:.1f} GiB "
            "(the files to delete, allocated, plus the table copies and a margin); nothing was created. "
            "Use fewer --files, a smaller --file-kb or another --workdir."
        )


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # so the `finally` below removes what the run created


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000, help="files the clean deletes (rounded up to a "
                        "whole number of file groups per partition)")
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--versions", type=int, default=11, help="base files per file group (all but one deleted)")
    parser.add_argument("--columns", type=int, default=16, help="columns of the column_stats index")
    parser.add_argument("--file-kb", type=int, default=432, help="size of each data file, KiB (432: about the "
                        "smallest Hudi base file, whose bloom-filter footer alone is about 431 KB)")
    parser.add_argument("--runs", type=int, default=1, help="0: only build (or check) the --table")
    parser.add_argument("--workdir", help="parent folder of the temporary data (default: system temp)")
    parser.add_argument("--table", help="build the table here once, or reuse it if it is there (never changed)")
    parser.add_argument("--variants", default="ahead",
                        help="comma-separated, taken in turn run by run: ahead (as `runner apply` runs), thread, "
                        "off, none (no MDT work at all: the share's baseline); see the module docstring")
    parser.add_argument("--ahead", choices=("on", "off", "alternate"),
                        help="the mdt3 round's spelling, kept for its commands: on = --variants ahead, off = "
                        "--variants off, alternate = --variants off,ahead")
    args = parser.parse_args()
    if args.ahead:
        args.variants = {"on": "ahead", "off": "off", "alternate": "off,ahead"}[args.ahead]
    args.variants = args.variants.split(",")
    if not args.variants or not set(args.variants) <= set(VARIANTS):
        parser.error(f"--variants: expected a comma-separated list of {', '.join(VARIANTS)}")
    if args.versions < 2:
        parser.error("--versions must be at least 2")
    shape = shape_for(args.files, args.partitions, args.versions)
    file_bytes = args.file_kb * 1024
    parent = Path(args.workdir or tempfile.gettempdir())
    refuse_without_room(parent, room_needed(shape, file_bytes))
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    work = Path(tempfile.mkdtemp(prefix="bench_mdt_clean_", dir=parent))
    try:
        measure(args, shape, file_bytes, work)
    finally:
        remove_tree(work)


def measure(args: argparse.Namespace, shape: Shape, file_bytes: int, work: Path) -> None:
    template = Path(args.table) if args.table else work / "table"
    if not (template / ".hoodie").exists():
        started = time.perf_counter()
        build_table(template, shape, file_bytes, args.columns)
        print(f"built the table in {time.perf_counter() - started:.0f} s: {shape.files:,} base files "
              f"({shape.partitions} partitions x {shape.groups} groups x {shape.versions} versions)", flush=True)
    deleted = files_to_delete(template)
    if len(deleted) != shape.deletes:
        raise SystemExit(f"{template}: expected {shape.deletes:,} files to delete, found {len(deleted):,} "
                         "(a --table built with other --files, --partitions or --versions?)")
    sizes = {os.stat(template / p).st_size for p in deleted[:100]}
    if sizes != {file_bytes}:
        raise SystemExit(f"{template}: expected data files of {file_bytes} bytes, found sizes {sorted(sizes)}")
    indexed = tuple(json.loads((template / INDEX_DEFS_PATH).read_bytes())["indexDefinitions"]["column_stats"]
                    ["sourceFields"])
    if not args.runs:
        return
    copy = work / "copy"
    runs: dict[str, list[dict[str, Stamp]]] = {v: [] for v in VARIANTS}
    floors: dict[str, list[Stamp]] = {v: [] for v in VARIANTS}
    prepared: list[float] = []
    order: list[tuple[str, float]] = []  # (variant, whole clean) per run, in run order
    checked = False
    for run in range(args.runs):
        variant = args.variants[run % len(args.variants)]
        run_started = time.perf_counter()
        floors[variant].append(empty_unlink_floor(work, shape.deletes))
        started = time.perf_counter()
        allocated = prepare_copy(template, copy, deleted)
        prepared.append(time.perf_counter() - started)
        times, result = run_clean(copy, variant)
        if result.files_deleted != shape.deletes:
            raise SystemExit(f"the clean deleted {result.files_deleted:,} files, expected {shape.deletes:,}")
        if not checked and variant != "none":  # `none` leaves the MDT behind on purpose
            checked = True
            gone = set(deleted)
            kept = [p for p in _base_files(template) if p not in gone]
            check_table(copy, deleted, kept, indexed)
            print(f"run {run + 1} checked: files, MDT listing and {len(deleted) * len(indexed):,} tombstones",
                  flush=True)
        runs[variant].append(times)
        order.append((variant, times["apply"][0]))
        remove_tree(copy)
        print(f"run {run + 1} ({variant}): apply {times['apply'][0]:.2f} s (CPU {times['apply'][1]:.2f} s), "
              f"deletes {times['deletes'][0]:.2f} s (CPU {times['deletes'][1]:.2f} s), MDT update's phases "
              f"{times['mdt'][0]:.2f} s (CPU {times['mdt'][1]:.2f} s), {allocated / 2**30:.1f} GiB freed; empty-file "
              f"floor {floors[variant][-1][0]:.2f} s; load {os.getloadavg()[0]:.1f}; the run took "
              f"{time.perf_counter() - run_started:.0f} s in all", flush=True)
    for variant in VARIANTS:
        if runs[variant]:
            report(args, shape, len(indexed), runs[variant], floors[variant], prepared, variant=variant)
    compare(runs, order)


def _base_files(table: Path) -> list[str]:
    return [f"{p}/{n}" for p in sorted(os.listdir(table)) if p.startswith("dt=")
            for n in os.listdir(table / p) if BaseFile.parse(n) is not None]


def compare(runs: dict[str, list[dict[str, Stamp]]], order: list[tuple[str, float]]) -> None:
    """The share: each variant's whole clean against the clean with no MDT work (`none`), by the
    medians and per pair of neighbouring runs."""
    if not runs["none"]:
        return
    without = median([r["apply"][0] for r in runs["none"]])
    without_cpu = median([r["apply"][1] for r in runs["none"]])
    listed = ", ".join(f"{r['apply'][0]:.2f}" for r in runs["none"])
    print(f"\nThe clean with no metadata-table work (none): {without:.2f} s by the median "
          f"(runs {listed}; CPU {without_cpu:.2f} s)")
    for variant in ("ahead", "thread", "off"):
        if not runs[variant]:
            continue
        walls = [r["apply"][0] for r in runs[variant]]
        cpus = [r["apply"][1] for r in runs[variant]]
        with_ = median(walls)
        # Each run of the variant against the `none` run just before or after it (the nearer in load).
        pairs = []
        for i, (v, wall) in enumerate(order):
            if v != variant:
                continue
            near = [order[j][1] for j in (i - 1, i + 1) if 0 <= j < len(order) and order[j][0] == "none"]
            if near:
                pairs.append((wall - near[0]) / wall)
        print(f"{variant}: whole clean {with_:.2f} s by the median (runs {', '.join(f'{w:.2f}' for w in walls)}; "
              f"CPU {median(cpus):.2f} s); share (with - without) / with = **{(with_ - without) / with_:.1%}** "
              f"(CPU {(median(cpus) - without_cpu) / median(cpus):.1%}); per run against a neighbouring none run "
              f"{', '.join(f'{p:.1%}' for p in pairs) or 'n/a'}")


def report(args: argparse.Namespace, shape: Shape, columns: int, runs: list[dict[str, Stamp]],
           floors: list[Stamp], prepared: list[float], *, variant: str) -> None:
    def cells(label: str, walls: list[float], cpus: list[float], whole: float) -> tuple[str, ...]:
        return (label, ", ".join(f"{w:.2f}" for w in walls), f"{median(walls):.2f} s",
                f"{median(walls) / whole:.1%}", f"{median(cpus):.2f} s")

    apply_wall = median([r["apply"][0] for r in runs])
    rows = []
    for key, label in ROWS:
        rows.append(cells(label, [r[key][0] for r in runs], [r[key][1] for r in runs], apply_wall))
        if key == "plan":
            rows.append(cells("… of which the MDT checks (`refusal_reasons`, `listing_problems`)",
                              [r["plan_mdt"][0] for r in runs], [r["plan_mdt"][1] for r in runs], apply_wall))
    rows.append(cells("**the clean, whole (`apply_table`)**", [r["apply"][0] for r in runs],
                      [r["apply"][1] for r in runs], apply_wall))
    rows.append(cells("**MDT update: checks + records + deltacommit**", [r["mdt"][0] for r in runs],
                      [r["mdt"][1] for r in runs], apply_wall))
    rows.append(cells("baseline (bench_mdt.py's): `os.unlink` of as many *empty* files", [f[0] for f in floors],
                      [f[1] for f in floors], apply_wall))
    print(
        f"\n{shape.deletes:,} files deleted of {shape.files:,} ({shape.partitions} partitions x {shape.groups} "
        f"groups x {shape.versions} versions), {args.file_kb} KiB each (blocks allocated, not written), "
        f"{columns} indexed columns ({shape.deletes * columns:,} column-stats tombstones); table version 8; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; copy + allocation per run "
        f"(not timed) {', '.join(f'{p:.0f}' for p in prepared)} s\n"
        + {
            "ahead": "Variant ahead (as `runner apply` runs): the index tombstones encoded in a child process "
                     "beside the deletes; its wall time falls in the deletes' row, its CPU in the row "
                     "where it ended (the deletes' when it ended before them).\n",
            "thread": "Variant thread: the index tombstones encoded on a thread of this process beside the deletes "
                      "(the mdt3 round's way); that work's wall and CPU time fall in the deletes' row.\n",
            "off": "Variant off: the whole update runs after the deletes.\n",
            "none": "Variant none: no metadata-table work at all (the bench removes the checks and the hook).\n",
        }[variant]
    )
    print(markdown_table(("phase", "runs (s)", "median", "of the clean", "CPU, median"), rows, align="llrrr"))
    shares = [r["mdt"][0] / r["apply"][0] for r in runs]
    hook = [(r["mdt_records"][0] + r["mdt_write"][0]) / r["apply"][0] for r in runs]
    cpu_shares = [r["mdt"][1] / r["apply"][1] for r in runs]
    floor = median([f[0] for f in floors])
    mdt = median([r["mdt"][0] for r in runs])
    print(
        f"\nMDT update's share of the whole clean, same run: {median(shares):.1%} (per run "
        f"{', '.join(f'{s:.1%}' for s in shares)}); records + deltacommit alone {median(hook):.1%}; by CPU "
        f"{median(cpu_shares):.1%}.\nAgainst the empty-file baseline (bench_mdt.py's measure, not the clean): "
        f"MDT update / (MDT update + floor) = {mdt / (mdt + floor):.1%}."
    )


if __name__ == "__main__":
    main()
