"""The driver engine reads each old base file once per upsert: the index's read serves the merge.

Storage is the real local storage, with its reads counted per path; the table is checked with the
`hudi` reader.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import runner
from runner.hudi.files import BaseFile
from runner.storage.local import LocalStorage
from runner.writer import files, index, local
from tests.writer.writer_helpers import oracle_rows, table_yaml

SCHEMA = "id long, region string, name string, ts long"


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Whole-file reads and opened inputs of `.parquet` files, by path."""
    reads: Counter[str] = Counter()
    read, open_input = LocalStorage.read, LocalStorage.open_input

    def counted_read(self: LocalStorage, path: str) -> bytes:
        if path.endswith(".parquet"):
            reads[path] += 1
        return read(self, path)

    def counted_open(self: LocalStorage, path: str) -> Any:
        if path.endswith(".parquet"):
            reads[path] += 1
        return open_input(self, path)

    monkeypatch.setattr(LocalStorage, "read", counted_read)
    monkeypatch.setattr(LocalStorage, "open_input", counted_open)
    return reads


def _write_twice(spark: Any, root: Path) -> tuple[Any, Any]:
    first = [(i, f"r{i % 3}", f"n{i}", 1) for i in range(300)]
    runner.write(spark.createDataFrame(first, SCHEMA), "orders", project_dir=root)
    second = [(i, f"r{i % 3}", f"n{i}-v2", 2) for i in range(0, 300, 2)] + [(i, "r1", f"n{i}", 2) for i in (1000, 1003)]
    return first, runner.write(spark.createDataFrame(second, SCHEMA), "orders", project_dir=root)


def _expected() -> list[dict[str, Any]]:
    names = {i: f"n{i}-v2" if i % 2 == 0 else f"n{i}" for i in range(300)} | {1000: "n1000", 1003: "n1003"}
    return sorted(({"id": i, "name": n} for i, n in names.items()), key=repr)


def test_each_merged_file_is_read_once_by_a_driver_upsert(
        spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(orders=table_yaml("orders"))
    reads = _count_reads(monkeypatch)
    _, result = _write_twice(spark, root)

    assert result.engine == "driver" and result.num_updates == 150
    assert len(result.files) == 3  # one group per partition, each merged (r1's takes the inserts too)
    assert reads and set(reads.values()) == {1}, reads
    assert oracle_rows(root / "warehouse" / "orders", columns=("id", "name")) == _expected()


def test_a_driver_upserts_merges_find_their_updates_by_the_taggings_rows(
        spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The tagging's row of each update in its old file reaches the merge of that file (through
    routing and the runs by target), which then looks no key up; the table reads as expected."""
    found: list[int | None] = []
    known_rows = files._known_rows

    def recorded(*args: Any) -> Any:
        known = known_rows(*args)
        found.append(None if known is None else len(known[0]))
        return known

    monkeypatch.setattr(files, "_known_rows", recorded)
    root = project(orders=table_yaml("orders"))
    _, result = _write_twice(spark, root)

    assert result.engine == "driver" and result.num_updates == 150
    assert len(found) == 3 and None not in found and sum(found) == 150  # type: ignore[arg-type]
    assert oracle_rows(root / "warehouse" / "orders", columns=("id", "name")) == _expected()


def test_files_beyond_the_memory_budget_are_read_again_by_their_merge(
        spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "OLD_FILES_MAX_BYTES", 0)
    root = project(orders=table_yaml("orders"))
    reads = _count_reads(monkeypatch)
    _, result = _write_twice(spark, root)

    assert result.engine == "driver" and result.num_updates == 150
    # The index's read, then the merge's two readers: its batches, and the ranges of the pages it
    # may copy (`files._old_pages`), neither holding the whole file.
    assert reads and set(reads.values()) == {3}, reads
    assert oracle_rows(root / "warehouse" / "orders", columns=("id", "name")) == _expected()


def test_index_holds_only_the_kept_files_and_one_being_read(
        spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A file over the keep budget is let go as soon as its index rows are taken: while the index is
    read, the live `OldFile`s are the kept ones plus the one in hand, not every file read so far."""
    root = project(orders=table_yaml("orders"))
    rows = [(i, f"r{i % 6}", f"customer-{i}", 1) for i in range(1200)]
    runner.write(spark.createDataFrame(rows, SCHEMA), "orders", project_dir=root)
    table = root / "warehouse" / "orders"
    files = sorted((p.parent.name, BaseFile.parse(p.name, p.stat().st_size)) for p in table.glob("*/*.parquet"))
    assert len(files) == 6 and all(base is not None for _, base in files)
    sizes = [base.size for _, base in files if base is not None]
    live: dict[int, int] = {}
    peaks: list[int] = []
    read = index.read_old_file

    def tracked(storage: Any, partition: str, base: BaseFile, virtual_keys: Any = None) -> index.OldFile:
        old = read(storage, partition, base, virtual_keys)
        live[id(old)] = old.size
        weakref.finalize(old, live.pop, id(old))
        peaks.append(sum(live.values()))
        return old

    monkeypatch.setattr(index, "read_old_file", tracked)
    keys, kept = index.index_table(LocalStorage(str(table)), files, threads=1, keep_bytes=max(sizes))  # type: ignore[arg-type]

    assert sorted(keys.column("_w_ikey").to_pylist(), key=int) == [str(i) for i in range(1200)]
    assert len(kept) == 1  # the first file fits the budget; with it kept, no other does
    kept_bytes = sum(old.size for old in kept.values())
    assert max(peaks) <= kept_bytes + max(sizes) < sum(sizes), (peaks, sizes)
    assert sum(live.values()) == kept_bytes  # the others are gone once the index is built


def test_an_arrow_upsert_lets_go_of_old_files_it_does_not_merge_before_writing(
        project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The index reads every latest base file of a touched partition (while the records are
    de-duplicated), but only the files the upsert merges are held through the file writes."""
    import pyarrow as pa

    root = project(orders=table_yaml("orders"))

    def orders(ids: range, ts: int) -> pa.Table:
        return pa.table({"id": pa.array(list(ids), pa.int64()), "region": ["r0"] * len(ids),
                         "name": [f"customer-{i}-{ts}" for i in ids], "ts": pa.array([ts] * len(ids), pa.int64())})

    # Two file groups in one partition: each bulk insert makes a new one.
    runner.write(orders(range(0, 100), 1), "orders", project_dir=root, operation="bulk_insert")
    runner.write(orders(range(100, 200), 1), "orders", project_dir=root, operation="bulk_insert")
    live: dict[int, str] = {}
    read = index.read_old_file

    def tracked(storage: Any, partition: str, base: BaseFile, virtual_keys: Any = None) -> index.OldFile:
        old = read(storage, partition, base, virtual_keys)
        live[id(old)] = base.name
        weakref.finalize(old, live.pop, id(old))
        return old

    at_writes: list[set[str]] = []
    write_targets = local.write_targets

    def writes(task: Any, routed: Any, order: Any, workers: int, old_files: Any = None) -> Any:
        at_writes.append(set(live.values()))
        return write_targets(task, routed, order, workers, old_files)

    monkeypatch.setattr(index, "read_old_file", tracked)
    monkeypatch.setattr(local, "write_targets", writes)
    result = runner.write(orders(range(0, 10), 2), "orders", project_dir=root)  # updates of the first group only

    assert result.num_updates == 10 and result.num_inserts == 0 and len(result.files) == 1
    merged = {p.name for p in (root / "warehouse" / "orders").glob("*/*.parquet")
              if p.name.split("_")[0] == result.files[0].split("/")[-1].split("_")[0]
              and p.name != result.files[0].split("/")[-1]}
    assert len(merged) == 1 and at_writes == [merged]
    names = {r["id"]: r["name"] for r in oracle_rows(root / "warehouse" / "orders", columns=("id", "name"))}
    assert len(names) == 200 and names[5] == "customer-5-2" and names[150] == "customer-150-1"
