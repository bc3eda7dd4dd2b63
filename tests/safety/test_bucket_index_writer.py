"""`runner.write` must not write into a bucket-indexed table either.

It routes inserts by size (into small files, or new file groups with random ids) and a bulk insert
into new random groups: in a table Hudi writes with `hoodie.index.type=BUCKET`, every such record
sits outside the file group its bucket names, so the next Hudi upsert of its key writes a second
copy. The refusal comes before anything is written; the `hudi` reader sees the table unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import runner
from runner.errors import RefusedError
from runner.testing.tables import TableBuilder
from tests.safety.conftest import digest
from tests.safety.test_bucket_index import _leave_evidence, _oracle

DECLARATION = """name: t
path: {path}
clean: {{policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: 1}}
table:
  type: COPY_ON_WRITE
  record_key: [id]
  partition_by: [p]
  precombine_field: ts
"""


@pytest.mark.parametrize("arrow", [False, True], ids=["dataframe", "arrow"])
@pytest.mark.parametrize("operation", ["upsert", "insert", "bulk_insert"])
@pytest.mark.parametrize("evidence", ["file_ids", "index_type", "consistent_hashing_folder"])
def test_runner_write_refuses_a_bucket_indexed_table(evidence, operation, arrow, spark: Any, tmp_path: Path):
    table = tmp_path / "t"
    TableBuilder(table, name="t", partitions=["p=a"], version=6, bucket_index=evidence == "file_ids").commit(writes=2)
    _leave_evidence(table, evidence)
    root = tmp_path / "project"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: safety\n")
    (root / "tables" / "t.yml").write_text(DECLARATION.format(path=table))
    before, oracle_before = digest(table), _oracle(table)
    rows = [(100, "a", 1, 1.0, "new"), (1, "a", 2, 2.0, "update")]
    df = spark.createDataFrame(rows, "id long, p string, ts long, amount double, note string")

    with pytest.raises(RefusedError, match="bucket-indexed"):  # an Arrow input too, which starts no Spark
        runner.write(df.toArrow() if arrow else df, "t", operation=operation, project_dir=root)  # type: ignore[attr-defined]

    assert digest(table) == before
    assert _oracle(table) == oracle_before
