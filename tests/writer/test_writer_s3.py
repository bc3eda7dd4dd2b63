"""runner.write into a table on an S3-compatible store: every file goes through the pickled `Storage`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import runner
from runner.hudi.state import read_table_state
from runner.storage import storage_for
from tests.s3 import S3Server

pytestmark = pytest.mark.s3

TABLE = """\
name: orders
path: s3://{bucket}/warehouse/orders
table:
  type: COPY_ON_WRITE
  record_key: [id]
  partition_by: [region]
  precombine_field: ts
"""


def test_upsert_into_an_s3_table(
    spark: Any, project: Callable[..., Path], s3_server: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch,
    engine: str,
) -> None:
    for key, value in s3_server.environment().items():
        monkeypatch.setenv(key, value)
    root = project(orders=TABLE.format(bucket=s3_bucket))
    schema = "id long, region string, name string, ts long"
    runner.write(spark.createDataFrame([(1, "eu", "a", 1), (2, "us", "b", 1)], schema), "orders", project_dir=root)
    second = runner.write(spark.createDataFrame([(1, "eu", "a2", 2)], schema), "orders", project_dir=root)
    assert (second.num_updates, second.num_inserts, second.engine) == (1, 0, engine)

    storage = storage_for(f"s3://{s3_bucket}/warehouse/orders")
    state = read_table_state(storage)
    assert state.uncommitted_files == ()
    rows = []
    for group in state.active_groups:
        assert group.latest is not None and group.latest.base_file is not None
        data = storage.read(f"{group.partition}/{group.latest.base_file.name}")
        rows += pq.read_table(pa.BufferReader(data), columns=["id", "name"]).to_pylist()
    assert sorted(rows, key=lambda r: r["id"]) == [{"id": 1, "name": "a2"}, {"id": 2, "name": "b"}]
