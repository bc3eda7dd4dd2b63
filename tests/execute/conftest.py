"""Helpers for apply tests: a Spark-backed deleter and the hudi-reader oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest


@pytest.fixture
def spark_deleter(spark: Any):
    """Factory returning the same Spark delete job `runner apply` uses, on the shared session."""
    from runner.execute.spark import delete_files

    def factory():
        def delete(storage, paths):
            return delete_files(spark, storage, paths)

        return delete

    return factory


def oracle_snapshot(base: Path) -> tuple[list[tuple[str, str, str, tuple[str, ...]]], list[dict[str, Any]]]:
    """What the independent `hudi` reader sees: latest slices and the rows (minus volatile columns)."""
    from hudi import HudiTable

    table = HudiTable(str(base))
    slices = sorted(
        (s.partition_path, s.file_id, s.base_file_name, tuple(sorted(s.log_file_names)))
        for s in table.get_file_slices()
    )
    batches = table.read()
    if not batches:
        return slices, []
    rows = pa.Table.from_batches(batches).to_pylist()
    return slices, sorted(rows, key=repr)
