"""Helpers shared by the writer tests (plain functions; fixtures live in conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def table_yaml(name: str, *, record_key: str = "[id]", partition_by: str = "[region]",
               precombine: str | None = "ts", sizing: str = "", kind: str = "COPY_ON_WRITE") -> str:
    """A table declaration stored under `warehouse/<name>` in the project."""
    pre = f"  precombine_field: {precombine}\n" if precombine else ""
    return (f"name: {name}\npath: warehouse/{name}\n{sizing}table:\n  type: {kind}\n"
            f"  record_key: {record_key}\n  partition_by: {partition_by}\n{pre}")


def oracle_rows(base: Path, as_of: str | None = None, columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Rows the independent `hudi` reader returns (latest snapshot, or as of an instant), sorted."""
    import pyarrow as pa
    from hudi import HudiReadOptions, HudiTable

    options = HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = HudiTable(str(base)).read(options)
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    if columns:
        table = table.select(list(columns))
    return sorted(table.to_pylist(), key=repr)


def oracle_slices(base: Path) -> list[tuple[str, str, str]]:
    from hudi import HudiTable

    return sorted((s.partition_path, s.file_id, s.base_file_name) for s in HudiTable(str(base)).get_file_slices())
