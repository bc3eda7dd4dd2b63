"""Failed writes are invisible, and the next write rolls them back the way Hudi's EAGER policy does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import runner
from runner.errors import RefusedError, StepFailed
from runner.failpoints import ENV as FAILPOINT_ENV
from runner.failpoints import EXIT_CODE as FAILPOINT_EXIT
from runner.hudi.metadata import (
    ClusteringGroup,
    ClusteringSlice,
    RequestedReplace,
    decode_rollback_metadata,
    decode_rollback_plan,
    encode_requested_replace,
)
from runner.hudi.state import read_table_state
from runner.storage import storage_for
from runner.writer import commit as commit_module
from tests.writer.writer_helpers import oracle_rows, table_yaml

SCHEMA = "id long, region string, name string, ts long"
# Every failure here must be handled alike by both write engines (see `engine` in conftest.py).
pytestmark = pytest.mark.usefixtures("engine")


def _names(base: Path) -> list[str]:
    return sorted(p.name for p in (base / ".hoodie").iterdir() if p.is_file())


def _pending_instants(base: Path) -> set[str]:
    names = _names(base)
    return {n.split(".")[0] for n in names if n.endswith(".inflight") and f"{n.split('.')[0]}.commit" not in names}


def _pending_files(base: Path) -> tuple[str, ...]:
    return read_table_state(storage_for(str(base))).uncommitted_files


def _assert_rolled_back(base: Path, failed: str, result: Any) -> None:
    assert result.rolled_back == (failed,)
    names = _names(base)
    assert not [n for n in names if n.startswith(failed)]
    (rollback,) = [n for n in names if n.endswith(".rollback")]
    assert f"{rollback}.requested" in names and f"{rollback}.inflight" in names
    meta = decode_rollback_metadata((base / ".hoodie" / rollback).read_bytes(), path=rollback)
    plan = decode_rollback_plan((base / ".hoodie" / f"{rollback}.requested").read_bytes(), path=rollback)
    assert meta.commits_rolled_back == (failed,) and plan.instant_time == failed
    assert all(failed in f for files in meta.deleted_files.values() for f in files)
    assert _pending_files(base) == ()
    assert not (base / ".hoodie/.temp" / failed).exists()


def test_a_write_that_raises_is_invisible_and_rolled_back_next_time(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(orders=table_yaml("orders"))
    base = root / "warehouse" / "orders"
    runner.write(spark.createDataFrame([(1, "eu", "a", 1)], SCHEMA), "orders", project_dir=root)
    before = oracle_rows(base)

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(commit_module, "complete", crash)
    with pytest.raises(StepFailed, match="disk full"):
        runner.write(spark.createDataFrame([(1, "eu", "b", 2), (2, "us", "c", 2)], SCHEMA), "orders", project_dir=root)
    monkeypatch.undo()

    (failed,) = _pending_instants(base)
    assert f"{failed}.commit" not in _names(base)
    assert oracle_rows(base) == before
    assert len(_pending_files(base)) == 2  # the merged eu file and the new us file

    result = runner.write(spark.createDataFrame([(3, "eu", "d", 3)], SCHEMA), "orders", project_dir=root)
    _assert_rolled_back(base, failed, result)
    assert sorted(r["id"] for r in oracle_rows(base)) == [1, 3]


def test_a_hand_made_failed_write_without_markers_is_found_by_listing(
    spark: Any, project: Callable[..., Path]
) -> None:
    root = project(orders=table_yaml("orders"))
    base = root / "warehouse" / "orders"
    first = runner.write(spark.createDataFrame([(1, "eu", "a", 1)], SCHEMA), "orders", project_dir=root)
    failed = str(int(first.instant) + 5)
    (base / ".hoodie" / f"{failed}.commit.requested").write_bytes(b"")
    (base / ".hoodie" / f"{failed}.inflight").write_bytes(b"")
    source = base / first.files[0]
    stray = source.parent / f"deadbeef-0000-0000-0000-000000000000-0_0-1-2_{failed}.parquet"
    shutil.copy(source, stray)
    assert sorted(r["id"] for r in oracle_rows(base)) == [1]

    result = runner.write(spark.createDataFrame([(2, "eu", "b", 1)], SCHEMA), "orders", project_dir=root)
    _assert_rolled_back(base, failed, result)
    assert not stray.exists()


@pytest.mark.crash
def test_a_killed_write_leaves_its_lock_and_files_and_the_next_write_cleans_up(
    spark: Any, project: Callable[..., Path], engine: str
) -> None:
    root = project(orders=table_yaml("orders"))
    base = root / "warehouse" / "orders"
    runner.write(spark.createDataFrame([(1, "eu", "a", 1)], SCHEMA), "orders", project_dir=root)
    killed = _write_killed_at(root, engine, "after_files", [(1, "eu", "x", 5), (9, "us", "y", 5)])
    assert killed.returncode == FAILPOINT_EXIT, killed.stderr[-2000:]
    assert f"runs on the {engine}" in killed.stderr
    assert (base / ".hoodie/.locks/runner.lock").exists()
    (failed,) = _pending_instants(base)
    assert len(_pending_files(base)) == 2
    assert sorted(r["name"] for r in oracle_rows(base)) == ["a"]

    result = runner.write(spark.createDataFrame([(2, "eu", "b", 1)], SCHEMA), "orders", project_dir=root)
    _assert_rolled_back(base, failed, result)
    assert sorted(r["name"] for r in oracle_rows(base)) == ["a", "b"]


def test_updates_to_a_group_in_pending_clustering_are_refused(spark: Any, project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"))
    base = root / "warehouse" / "orders"
    first = runner.write(spark.createDataFrame([(1, "eu", "a", 1)], SCHEMA), "orders", project_dir=root)
    partition, name = first.files[0].split("/")
    file_id = name.split("_")[0]
    plan = RequestedReplace(
        "CLUSTER",
        (ClusteringGroup((ClusteringSlice(partition, file_id, name),)),),
        "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
        {},
    )
    pending = str(int(first.instant) + 1)
    (base / ".hoodie" / f"{pending}.replacecommit.requested").write_bytes(
        encode_requested_replace(plan, base_path=f"file:{base}")
    )
    with pytest.raises(RefusedError, match="pending clustering or compaction"):
        runner.write(spark.createDataFrame([(1, "eu", "b", 2)], SCHEMA), "orders", project_dir=root)
    # Inserts avoid the group (it is no small-file candidate), the refused write's requested commit is
    # rolled back like any failed write, and the pending plan is left alone.
    result = runner.write(
        spark.createDataFrame([(2, "eu", "c", 2)], SCHEMA), "orders", operation="insert", project_dir=root
    )
    assert len(result.rolled_back) == 1 and file_id not in result.files[0]
    assert (base / ".hoodie" / f"{pending}.replacecommit.requested").exists()


def test_a_rollback_interrupted_after_deleting_is_finished_by_the_next_write(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.writer import rollback as rollback_module

    root = project(orders=table_yaml("orders"))
    base = root / "warehouse" / "orders"
    runner.write(spark.createDataFrame([(1, "eu", "a", 1)], SCHEMA), "orders", project_dir=root)

    def crash(*args: object, **kwargs: object) -> dict[str, object]:
        raise OSError("killed")

    monkeypatch.setattr(commit_module, "complete", crash)
    with pytest.raises(StepFailed):
        runner.write(spark.createDataFrame([(2, "eu", "b", 1)], SCHEMA), "orders", project_dir=root)
    (failed,) = _pending_instants(base)
    monkeypatch.undo()

    monkeypatch.setattr(rollback_module, "_metadata", crash)  # dies after deleting, before `R.rollback`
    with pytest.raises(StepFailed, match="rollback of failed writes failed: killed"):
        runner.write(spark.createDataFrame([(3, "eu", "c", 1)], SCHEMA), "orders", project_dir=root)
    monkeypatch.undo()
    assert [n for n in _names(base) if n.endswith(".rollback.inflight")]
    assert not [n for n in _names(base) if n.endswith(".rollback")]

    result = runner.write(spark.createDataFrame([(4, "eu", "d", 1)], SCHEMA), "orders", project_dir=root)
    _assert_rolled_back(base, failed, result)
    assert sorted(r["id"] for r in oracle_rows(base)) == [1, 4]


@pytest.mark.crash
def test_a_write_killed_mid_file_leaves_a_temporary_file_which_the_next_write_removes(
    spark: Any, project: Callable[..., Path], engine: str
) -> None:
    """Base files stream to a hidden temporary file (`Storage.create_new`); a write killed while
    writing one leaves that file, never a truncated base file, and the rollback removes it."""
    root = project(orders=table_yaml("orders"))
    base = root / "warehouse" / "orders"
    runner.write(spark.createDataFrame([(1, "eu", "a", 1)], SCHEMA), "orders", project_dir=root)
    killed = _write_killed_at(root, engine, "mid_file", [(1, "eu", "x", 5), (9, "eu", "y", 5)])
    # The driver engine writes in the killed process itself; the Spark engine's task dies in its
    # Python worker, so the job fails and the driver reports the failure.
    expected = FAILPOINT_EXIT if engine == "driver" else 1
    assert killed.returncode == expected, killed.stderr[-2000:]
    (failed,) = _pending_instants(base)
    (left,) = list(base.rglob("*.tmp"))
    assert left.parent.name == "region=eu" and left.name.startswith(".") and failed in left.name
    assert not [p for p in base.rglob("*.parquet") if failed in p.name]  # nothing was published
    assert sorted(r["name"] for r in oracle_rows(base)) == ["a"]

    result = runner.write(spark.createDataFrame([(2, "eu", "b", 1)], SCHEMA), "orders", project_dir=root)
    _assert_rolled_back(base, failed, result)
    assert not list(base.rglob("*.tmp"))
    assert sorted(r["name"] for r in oracle_rows(base)) == ["a", "b"]


def _write_killed_at(root: Path, engine: str, failpoint: str,
                     rows: list[tuple[Any, ...]]) -> subprocess.CompletedProcess[str]:
    """Run `runner.write(rows)` on `engine` in a fresh process that the failpoint kills."""
    script = textwrap.dedent(f"""
        import logging
        import runner
        from runner.writer import local
        logging.basicConfig(level=logging.INFO)
        local.PINNED = {engine!r}
        from runner.declarations.model import SparkSettings
        from runner.execute.spark import get_spark
        # The shared session's shuffle partitions: with Spark's 200 the killed write ran 1,009 tasks.
        spark = get_spark(SparkSettings(master="local[1]", conf=(("spark.sql.shuffle.partitions", "2"),)))
        df = spark.createDataFrame({rows!r}, "{SCHEMA}")
        runner.write(df, "orders", project_dir={str(root)!r})
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")} | {FAILPOINT_ENV: failpoint}
    return subprocess.run(
        [sys.executable, "-c", script], check=False, env=env, capture_output=True, text=True, timeout=300
    )
