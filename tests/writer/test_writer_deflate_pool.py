"""Files written side by side on the driver deflate their own pages; a file written alone shares its
pages out to the deflating pool (`parquet_deflate._deflate_all`). Either way the files read back
alike: the `hudi` reader returns what was written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import runner
from runner.hudi import parquet_deflate
from runner.writer import arrow_input
from tests.writer.writer_helpers import oracle_rows, table_yaml


def _rows(partitions: int, count: int) -> pa.Table:
    return pa.table({"id": list(range(count)), "region": [f"r{i % partitions}" for i in range(count)],
                     "name": [f"n{i}" for i in range(count)], "ts": [1] * count})


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each row group's pages could go to the pool."""
    seen: list[bool] = []
    original = parquet_deflate._deflate_all

    def recorded(bodies: Any, level: int, *, pool: bool = True) -> list[bytearray]:
        seen.append(pool)
        return original(bodies, level, pool=pool)

    monkeypatch.setattr(parquet_deflate, "_deflate_all", recorded)
    return seen


@pytest.mark.parametrize(("threads", "partitions", "pooled"), [(2, 3, False), (2, 1, True), (1, 3, True)])
def test_writers_side_by_side_deflate_their_own_pages(
        project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, pools: list[bool],
        threads: int, partitions: int, pooled: bool) -> None:
    monkeypatch.setattr(arrow_input, "threads", lambda: threads)
    root = project(t=table_yaml("t"))
    rows = _rows(partitions, 3000)
    runner.write(rows, "t", operation="bulk_insert", project_dir=root)
    assert pools and set(pools) == {pooled}
    found = oracle_rows(root / "warehouse" / "t", columns=("id", "region", "name", "ts"))
    assert found == sorted(rows.to_pylist(), key=repr)
