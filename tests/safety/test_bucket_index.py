"""A resize must never move records out of the file group a bucket index routes them to.

With `hoodie.index.type=BUCKET` a Hudi writer finds a record's file group by the bucket number at
the start of the file id, never by looking the key up. A resize rewrites several small file groups
into one new group with a fresh id: every moved record is then where the index will never look,
and the next upsert of its key writes a second copy. Readers see nothing wrong until that upsert,
so the oracle here is what the `hudi` reader lists: the same file groups, with their bucket
numbers, and the same rows.

The index type is a writer setting Hudi does not record, so each way the runner can know it is
attacked: the file ids themselves, the property where a tool recorded it, the consistent-hashing
folder, and evidence that appears between `runner plan` and `runner apply`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from runner.cli import main
from runner.hudi.bucket_index import is_bucket_file_id
from runner.testing.tables import TableBuilder
from tests.safety.conftest import SIZED, apply_json, digest, project_for, saved_plan

EVIDENCE = {
    "file_ids": "bucket-numbered ids",
    "index_type": "hoodie.properties sets hoodie.index.type=BUCKET",
    "bucket_engine": "hoodie.index.bucket.engine=CONSISTENT_HASHING",
    "consistent_hashing_folder": ".hoodie/.bucket_index/ exists",
}


def _bucket_table(table: Path, evidence: str) -> TableBuilder:
    """Three small file groups per partition, written as a bucket-index writer leaves them."""
    builder = TableBuilder(table, name="t", partitions=["p=a", "p=b"], version=8,
                           bucket_index=evidence == "file_ids")
    builder.commit(writes=3)
    _leave_evidence(table, evidence)
    return builder


def _leave_evidence(table: Path, evidence: str) -> None:
    properties = table / ".hoodie" / "hoodie.properties"
    if evidence == "index_type":
        properties.write_text(properties.read_text() + "hoodie.index.type=BUCKET\n")
    elif evidence == "bucket_engine":
        properties.write_text(properties.read_text() + "hoodie.index.bucket.engine=CONSISTENT_HASHING\n")
    elif evidence == "consistent_hashing_folder":
        folder = table / ".hoodie" / ".bucket_index" / "consistent_hashing_metadata" / "p=a"
        folder.mkdir(parents=True)
        (folder / "00000000000000.hashing_meta").write_text("{}")


def _oracle(table: Path) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """The file groups and rows the `hudi` reader sees (rows without the file name a resize changes)."""
    from hudi import HudiTable

    hudi_table = HudiTable(str(table))
    groups = sorted((s.partition_path, s.file_id) for s in hudi_table.get_file_slices())
    rows = pa.Table.from_batches(hudi_table.read()).to_pylist()
    return groups, sorted(({k: v for k, v in r.items() if k != "_hoodie_file_name"} for r in rows), key=repr)


@pytest.mark.parametrize("evidence", sorted(EVIDENCE))
def test_a_bucket_indexed_table_is_never_resized(evidence, tmp_path, capsys):
    table = tmp_path / "t"
    _bucket_table(table, evidence)
    root = project_for(table, tmp_path / "project", sizing=SIZED)
    groups_before, rows_before = _oracle(table)
    if evidence == "file_ids":
        assert all(is_bucket_file_id(fid) for _, fid in groups_before)

    code = main(["plan", "--project-dir", str(root), "--format", "json"])
    plan = json.loads(capsys.readouterr().out)
    entry = plan["tables"][0]
    resize = next(s for s in entry["steps"] if s["kind"] == "resize")
    assert resize["groups"] == [], resize
    assert any("resize refused" in n and EVIDENCE[evidence] in n for n in entry["notes"]), entry["notes"]
    assert code == 0

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")
    assert code == 0, report
    assert _oracle(table) == (groups_before, rows_before)
    assert not list((table / ".hoodie" / "timeline").glob("*replacecommit*"))


def test_an_ordinary_table_of_the_same_shape_is_resized(tmp_path, capsys):
    """The control: without any of the evidence the same table is resized, so the test above
    passes because of the bucket index, not because nothing would be resized anyway."""
    table = tmp_path / "t"
    _bucket_table(table, "none")
    root = project_for(table, tmp_path / "project", sizing=SIZED)
    groups_before, rows_before = _oracle(table)

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    groups_after, rows_after = _oracle(table)
    assert rows_after == rows_before
    assert len(groups_after) == 2 and len(groups_before) == 6


@pytest.mark.parametrize("evidence", ["index_type", "consistent_hashing_folder"])
def test_evidence_found_after_the_plan_refuses_the_saved_resize(evidence, tmp_path, capsys):
    table = tmp_path / "t"
    _bucket_table(table, "none")
    root = project_for(table, tmp_path / "project", sizing=SIZED)
    code, plan = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    steps = json.loads(plan.read_text())["tables"][0]["steps"]
    assert next(s for s in steps if s["kind"] == "resize")["groups"]  # a resize was reviewed
    _leave_evidence(table, evidence)  # a bucket-index writer's settings recorded since
    before, oracle_before = digest(table), _oracle(table)

    code, report = apply_json(capsys, str(plan), "--project-dir", str(root))

    assert code == 1, report
    assert "resize refused: the table looks bucket-indexed" in report["tables"][0]["error"]["message"]
    assert digest(table) == before
    assert _oracle(table) == oracle_before


@pytest.mark.parametrize("evidence", ["index_type", "consistent_hashing_folder"])
def test_an_interrupted_resize_of_a_table_found_bucket_indexed_is_rolled_back(evidence, tmp_path, capsys):
    """A resize the runner scheduled before it knew (an older runner, or settings recorded since)
    is not finished: finishing it would move the records out of their buckets all the same."""
    from datetime import UTC, datetime

    from runner.declarations.model import FileSizing, SparkSettings
    from runner.execute.resize import ResizeRunner
    from runner.execute.resize_engine import SparkOnDemand
    from runner.hudi.state import read_table_state
    from runner.plan.sizing import plan_sizing
    from runner.storage import storage_for

    table = tmp_path / "t"
    _bucket_table(table, "none")
    root = project_for(table, tmp_path / "project", sizing=SIZED)
    storage = storage_for(str(table))
    state = read_table_state(storage)
    step = plan_sizing(FileSizing(max_file_size=10 << 20, small_file_limit=5 << 20), state)
    assert step is not None and step.groups
    spark = SparkOnDemand(SparkSettings(master="local[1]"), lambda: pytest.fail("no Spark for a local resize"))
    ResizeRunner(storage, state.metadata, spark=spark, clock=lambda: datetime.now(UTC)).schedule(step)
    _leave_evidence(table, evidence)
    groups_before, rows_before = _oracle(table)

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert any("rolled back the interrupted resize" in n and "bucket-indexed" in n
               for n in report["tables"][0]["notes"]), report["tables"][0]["notes"]
    assert _oracle(table) == (groups_before, rows_before)
    assert not list((table / ".hoodie" / "timeline").glob("*replacecommit*"))
    assert not list((table / ".hoodie" / "timeline").glob("*clustering*"))
