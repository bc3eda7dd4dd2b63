"""Base files stream to storage a row group at a time (`Storage.create_new`), behind their marker."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from runner.hudi.files import BaseFile
from runner.hudi.footer import record_key_footer
from runner.storage import LocalStorage
from runner.writer import files
from runner.writer.markers import marker_path
from runner.writer.schema import PARTITION_PATH, RECORD_KEY, arrow_schema, file_avro_schema_json

SPARK_SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
]}
INSTANT = "20261123080000000"


def _context(root: Path) -> files.FileContext:
    return files.FileContext(
        storage=LocalStorage(str(root)), instant=INSTANT, write_token="0-0-0", partition_id=0,
        schema=arrow_schema(SPARK_SCHEMA), avro_schema=file_avro_schema_json(SPARK_SCHEMA, "t"),
        max_file_size=1 << 40, avg_record_size=100,
    )


def _rows(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    keys = pa.array(ids).cast(pa.string())
    return pa.table({"id": ids, "name": pc.binary_join_element_wise("name-", keys, ""), RECORD_KEY: keys,
                     PARTITION_PATH: pa.repeat(pa.scalar("p"), n)})


def test_a_create_handle_streams_each_row_group_to_a_hidden_file_published_at_close(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    handle = files.CreateHandle(ctx, "p", "group-0")
    rows = _rows(files.ROW_GROUP_ROWS + 1000)
    name = ctx.file_name("group-0")
    assert not (tmp_path / "p").exists()

    handle.write(rows.slice(0, files.ROW_GROUP_ROWS))  # a full row group: written now
    handle.write(rows.slice(files.ROW_GROUP_ROWS))  # 1,000 rows: they wait for close

    assert (tmp_path / marker_path(INSTANT, "p", name, "CREATE")).exists()  # the marker came first
    (temporary,) = (tmp_path / "p").glob(f".{name}.*.tmp")
    assert temporary.stat().st_size > 500_000  # the row group (about 0.8 MB deflated) is on disk, not in memory
    assert not (tmp_path / "p" / name).exists()  # and nothing is published yet

    (written,) = handle.close()

    assert not list((tmp_path / "p").glob("*.tmp"))
    parquet = pq.ParquetFile(tmp_path / "p" / name)
    assert parquet.metadata.num_row_groups == 2 and written.size == (tmp_path / "p" / name).stat().st_size
    footer = {k.decode(): v.decode() for k, v in parquet.metadata.metadata.items()}
    keys = pa.chunked_array([rows.column(RECORD_KEY).combine_chunks()])
    assert {k: footer[k] for k in record_key_footer(keys)} == record_key_footer(keys)  # every key, at close
    assert parquet.read(columns=["id"]).column("id").to_pylist() == rows.column("id").to_pylist()


def test_a_failing_merge_publishes_nothing_and_removes_its_temporary_file(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    handle = files.CreateHandle(ctx, "p", "group-0")
    handle.write(_rows(10))
    (base,) = handle.close()
    old = BaseFile.parse(base.name)
    assert old is not None
    later = files.FileContext(**{**{f: getattr(ctx, f) for f in ctx.__dataclass_fields__}, "write_token": "1-0-0",
                                 "instant": "20261123090000000"})
    bad = _rows(3).drop_columns(["name"])  # a column short: stamping the incoming rows fails mid-merge

    with pytest.raises(KeyError):
        files.merge(later, "p", old, bad)

    assert sorted(p.name for p in (tmp_path / "p").iterdir() if not p.name.startswith(".hoodie")) == [base.name]
