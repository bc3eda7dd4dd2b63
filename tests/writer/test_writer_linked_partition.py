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
from runner.writer import local
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


@pytest.mark.parametrize(("target", "engine"), [("outside the table", "driver"), ("inside the table", "driver"),
                                               ("inside the table", "spark")])
def test_a_bulk_insert_into_a_linked_partition_is_refused_before_any_file_is_written(
        target: str, engine: str, project: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    """A bulk insert reads no index, but its files would land where the link leads: outside the
    table, or in another partition's folder (inside), whose listing then holds records of a
    partition it is not, which the whole-table listing counts as that folder's own."""
    root = project(orders=table_yaml("orders"))
    monkeypatch.chdir(root)
    runner.write(_rows(id=[1, 2], region=["eu", "us"], name=["a", "b"], ts=[1, 1]), "orders")
    base = root / "warehouse" / "orders"
    moved = tmp_path / "other_disk" if target == "outside the table" else base / "region=eu"
    if target == "outside the table":
        moved.mkdir()
        shutil.move(str(base / "region=us"), str(moved / "region=us"))
        os.symlink(moved / "region=us", base / "region=us", target_is_directory=True)
        landing = moved / "region=us"
    else:  # region=us's folder gone, and a link in its place leading into region=eu's
        shutil.rmtree(base / "region=us")
        os.symlink(base / "region=eu", base / "region=us", target_is_directory=True)
        landing = base / "region=eu"
    before = oracle_rows(base)
    files = sorted(p.name for p in landing.iterdir())

    data: object = _rows(id=[3], region=["us"], name=["c"], ts=[2])
    if engine == "spark":
        monkeypatch.setattr(local, "PINNED", "spark")
        data = request.getfixturevalue("spark").createDataFrame(data.to_pandas())  # type: ignore[union-attr]

    with pytest.raises(RefusedError, match="'region=us' is a symbolic link"):
        runner.write(data, "orders", operation="bulk_insert")  # type: ignore[arg-type]

    assert oracle_rows(base) == before
    assert sorted(p.name for p in landing.iterdir()) == files
