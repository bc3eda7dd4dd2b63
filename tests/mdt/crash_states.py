"""What the metadata-table kill tests compare: an uninterrupted run's end state against a crashed
run's after the next apply, for a clean and for a resize (shared by the fixture and v6 suites)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from runner.hudi.instant import Action
from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.mdt.reader import read_files_listing, read_metadata_table
from runner.hudi.state import read_table_metadata, read_table_state
from runner.storage import storage_for
from tests.crash import apply_in_process


def clean_end_state(table: Path) -> dict[str, object]:
    """Data files left, the clean instants, the MDT's listing and the MDT instants mirroring cleans."""
    storage = storage_for(str(table))
    meta = read_table_metadata(storage)
    cleans = [i for i in meta.timeline.instants if i.action is Action.CLEAN]
    listing = read_files_listing(storage, meta)
    mdt = read_metadata_table(storage)
    return {
        "data files": sorted(
            str(p.relative_to(table)) for p in table.rglob("*") if p.is_file() and ".hoodie" not in p.parts
        ),
        "cleans": [f"{i.action}.{i.state}" for i in cleans],
        "listing": {p: sorted(names) for p, names in sorted(listing.files.items())},
        "mdt mirrors": [
            f"{i.action}.{i.state}" for i in mdt.timeline.instants if any(i.time == c.time for c in cleans)
        ],
    }


def resize_end_state(table: Path) -> dict[str, object]:
    """The table after its last resize, independent of the new files' random ids."""
    storage = storage_for(str(table))
    meta = read_table_metadata(storage)
    (resize,) = meta.timeline.completed(Action.REPLACE_COMMIT)[-1:]
    mdt = read_metadata_table(storage)
    listing = read_files_listing(storage, meta, mdt)
    return {
        "data timeline": sorted(f"{i.action}.{i.state}" for i in meta.timeline.instants if i.time == resize.time),
        "mdt timeline": sorted(f"{i.action}.{i.state}" for i in mdt.timeline.instants if i.time == resize.time),
        "pending": [i.file_name for i in meta.timeline.instants if not i.is_completed],
        "new files per partition": sorted(
            str(p.relative_to(table).parent) for p in table.rglob(f"*_{resize.time}.parquet")
        ),
        "listed files": sorted(len(names) for names in listing.files.values()),
    }


def uninterrupted(project: Path, rows: Callable[[Path], object]) -> object:
    """Apply `project` once without a failpoint; readers see the same rows before and after.
    Returns those rows."""
    table = project / "table"
    before = rows(table)
    done = apply_in_process(project)
    assert done.returncode == 0, done.stderr + done.stdout
    assert rows(table) == before
    return before


def assert_metadata_table_healthy(table: Path) -> None:
    storage = storage_for(str(table))
    health = check_metadata_table(storage, read_table_state(storage))
    assert health.ok, health.to_json()
