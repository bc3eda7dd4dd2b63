"""The demo warehouse: the three tables declared in `tables/`, built with `TableBuilder`.

Each table gets a history that gives `runner plan` something to show:

* `warehouse/orders` (copy-on-write, by region): a dozen upserts, so file groups carry many versions
  for KEEP_LATEST_COMMITS to clean; a savepoint the cleaner must respect; an insert_overwrite of one
  region, whose replaced file groups become reclaimable.
* `warehouse/events` (merge-on-read, by event_date): deltacommits appending log files and
  compactions cutting new slices. KEEP_LATEST_BY_HOURS(24) compares instant times with the clock,
  so this table's instants are placed relative to the moment it is built: most of its history more
  than 24 hours back, the last few writes within the last 24 hours.
* `warehouse/customers` (copy-on-write, not partitioned): a few files below the declared 512 KiB
  small-file limit, some with several versions for KEEP_LATEST_FILE_VERSIONS.

orders and customers use fixed instant times, so their plans are the same on every machine.
A table that already exists is left exactly as it is; a table is built in a scratch folder and
renamed into place, so an interrupted build never leaves a half-written table behind.

Run `python -m runner.demo [project_dir]`.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from runner.testing import MERGE_ON_READ, TableBuilder

ORDERS, EVENTS, CUSTOMERS = "warehouse/orders", "warehouse/events", "warehouse/customers"
FIXED_START = datetime(2026, 1, 5, 8, 0)
KIB = 1024


def build_orders(path: Path, *, now: datetime) -> TableBuilder:
    """Upserts on three regions, a savepoint, and an insert_overwrite of `region=apac` early enough
    that the last three commits (the declared retention) all come after it."""
    b = TableBuilder(
        path, name="orders", partitions=["region=eu", "region=us", "region=apac"], record_key="order_id",
        precombine="updated_at", start=FIXED_START, step=timedelta(minutes=30), rows_per_file=40,
    )
    b.commit(writes=2)
    for round_ in range(6):
        if round_ == 3:
            b.savepoint(b.completed_instants[-2])
            b.insert_overwrite("region=apac", groups=1)
        b.commit(updates={p: b.file_ids(p)[round_ % 2 :: 2] for p in b.partitions})
    b.commit(writes={"region=eu": 1}, updates={"region=us": 1})
    b.commit(updates={"region=eu": 2, "region=us": 2})
    return b


def build_events(path: Path, *, now: datetime) -> TableBuilder:
    """Four days of partitions; compactions 3 days, 36 hours and 12 hours ago; writes until an hour ago."""
    days = [f"event_date=2026-11-0{d}" for d in range(1, 5)]
    b = TableBuilder(
        path, name="events", partitions=days, version=8, table_type=MERGE_ON_READ, record_key="event_id",
        precombine="event_ts", start=now - timedelta(days=5), rows_per_file=20,
    )
    b.commit(writes=2)
    # (hours before now, what happens): the first six are older than the 24-hour retention.
    history = [
        (96, "update"), (84, "update"), (72, "compact"), (48, "update"), (36, "compact"), (30, "update"),
        (20, "update"), (12, "compact"), (2, "update"),
    ]
    for hours, kind in history:
        if kind == "compact":
            b.compaction(at=now - timedelta(hours=hours))
        else:
            b.commit(updates=2, at=now - timedelta(hours=hours))
    b.commit(writes={days[-1]: 1}, at=now - timedelta(hours=1))
    return b


def build_customers(path: Path, *, now: datetime) -> TableBuilder:
    """Small files (about 100 to 300 KiB) in a non-partitioned table, and one near the 1 MiB target."""
    b = TableBuilder(
        path, name="customers", record_key="customer_id", precombine="updated_at",
        start=FIXED_START, step=timedelta(hours=1), rows_per_file=200,
    )
    b.commit(writes=4, file_bytes=100 * KIB)
    b.commit(writes=2, file_bytes=300 * KIB)
    groups = b.file_ids()
    b.commit(updates={"": groups[:2]})
    b.commit(updates={"": groups[:1]})
    b.commit(writes=1, rows=400, file_bytes=900 * KIB)
    return b


DEMO_TABLES: dict[str, Callable[..., TableBuilder]] = {
    ORDERS: build_orders,
    EVENTS: build_events,
    CUSTOMERS: build_customers,
}


def build_demo_warehouse(project_dir: str | os.PathLike[str], *, now: datetime | None = None) -> list[str]:
    """Create every demo table that does not exist yet under `<project_dir>/warehouse/`.

    Args:
        project_dir: the folder holding `project.yml`.
        now: the clock the events table's instants are placed against (default: the current local
            time, the timezone Hudi's instant times use by default).

    Returns:
        The table paths, relative to `project_dir`, that were built by this call; existing tables
        are skipped, so a second call returns an empty list.
    """
    clock = (now or datetime.now()).replace(microsecond=0)
    built = []
    for relative, build in DEMO_TABLES.items():
        target = Path(project_dir, relative)
        if target.exists():
            continue
        scratch = target.with_name(f".{target.name}.building")
        shutil.rmtree(scratch, ignore_errors=True)  # left over by an interrupted build
        build(scratch, now=clock)
        os.replace(scratch, target)
        built.append(relative)
    return built


def describe(project_dir: str | os.PathLike[str], relative: str) -> str:
    """One line about a demo table: its instants and data files on disk."""
    base = Path(project_dir, relative)
    timeline = base / ".hoodie" / "timeline" if (base / ".hoodie" / "timeline").is_dir() else base / ".hoodie"
    instants = sum(1 for p in timeline.iterdir() if p.is_file() and p.name[0].isdigit())
    data = [p for p in base.rglob("*") if p.is_file() and ".hoodie" not in p.parts
            and not p.name.startswith(".hoodie_partition_metadata")]
    size = sum(p.stat().st_size for p in data)
    return f"{relative}: {instants} timeline files, {len(data)} data files, {size / KIB:.0f} KiB"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    project_dir = args[0] if args else "."
    built = build_demo_warehouse(project_dir)
    for relative in DEMO_TABLES:
        state = "built" if relative in built else "kept (already there)"
        print(f"{state:20} {describe(project_dir, relative)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
