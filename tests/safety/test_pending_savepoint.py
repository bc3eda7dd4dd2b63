"""A savepoint being taken (its `.savepoint.inflight` carries the savepointed instant's time) will
list the latest slices as of that instant: a clean meanwhile must keep them, or the savepoint
completes naming files that are gone and a restore to it fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from runner.cli import main
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for
from runner.testing.tables import TableBuilder
from tests.safety.conftest import project_for


def _rows_as_of(table: Path, instant: str) -> list[dict[str, Any]]:
    from hudi import HudiReadOptions, HudiTableBuilder

    reader = HudiTableBuilder.from_base_uri(str(table)).build()
    batches = reader.read(HudiReadOptions().with_as_of_timestamp(instant))
    return sorted(pa.Table.from_batches(batches).to_pylist(), key=repr)


@pytest.mark.parametrize("version", [6, 8])
def test_the_slices_a_savepoint_in_progress_will_list_are_kept(version, tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=version)
    first = builder.commit(writes=1)
    builder.commit(updates=1)  # KEEP_LATEST_FILE_VERSIONS(1) would delete the first slices
    folder = table / read_table_metadata(storage_for(str(table))).timeline_folder
    (folder / f"{first}.savepoint.inflight").write_bytes(b"")  # `savepoint create` of `first`, not done
    kept = sorted(table.rglob(f"*_{first}.parquet"))
    assert len(kept) == 2
    root = project_for(table, tmp_path / "project")

    code = main(["apply", "--project-dir", str(root), "--auto-approve"])

    assert code == 0, capsys.readouterr().out
    assert all(p.exists() for p in kept)
    expected = sorted(builder.expected_rows(str(first)).to_pylist(), key=repr)
    assert _rows_as_of(table, str(first)) == expected
