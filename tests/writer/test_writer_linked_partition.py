"""Attack: `runner.write` into a partition folder that is a symbolic link.

The table's listings never enter a linked folder (`runner.hudi.view`), so the writer's index would
not find the records stored there: an upsert of one of them became an insert, a second copy of the
record in a new file group (where the link stays inside the table, nothing stopped it). The write
is refused before any data file is written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from tests.writer.writer_helpers import oracle_rows, table_yaml


def _rows(**columns: list[object]) -> pa.Table:
    return pa.table(columns)


@pytest.mark.parametrize("target", ["outside the table", "inside the table"])
def test_an_upsert_into_a_linked_partition_is_refused_and_writes_no_second_copy(
        target: str, project: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(orders=table_yaml("orders"))
    monkeypatch.chdir(root)
    runner.write(_rows(id=[1, 2], region=["eu", "us"], name=["a", "b"], ts=[1, 1]), "orders")
    base = root / "warehouse" / "orders"
    moved = tmp_path / "other_disk" if target == "outside the table" else base / "moved"
    moved.mkdir()
    shutil.move(str(base / "region=us"), str(moved / "region=us"))
    os.symlink(moved / "region=us", base / "region=us", target_is_directory=True)
    before = oracle_rows(base)
    files = sorted(p.name for p in (moved / "region=us").iterdir())

    with pytest.raises(RefusedError, match="'region=us' is a symbolic link"):
        runner.write(_rows(id=[2], region=["us"], name=["B"], ts=[2]), "orders", operation="upsert")

    assert oracle_rows(base) == before
    assert sorted(p.name for p in (moved / "region=us").iterdir()) == files
