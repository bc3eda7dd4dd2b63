"""The fast listing gives exactly what the plain one gave, on every real fixture and on a table
full of traps.

`LocalStorage.walk` lists each folder once and stats files relative to the open folder, and
`discover_partitions` decides its rules once per folder. Both are checked here against plain
references written the obvious way (`os.walk`, then `os.stat` by full path; every rule per file),
which is how the runner listed tables before: whatever the planner builds from the listing is then
unchanged too (tests/plan and tests/execute check the plans themselves).
"""

from __future__ import annotations

import os
import random
from collections import defaultdict
from pathlib import Path

import pytest

from runner.hudi.files import relative_path
from runner.hudi.view import PARTITION_MARKER, ListedFiles, _classify, discover_partitions
from runner.storage import FileInfo, LocalStorage
from runner.testing import TableBuilder
from tests.conftest import extract_fixture, fixture_id, fixture_zips

ZIPS = fixture_zips()


def reference_walk(root: Path) -> list[FileInfo]:
    """`os.walk` in sorted order, never into linked folders, and an `os.stat` (following links)
    per file by its full path; broken links are left out."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        folder = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for name in sorted(filenames):
            try:
                st = os.stat(os.path.join(dirpath, name))
            except FileNotFoundError:
                continue
            path = name if folder == "." else f"{folder}/{name}"
            found.append(FileInfo(path, st.st_size, False, st.st_mtime_ns // 1_000_000))
    return found


def reference_discover(infos: list[FileInfo]) -> ListedFiles:
    """Partitions, their files and the unrecognised files, every rule applied to every file."""
    nested = set()
    for info in infos:
        parts = info.path.split("/")
        for depth, part in enumerate(parts[:-1]):
            if part == ".hoodie" and depth > 0:
                nested.add("/".join(parts[:depth]))
                break
    by_dir: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for info in infos:
        parts = info.path.split("/")
        in_hoodie = info.path == ".hoodie" or info.path.startswith(".hoodie/")
        in_nested = any("/".join(parts[:depth]) in nested for depth in range(1, len(parts)))
        if not in_hoodie and not in_nested:
            folder, _, name = info.path.rpartition("/")
            by_dir[folder].append((name, info.size))

    def is_marker(name: str) -> bool:
        return name == PARTITION_MARKER or name.startswith(PARTITION_MARKER + ".")

    partitions = sorted(d for d, entries in by_dir.items() if any(is_marker(n) for n, _ in entries))
    files = {d: tuple(sorted(e for e in by_dir[d] if not is_marker(e[0]))) for d in partitions}
    unrecognized = sorted(relative_path(d, n) for d, entries in by_dir.items() if d not in partitions
                          for n, _ in entries)
    # A partition with any file in a folder below it (a nested table's included) is crowded.
    crowded = {p for p in partitions for info in infos
               if info.path.startswith(p + "/") and "/" in info.path[len(p) + 1:]}
    return ListedFiles(tuple(partitions), files, tuple(unrecognized), frozenset(crowded))


def assert_same_listing(base: Path) -> None:
    storage = LocalStorage(str(base))
    walked = list(storage.walk())
    assert walked == reference_walk(base)
    assert discover_partitions(storage) == reference_discover(walked)


@pytest.mark.parametrize("zip_path", ZIPS, ids=fixture_id)
def test_every_fixture_lists_as_the_plain_listing_did(zip_path: Path, tmp_path: Path) -> None:
    assert_same_listing(extract_fixture(zip_path, tmp_path))


@pytest.fixture
def trap_table(tmp_path: Path) -> Path:
    """A real table with nested tables, links of every kind, hidden, temp and stray files."""
    root = tmp_path / "t"
    builder = TableBuilder(root, name="t", partitions=["dt=1", "dt=2", "dt=3"], tiny=True)
    builder.commit(writes=2)
    builder.commit(updates=2)
    builder.inflight_commit(writes={"dt=1": 1})
    nested = TableBuilder(root / "dt=2" / "inner", name="inner", partitions=["p=1"], tiny=True)
    nested.commit(writes=1)
    (root / "other" / ".hoodie" / "deeper").mkdir(parents=True)  # a nested table's .hoodie, files one level down
    (root / "other" / ".hoodie" / "deeper" / "x").write_bytes(b"x")
    (root / "other" / PARTITION_MARKER).write_bytes(b"x")
    (root / "other" / "kept.parquet").write_bytes(b"x")
    (root / "dt=3" / f"{PARTITION_MARKER}.parquet").write_bytes(b"x")  # a second marker form
    (root / "dt=3" / "sub").mkdir()
    (root / "dt=3" / "sub" / "below_a_partition.parquet").write_bytes(b"12345")
    (root / "dt=1" / ".f1_0-1-2_20240101000000000.parquet.abc.tmp").write_bytes(b"xy")
    (root / "dt=1" / "notes.txt").write_bytes(b"x")
    (root / "loose.parquet").write_bytes(b"abc")
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "target.parquet").write_bytes(b"outside!")
    (outside / "folder" / "f.parquet").write_bytes(b"x")
    (root / "dt=1" / "link_out.parquet").symlink_to(outside / "target.parquet")
    (root / "dt=1" / "link_in.parquet").symlink_to(root / "loose.parquet")
    (root / "dt=1" / "broken.parquet").symlink_to(root / "missing")
    (root / "dt=3" / "loop").symlink_to(root, target_is_directory=True)
    (root / "dt=3" / "away").symlink_to(outside / "folder", target_is_directory=True)
    os.mkfifo(root / "dt=1" / "fifo")
    # Names around the marker in sorted order: `_classify` looks only at the run of names that
    # start like a marker, so these check both ends of that run and what sorts before it.
    (root / "dt=2" / f"{PARTITION_MARKER}_not_a_marker").write_bytes(b"x")
    (root / "dt=2" / f"{PARTITION_MARKER}X").write_bytes(b"x")
    (root / "dt=2" / "-sorts-before-the-marker.parquet").write_bytes(b"x")
    (root / "lookalike").mkdir()
    (root / "lookalike" / f"{PARTITION_MARKER}_not_a_marker").write_bytes(b"x")  # so not a partition
    (root / "lookalike" / "a.parquet").write_bytes(b"x")
    return root


def test_a_table_full_of_traps_lists_as_the_plain_listing_did(trap_table: Path) -> None:
    assert_same_listing(trap_table)


def test_the_traps_are_listed_by_the_old_rules(trap_table: Path) -> None:
    """What the references above encode, spelled out once on the trap table."""
    listed = discover_partitions(LocalStorage(str(trap_table)))
    walked = {info.path: info for info in LocalStorage(str(trap_table)).walk()}
    assert "dt=1/link_out.parquet" in walked and walked["dt=1/link_out.parquet"].size == len(b"outside!")
    assert "dt=1/broken.parquet" not in walked
    assert not any(p.startswith(("dt=3/loop/", "dt=3/away/")) for p in walked)
    assert "dt=1/fifo" in walked
    assert listed.partitions == ("dt=1", "dt=2", "dt=3")  # not dt=2/inner/p=1, not other, not lookalike
    assert f"{PARTITION_MARKER}_not_a_marker" in dict(listed.files["dt=2"])
    assert "lookalike/a.parquet" in listed.unrecognized
    assert not any("inner" in p or p.startswith("other/") for p in listed.unrecognized)
    assert "dt=3/sub/below_a_partition.parquet" in listed.unrecognized
    assert "loose.parquet" in listed.unrecognized
    assert "dt=1/notes.txt" in {relative_path("dt=1", n) for n, _ in listed.files["dt=1"]}


@pytest.mark.parametrize("seed", range(20))
def test_classifying_unsorted_folders_agrees_with_every_rule_per_file(seed: int) -> None:
    """A store that lists in any order (not local disk): markers of each form, names that only
    start like one, names sorting before and after it, a folder of lookalikes only."""
    rng = random.Random(seed)
    pool = [PARTITION_MARKER, f"{PARTITION_MARKER}.parquet", f"{PARTITION_MARKER}.orc", f"{PARTITION_MARKER}_x",
            f"{PARTITION_MARKER}X", ".hoodie_partition_metadat", "-a.parquet", ".a.log.1", "a.parquet", "z.parquet",
            "~.parquet", "f1_0-1-2_20240101000000000.parquet"]
    by_dir = {f"p{i}": [(name, rng.randrange(5)) for name in rng.sample(pool, rng.randrange(len(pool) + 1))]
              for i in range(6)}
    infos = [FileInfo(relative_path(d, n), size, False, 0) for d, entries in by_dir.items() for n, size in entries]
    assert _classify({d: list(entries) for d, entries in by_dir.items()}) == reference_discover(infos)


def test_walk_of_a_file_or_a_missing_folder_is_empty(trap_table: Path) -> None:
    storage = LocalStorage(str(trap_table))
    assert list(storage.walk("loose.parquet")) == []
    assert list(storage.walk("no/such/folder")) == []
    assert [i.path for i in storage.walk("dt=3")] == [i.path for i in storage.walk() if i.path.startswith("dt=3/")]


def test_a_folder_swapped_for_a_link_after_the_listing_is_not_entered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race `os.walk` left open: a folder listed as a real folder, then replaced by a link to
    somewhere else before the walk enters it. The walk opens it with `O_NOFOLLOW` and skips it."""
    import runner.storage.local as local

    root = tmp_path / "t"
    (root / "p").mkdir(parents=True)
    (root / "p" / "a.parquet").write_bytes(b"x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.parquet").write_bytes(b"x")
    (root / "p" / "swapped").symlink_to(outside, target_is_directory=True)
    listed = local._scan

    def as_listed_before_the_swap(fd: int) -> tuple[list[str], list[str]]:
        files, folders = listed(fd)
        return files, sorted({*folders, "swapped"}) if "a.parquet" in files else folders

    monkeypatch.setattr(local, "_scan", as_listed_before_the_swap)
    assert [i.path for i in LocalStorage(str(root)).walk()] == ["p/a.parquet"]


def test_a_folder_replaced_by_a_plain_file_after_the_listing_fails_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As with `os.walk` before: a listing that changed under the walk is an error naming the
    folder, never a silently shorter listing."""
    import runner.storage.local as local
    from runner.errors import StorageError

    root = tmp_path / "t"
    (root / "p").mkdir(parents=True)
    (root / "p" / "was_a_folder").write_bytes(b"x")
    listed = local._scan

    def as_listed_before_the_swap(fd: int) -> tuple[list[str], list[str]]:
        files, folders = listed(fd)
        if "was_a_folder" not in files:
            return files, folders
        return [f for f in files if f != "was_a_folder"], ["was_a_folder"]

    monkeypatch.setattr(local, "_scan", as_listed_before_the_swap)
    with pytest.raises(StorageError, match=r"Cannot list .*p/was_a_folder"):
        list(LocalStorage(str(root)).walk())
