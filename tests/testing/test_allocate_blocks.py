"""`allocate_blocks`, which bench_mdt_clean.py uses to give tiny-mode data files real disk blocks: a
clean of such files then frees real extents, as on a real table, without writing gigabytes."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

from runner.testing import TableBuilder
from runner.testing.data import allocate_blocks, unshare

SIZE = 432 * 1024


def test_a_tiny_mode_file_gets_blocks_for_its_whole_length_and_keeps_its_bytes(tmp_path: Path) -> None:
    b = TableBuilder(tmp_path / "t", name="t", partitions=["dt=1"], tiny=True, file_bytes=SIZE)
    b.commit(writes=1)
    (path,) = (tmp_path / "t" / "dt=1").glob("*.parquet")
    before = path.read_bytes()
    assert path.stat().st_blocks * 512 < SIZE // 2  # built sparse: the hole has no blocks

    allocated = allocate_blocks(str(path))

    after = path.stat()
    assert allocated == after.st_blocks * 512 >= SIZE
    assert after.st_size == SIZE
    assert path.read_bytes() == before
    assert pq.read_metadata(path).num_rows == 0  # still the same valid (empty) Parquet file


def test_an_empty_file_needs_no_blocks(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.touch()
    assert allocate_blocks(str(path)) == 0
    assert os.stat(path).st_size == 0


def test_an_unshared_hard_link_keeps_the_bytes_and_frees_the_original(tmp_path: Path) -> None:
    b = TableBuilder(tmp_path / "t", name="t", partitions=["dt=1"], tiny=True, file_bytes=SIZE)
    b.commit(writes=1)
    (original,) = (tmp_path / "t" / "dt=1").glob("*.parquet")
    link = tmp_path / "link.parquet"
    os.link(original, link)

    unshare(str(link))
    allocate_blocks(str(link))

    assert link.read_bytes() == original.read_bytes()
    assert os.stat(link).st_ino != os.stat(original).st_ino
    assert os.stat(original).st_nlink == 1
    assert os.stat(original).st_blocks * 512 < SIZE // 2  # the original stays sparse
