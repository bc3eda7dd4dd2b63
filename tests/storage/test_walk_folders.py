"""`LocalStorage.walk_folders`, the folder-at-a-time listing planning uses, against `walk`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import runner.storage.local as storage_module
from runner.hudi.view import discover_partitions
from runner.storage import FileInfo, LocalStorage


def _tree(root: Path, outside: Path) -> None:
    for name, data in {
        "hoodie.txt": b"top",
        ".hoodie/hoodie.properties": b"p",
        "p=1/.hoodie_partition_metadata": b"m",
        "p=1/a_0-1-2_20240101000000000.parquet": b"aaaa",
        "p=1/.hidden.tmp": b"",
        "p=1/deep/er/x.parquet": b"xyz",
        "p=2/.hoodie_partition_metadata": b"m",
        "nested/.hoodie/hoodie.properties": b"n",
        "nested/q/.hoodie_partition_metadata": b"m",
        "empty/sub/f": b"1",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (root / "empty/none").mkdir()
    outside.mkdir()
    (outside / "big.parquet").write_bytes(b"0123456789")
    (root / "p=2/linked.parquet").symlink_to(outside / "big.parquet")  # followed: the target's size
    (root / "p=2/broken.parquet").symlink_to(outside / "missing")  # left out
    (root / "p=2/folder_link").symlink_to(outside, target_is_directory=True)  # never entered


def _by_walk(storage: LocalStorage, path: str = "") -> list[tuple[str, list[tuple[str, int]]]]:
    folders: dict[str, list[tuple[str, int]]] = {}
    for info in storage.walk(path):
        folder, _, name = info.path.rpartition("/")
        folders.setdefault(folder, []).append((name, info.size))
    return list(folders.items())


def test_walk_folders_lists_what_walk_lists_a_folder_at_a_time(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _tree(root, tmp_path / "outside")
    storage = LocalStorage(str(root))

    assert list(storage.walk_folders()) == _by_walk(storage)
    assert list(storage.walk_folders("p=1")) == _by_walk(storage, "p=1")
    assert list(storage.walk_folders("missing")) == []
    assert dict(storage.walk_folders())["p=2"] == [(".hoodie_partition_metadata", 1), ("linked.parquet", 10)]


class _FileByFile:
    """A store that lists file by file only (as S3 does): the listing's other path."""

    def __init__(self, storage: LocalStorage) -> None:
        self.uri = storage.uri
        self._storage = storage

    def walk(self, path: str = "") -> Iterator[FileInfo]:
        return self._storage.walk(path)


def test_discovery_is_the_same_whichever_way_the_store_lists(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _tree(root, tmp_path / "outside")
    storage = LocalStorage(str(root))

    by_folder = discover_partitions(storage)
    by_file = discover_partitions(_FileByFile(storage))  # type: ignore[arg-type]

    assert by_folder == by_file
    assert by_folder.partitions == ("p=1", "p=2")
    assert "nested/q/.hoodie_partition_metadata" not in by_folder.unrecognized  # another table's
    assert os.path.exists(root / "p=2/folder_link/big.parquet")  # the link is there, just not listed


def test_a_large_folder_is_stat_ed_in_parts_with_the_same_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    _tree(root, tmp_path / "outside")
    for i in range(50):
        (root / "p=2" / f"f{i:03d}.parquet").write_bytes(b"x" * i)
    storage = LocalStorage(str(root))
    monkeypatch.setattr(storage_module, "STAT_THREADS", 0)
    inline, inline_files = list(storage.walk_folders()), list(storage.walk())

    monkeypatch.setattr(storage_module, "STAT_THREADS", 3)
    monkeypatch.setattr(storage_module, "STAT_PARALLEL_FROM", 2)
    parts: list[int] = []
    real = storage_module._stat_files

    def counting(fd: int, full: str, names: list[str]) -> list[tuple[str, os.stat_result]]:
        parts.append(len(names))
        return real(fd, full, names)

    monkeypatch.setattr(storage_module, "_stat_files", counting)
    assert list(storage.walk_folders()) == inline
    assert list(storage.walk()) == inline_files
    assert max(parts) < 55 and len(parts) > len(inline)  # p=2's 55 files went out in parts
