"""The clean's deleter: threads in-process for a local master, Spark on a cluster or past the bound."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from runner.allocation import bulk_allocation
from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table
from runner.execute.deleter import THREADS_UP_TO, Deleter, choose_engine, is_local_master
from runner.planner import plan_one
from runner.storage import DEFAULT_DELETE_THREADS, DeleteResult, LocalStorage, storage_for
from runner.storage.local import LOCAL_DELETE_THREADS
from tests.conftest import FIXTURES, extract_fixture
from tests.execute.conftest import oracle_snapshot
from tests.s3 import S3Server, seed_objects

CLUSTER = "spark://cluster.example:7077"


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4,2]", " local[*] "])
def test_local_masters(master: str) -> None:
    assert is_local_master(master)


@pytest.mark.parametrize("master", [CLUSTER, "yarn", "k8s://https://k:443", "local-cluster[2,1,1024]", "locally"])
def test_cluster_masters(master: str) -> None:
    assert not is_local_master(master)


def test_the_choice_follows_the_master_and_the_size() -> None:
    assert choose_engine(10, "local[2]").engine == "threads"
    assert choose_engine(THREADS_UP_TO, "local[*]").engine == "threads"
    assert choose_engine(THREADS_UP_TO + 1, "local[*]").engine == "spark"
    assert choose_engine(1, CLUSTER).engine == "spark"
    assert CLUSTER in choose_engine(1, CLUSTER).describe()


def _files(root: Path, count: int) -> list[str]:
    names = [f"p={i % 4}/f{i:04d}.parquet" for i in range(count)]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")
    return names


def test_a_local_master_deletes_on_threads_without_starting_spark(tmp_path: Path) -> None:
    names = _files(tmp_path, 50)
    started: list[bool] = []

    def no_spark() -> Any:
        started.append(True)
        raise AssertionError("Spark must not start for a small local job")

    deleter = Deleter(SparkSettings(master="local[2]"), no_spark)
    outcomes = deleter(LocalStorage(str(tmp_path)), [*names[:30], "p=9/gone.parquet"])

    assert outcomes == [DeleteResult(n, True) for n in names[:30]] + [DeleteResult("p=9/gone.parquet", False)]
    assert not started
    assert len(list(tmp_path.rglob("*.parquet"))) == 20
    assert deleter.notes == [deleter.notes[0]]
    assert f"31 files on {LOCAL_DELETE_THREADS} threads in-process" in deleter.notes[0]


def test_past_the_bound_a_local_master_uses_the_spark_job(tmp_path: Path, spark: Any) -> None:
    names = _files(tmp_path, 40)

    collector: list[bool] = []

    def session() -> Any:
        collector.append(gc.isenabled())
        return spark

    deleter = Deleter(SparkSettings(master="local[2]"), session, threads_up_to=10)
    with bulk_allocation():  # as apply runs it: the job turns the collector back on for itself
        outcomes = deleter(LocalStorage(str(tmp_path)), names[:25])
        assert not gc.isenabled()

    assert collector == [True]

    assert sorted(outcomes, key=lambda o: o.path) == [DeleteResult(n, True) for n in sorted(names[:25])]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.parquet")) == sorted(names[25:])
    assert "a Spark job" in deleter.notes[0] and "more than 10 files" in deleter.notes[0]


@pytest.mark.s3
def test_a_cluster_master_always_uses_spark_also_on_s3(spark: Any, s3_server: S3Server, s3_bucket: str) -> None:
    # The shared local session stands in for the cluster's; what matters is that the Spark job is
    # chosen and that its tasks rebuild the S3 client from the pickled storage.
    client = s3_server.client()
    keys = [f"p={i % 3}/f{i:04d}.parquet" for i in range(1200)]
    seed_objects(s3_bucket, [f"t/{key}" for key in keys])
    storage = storage_for(f"s3://{s3_bucket}/t", options=s3_server.options())

    deleter = Deleter(SparkSettings(master=CLUSTER), lambda: spark)
    outcomes = deleter(storage, keys[:1100])

    assert sorted(o.path for o in outcomes if o.deleted and o.error is None) == sorted(keys[:1100])
    left = sorted(o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket, Prefix="t/")["Contents"])
    assert left == sorted(f"t/{k}" for k in keys[1100:])
    assert "a Spark job" in deleter.notes[0] and CLUSTER in deleter.notes[0]


def test_the_note_names_the_pool_size_of_the_storage_that_deleted(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    # Local disk runs a larger pool than S3 (measured, runner/storage/local.py); the run report must
    # name the pool that actually ran, not one shared number.
    assert LOCAL_DELETE_THREADS != DEFAULT_DELETE_THREADS
    local = Deleter(SparkSettings(master="local[2]"))
    local(LocalStorage(str(tmp_path)), _files(tmp_path, 3))
    s3_server.client().put_object(Bucket=s3_bucket, Key="t/p=1/a.parquet", Body=b"x")
    on_s3 = Deleter(SparkSettings(master="local[2]"))
    outcomes = on_s3(storage_for(f"s3://{s3_bucket}/t", options=s3_server.options()), ["p=1/a.parquet"])

    assert outcomes == [DeleteResult("p=1/a.parquet", True)]
    assert f"on {LOCAL_DELETE_THREADS} threads in-process" in local.notes[0]
    assert f"on {DEFAULT_DELETE_THREADS} threads in-process" in on_s3.notes[0]


def test_apply_reports_the_engine_and_keeps_what_readers_see(tmp_path: Path) -> None:
    base = extract_fixture(FIXTURES / "sample_table/cow/v6_timebasedkeygen_nonhivestyle.zip", tmp_path)
    decl = TableDeclaration(
        name="t", path=str(base), source_file="tables/t.yml",
        clean=CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
        file_sizing=FileSizing(small_file_limit=0),
    )
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    planned = plan_one(decl, storage_for(str(base)), now=now)
    assert planned.clean is not None and planned.clean.files_to_delete, "the fixture must have old versions"
    before = oracle_snapshot(base)

    deleter = _CollectorSeen(Deleter(SparkSettings(master="local[2]"), _refuse_spark))

    result = apply_table(decl, None, now=now, spark_settings=SparkSettings(master="local[2]"),
                         deleter_factory=lambda: deleter)

    assert result.status == "success", result
    assert deleter.collector == [False] and gc.isenabled()  # paused for the table's apply, running after
    assert result.files_deleted == len(planned.clean.files_to_delete)
    assert any("in-process" in note for note in result.notes), result.notes
    assert all(not (base / f.path).exists() for f in planned.clean.files_to_delete)
    assert oracle_snapshot(base) == before


class _CollectorSeen:
    """`runner apply`'s deleter, noting whether the cyclic collector ran while it deleted."""

    def __init__(self, inner: Deleter) -> None:
        self.inner, self.notes, self.collector = inner, inner.notes, list[bool]()

    def __call__(self, storage: Any, paths: Any) -> list[DeleteResult]:
        self.collector.append(gc.isenabled())
        return self.inner(storage, paths)


def _refuse_spark() -> Any:
    raise AssertionError("Spark must not start")
