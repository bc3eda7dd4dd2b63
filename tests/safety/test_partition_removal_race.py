"""Attack: a file that lands in an emptied partition between the clean's last look and the folder's
removal.

A clean removes an emptied partition folder only when nothing but Hudi's marker is left in it, and
only while no pending write reaches it (test_partition_delete_guard.py). Both are checked, then the
folder went with a recursive delete, which removes whatever is in it by then. Hudi writers do not take
the runner's lock: one that started after the check (its requested instant written, the table read,
the partition found by its marker) writes its new file group into the folder meanwhile, and the
recursive delete took that file too. Once the write commits, every reader fails on the missing file
(or, listing files, misses its records). The folder must go only as what was checked: the marker,
then the folder if it is empty, and the marker back if anything landed.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table
from runner.hudi.instant import Action
from runner.hudi.metadata import decode_clean_metadata
from runner.hudi.state import read_table_metadata
from runner.storage import FileInfo, storage_for
from runner.storage.local import LocalStorage
from runner.testing.tables import TableBuilder

LOCAL = SparkSettings(master="local[1]")


def _apply(table: Path) -> Any:
    decl = TableDeclaration(
        name="t", path=str(table), source_file="tables/t.yml",
        clean=CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
        file_sizing=FileSizing(small_file_limit=0))
    return apply_table(decl, None, now=datetime.now(UTC), spark_settings=LOCAL,
                       deleter_factory=lambda: lambda storage, paths: storage.delete_many(list(paths)))


@pytest.mark.parametrize("where", ["partition", "subfolder"])
def test_a_file_landing_after_the_last_look_is_never_deleted_with_the_folder(where, tmp_path, monkeypatch):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    builder.delete_partition("p=b")  # every group of p=b replaced: the clean empties and removes it
    landed: list[Path] = []
    real_walk = LocalStorage.walk

    def walk(self: LocalStorage, path: str = "") -> Iterator[FileInfo]:
        found = list(real_walk(self, path))
        emptied = path == "p=b" and not [f for f in found if f.path.endswith(".parquet")]
        yield from found
        if emptied and not landed:  # right after the clean's look: a Hudi writer's new file group
            builder.inflight_commit(writes={"p=b": 1})
            (written,) = [f for f in builder.failed_files if f.path.startswith("p=b/")]
            target = table / written.path
            if where == "subfolder":  # a writer's file in a folder below (another tool's, a nested level)
                target = table / "p=b" / "x" / written.path.rsplit("/", 1)[1]
                target.parent.mkdir()
                (table / written.path).rename(target)
            landed.append(target)

    monkeypatch.setattr(LocalStorage, "walk", walk)

    result = _apply(table)

    assert result.status.value == "success", result.error
    assert landed and landed[0].exists(), "the writer's file was deleted with the folder"
    assert (table / "p=b" / ".hoodie_partition_metadata").exists()  # file-listing readers still find it
    assert result.partitions_deleted == []
    meta = read_table_metadata(storage_for(str(table)))
    (clean,) = meta.timeline.completed(Action.CLEAN)
    completed = table / meta.timeline_folder / clean.file_name
    recorded = decode_clean_metadata(completed.read_bytes(), path=str(completed))
    assert not recorded.partition_metadata["p=b"].is_partition_deleted


def test_an_emptied_partition_with_nothing_landing_still_goes(tmp_path):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    builder.delete_partition("p=b")

    result = _apply(table)

    assert result.status.value == "success", result.error
    assert result.partitions_deleted == ["p=b"]
    assert not (table / "p=b").exists()


def test_a_write_starting_after_the_look_at_pending_writes_keeps_the_partition_found(tmp_path, monkeypatch):
    """A Hudi writer writes its requested and inflight instants, then reads the table, finds the
    partition by its marker, and writes its file group there later. Started after the clean's look
    at pending writes, it found the marker still there, so it never writes one again: its files
    land in a folder file-listing readers do not know as a partition. The look must come again once
    the markers are gone; a write that started before then keeps the partition."""
    import runner.execute.clean as clean_module

    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"])
    builder.commit(writes=1)
    builder.delete_partition("p=b")
    real = clean_module.read_pending_writes
    later: list[tuple[Path, bytes]] = []

    def read_pending_writes(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        if not later:  # just after the look: a writer starts, found the partition, writes later
            builder.inflight_commit(writes={"p=b": 1})
            (written,) = [f for f in builder.failed_files if f.path.startswith("p=b/")]
            later.append((table / written.path, (table / written.path).read_bytes()))
            (table / written.path).unlink()
        return found

    monkeypatch.setattr(clean_module, "read_pending_writes", read_pending_writes)

    result = _apply(table)
    for path, data in later:  # the writer writes its file now (its file system makes the folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    assert result.status.value == "success", result.error
    assert later and result.partitions_deleted == []
    assert (table / "p=b" / ".hoodie_partition_metadata").exists()
