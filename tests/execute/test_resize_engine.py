"""The resize's two engines: a local master rewrites on the driver's threads, a cluster or Spark
Connect on Spark tasks; both run the same task function and write files a reader cannot tell apart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runner.errors import StepFailed
from runner.execute import resize_engine
from runner.execute.resize import ResizeRunner, run_resize
from runner.execute.resize_engine import engine_for
from runner.execute.resize_plan import groups_of_step
from runner.hudi.files import BaseFile
from runner.hudi.state import read_table_metadata
from runner.spark_jobs import executors_seen
from tests.execute.test_resize import clock, plan, snapshot, v6_small  # noqa: F401 - v6_small is a fixture

NAME = "_hoodie_file_name"
# A pool of two workers needs a machine of two CPUs (a local master's cores never exceed them).
TWO_CPUS = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs for two workers")


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4,2]", " local[3] "])
def test_a_local_master_rewrites_on_the_driver_with_at_most_its_cores(master):
    choice = engine_for(master, cores=2, groups=6)
    assert choice.engine == "driver" and choice.threads == 2
    assert f"local master {master}" in choice.reason
    assert choice.describe(6).startswith("rewrote 6 groups on 2 threads in the driver: local master")


def test_the_pool_has_no_more_threads_than_groups_or_the_table_s_task_bound():
    assert engine_for("local[8]", cores=8, groups=3).threads == 3
    assert engine_for("local[8]", cores=8, groups=30, max_tasks=1).threads == 1
    assert engine_for("local[8]", cores=8, groups=1).describe(1) .startswith("rewrote 1 group on 1 thread in")


@pytest.mark.parametrize("master", ["spark://host:7077", "yarn", "k8s://https://host:6443", "localhost:7077"])
def test_a_cluster_master_always_uses_spark(master, monkeypatch):
    monkeypatch.setattr(resize_engine, "PINNED", "driver")  # a pin never moves a cluster's job to the driver
    choice = engine_for(master, cores=2, groups=6)
    assert choice.engine == "spark" and master in choice.reason
    assert choice.describe(6).startswith("rewrote 6 groups on Spark tasks: spark.master is")


def test_a_spark_connect_session_always_uses_spark():
    choice = engine_for(None, cores=2, groups=6)
    assert choice.engine == "spark" and "Spark Connect" in choice.reason


def test_the_shared_local_session_chooses_the_driver_with_its_two_cores(spark):
    choice = resize_engine.choose_engine(spark, groups=5)
    assert (choice.engine, choice.threads) == ("driver", min(2, os.cpu_count() or 1))


def _resize(base: Path, engine: str, spark, monkeypatch) -> tuple[object, set[str]]:
    monkeypatch.setattr(resize_engine, "PINNED", engine)
    storage, state, step = plan(base)
    with executors_seen() as seen:
        outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)
    return outcome, seen


def test_both_engines_write_files_a_reader_cannot_tell_apart(v6_small, spark, monkeypatch, tmp_path):  # noqa: F811
    other = Path(shutil.copytree(v6_small, tmp_path / "other", symlinks=True))
    before = snapshot(v6_small)

    driver, driver_executors = _resize(v6_small, "driver", spark, monkeypatch)
    tasks, spark_executors = _resize(other, "spark", spark, monkeypatch)

    assert snapshot(v6_small) == before and snapshot(other) == before  # the `hudi` reader
    assert not driver_executors and spark_executors  # no Spark job ran for the driver's rewrite
    assert driver.notes[0].startswith(f"rewrote 3 groups on {_driver_pool()}: local master local[2]")
    assert tasks.notes[0].startswith("rewrote 3 groups on Spark tasks: pinned")
    assert len(driver.output_files) == len(tasks.output_files) == 3
    # group i of the job (largest first) gets task i's write token, as Spark's task i would
    tokens = [BaseFile.parse(p.rsplit("/", 1)[-1]).write_token for p in driver.output_files]  # type: ignore[union-attr]
    assert tokens == ["0-0-0", "1-0-0", "2-0-0"]
    for mine, theirs in zip(driver.output_files, tasks.output_files, strict=True):
        a, b = pq.ParquetFile(v6_small / mine), pq.ParquetFile(other / theirs)
        assert a.schema_arrow == b.schema_arrow and a.schema == b.schema
        assert a.metadata.metadata == b.metadata.metadata  # key range and bloom filter
        assert a.metadata.num_row_groups == b.metadata.num_row_groups
        assert a.read().drop_columns([NAME]) == b.read().drop_columns([NAME])
        assert set(a.read(columns=[NAME]).column(0).to_pylist()) == {mine.rsplit("/", 1)[-1]}
    assert (driver.records_written, driver.files_rewritten) == (tasks.records_written, tasks.files_rewritten)


def _driver_pool() -> str:
    """How the default note names the driver's pool on this machine's cores (local[2])."""
    return "2 threads in the driver" if (os.cpu_count() or 1) >= 2 else "1 thread in the driver"


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_a_failed_group_fails_the_step_and_rolls_it_back(pool, v6_small, spark, monkeypatch):  # noqa: F811
    monkeypatch.setattr(resize_engine, "PINNED", "driver")
    monkeypatch.setattr(resize_engine, "PINNED_POOL", pool)
    before = snapshot(v6_small)
    storage, state, step = plan(v6_small)
    runner = ResizeRunner(storage, state.metadata, spark=spark, clock=clock)
    pending, _ = runner.schedule(step)
    groups = groups_of_step(step)
    smallest = min(groups, key=lambda g: g.input_bytes)
    broken = v6_small / smallest.inputs[0]
    good = broken.read_bytes()
    broken.write_bytes(b"not parquet")

    with pytest.raises(StepFailed, match=rf"clustering {pending.time} .*rewriting 3 group\(s\) failed: "
                       r"ArrowInvalid: .*Parquet magic bytes not found") as failed:
        runner.execute(pending, groups)

    assert isinstance(failed.value.__cause__, pa.ArrowInvalid)  # the same error whichever pool ran the group
    assert broken.name in failed.value.message and "the clustering was rolled back" in failed.value.message

    # Left pending, it would block Hudi's updates of its groups: the instant and every file it wrote are gone.
    assert not read_table_metadata(storage).timeline.pending()
    assert not list(v6_small.rglob("*.tmp"))
    assert not list(v6_small.rglob(f"*_{pending.time}.parquet"))
    broken.write_bytes(good)
    assert snapshot(v6_small) == before

    storage, state, step = plan(v6_small)  # the next apply plans afresh and rewrites
    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    assert outcome.files_rewritten == sum(len(g.files) for g in step.groups)
    assert snapshot(v6_small) == before
    assert not read_table_metadata(storage).timeline.pending()


@pytest.mark.spark
def test_resize_partitions_bounds_the_driver_s_threads_and_apply_says_which_engine_ran(tmp_path, capsys, spark):
    from tests.execute.test_table_spark_apply import apply_json, rewrite_tasks, sized_project

    bounded = sized_project(tmp_path / "bounded", "spark:\n  resize_partitions: 1\n")
    result = apply_json(capsys, bounded)["tables"][0]
    files, _ = rewrite_tasks(bounded, result)
    assert files > 1
    # the project's master (the runner's default, local[*]) decides, without a session started for it
    assert f"rewrote {files} groups on 1 thread in the driver: local master local[*]" in " ".join(result["notes"])


def test_a_resize_on_a_local_master_starts_no_jvm(tmp_path):
    """`runner apply` in a process of its own, where Spark cannot start: the clean and the resize
    both run in the driver, so no JVM is needed for a local resize, and the readers see the same rows."""
    from tests.execute.conftest import oracle_snapshot
    from tests.execute.test_table_spark_apply import sized_project

    root = sized_project(tmp_path / "p", project='name: p\nspark:\n  master: "local[2]"\n')
    def rows() -> list[str]:
        return sorted(repr({k: v for k, v in r.items() if k != NAME}) for r in oracle_snapshot(root / "table")[1])

    before = rows()
    # Spark cannot start in this process: spark-submit runs `$JAVA_HOME/bin/java`, which is missing.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")} | {"JAVA_HOME": str(tmp_path / "no-jvm")}
    done = subprocess.run([sys.executable, "-m", "runner", "apply", "--auto-approve", "--format", "json",
                           "--project-dir", str(root)], capture_output=True, text=True, env=env, timeout=300)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = json.loads(done.stdout)["tables"][0]
    assert table["files_rewritten"] > 1, table
    assert any(n.startswith("rewrote ") and f"on {_driver_pool()}: local master local[2]" in n
               for n in table["notes"]), table["notes"]
    assert not (root / "target" / "spark.log").exists()  # written from the moment a run starts Spark
    assert rows() == before


@pytest.mark.parametrize(("master", "cores"), [("local", 1), ("local[1]", 1), ("local[2]", 2), ("local[64]", None),
                                               ("local[*]", None), ("local[2,3]", 2)])
def test_a_local_master_s_threads_never_exceed_the_machine_s_cpus(master, cores):
    cpus = os.cpu_count() or 1
    assert resize_engine.local_cores(master) == (cpus if cores is None else min(cores, cpus))


def test_a_run_starts_spark_up_front_for_a_resize_only_on_a_cluster_or_spark_connect(monkeypatch):
    from runner.declarations.model import SparkSettings

    assert not resize_engine.rewrites_on_spark(SparkSettings(master="local[*]"))
    assert resize_engine.rewrites_on_spark(SparkSettings(master="spark://host:7077"))
    assert resize_engine.rewrites_on_spark(SparkSettings(master="local[2]", remote="sc://host:15002"))
    monkeypatch.setattr(resize_engine, "PINNED", "spark")
    assert resize_engine.rewrites_on_spark(SparkSettings(master="local[2]"))


def test_a_session_on_demand_is_not_started_when_the_driver_rewrites(v6_small, monkeypatch):  # noqa: F811
    from runner.declarations.model import SparkSettings

    def never() -> object:
        raise AssertionError("the driver engine must not start Spark")

    storage, state, step = plan(v6_small)
    before = snapshot(v6_small)
    outcome = run_resize(storage, state.metadata, step, clock=clock,
                         spark=resize_engine.SparkOnDemand(SparkSettings(master="local[2]"), never))  # type: ignore[arg-type]
    assert outcome.notes[0].startswith(f"rewrote 3 groups on {_driver_pool()}: local master local[2]")
    assert snapshot(v6_small) == before


class _Unpicklable:
    def __reduce__(self) -> object:
        raise TypeError("a test storage that stays in its process")


def test_the_driver_s_pool_is_threads_and_processes_only_when_pinned_for_several_groups_on_a_storage_that_pickles(
        tmp_path, monkeypatch):
    from runner.storage import storage_for

    storage = storage_for(str(tmp_path))
    assert resize_engine.pool_for(2, storage) == (
        "threads", "threads, as worker processes measured slower in a new process and hold more memory")
    choice = engine_for("local[2]", cores=2, groups=6).with_pool(storage)
    assert choice.describe(6) == ("rewrote 6 groups on 2 threads in the driver: local master local[2]: the driver "
                                  "uses the same cores without Spark's task and Python-worker overhead; threads, as "
                                  "worker processes measured slower in a new process and hold more memory")
    monkeypatch.setattr(resize_engine, "PINNED_POOL", "processes")
    assert resize_engine.pool_for(2, storage)[0] == "processes"
    assert resize_engine.pool_for(1, storage) == ("threads", "one group at a time runs on a thread")
    pool, why = resize_engine.pool_for(2, _Unpicklable())  # type: ignore[arg-type]
    assert pool == "threads" and "cannot be sent to a process (TypeError)" in why
    choice = engine_for("local[2]", cores=2, groups=6).with_pool(storage)
    assert choice.describe(6).startswith("rewrote 6 groups on 2 worker processes of the driver: local master ")
    assert choice.describe(6).endswith("; a process per worker, pinned by runner.execute.resize_engine.PINNED_POOL")
    assert engine_for("yarn", cores=2, groups=6).with_pool(storage).pool == "threads"  # Spark: no driver pool


@TWO_CPUS
def test_a_worker_process_that_dies_fails_the_step_and_rolls_it_back(v6_small, spark, monkeypatch):  # noqa: F811
    """A worker killed mid-file (`os._exit` at the `mid_rewrite` failpoint, as the OOM killer would)
    fails the step with a clear error; the driver lives on, nothing is published, the clustering
    and its leftovers are rolled back, and the next apply plans and rewrites afresh."""
    from runner.failpoints import ENV

    monkeypatch.setattr(resize_engine, "PINNED", "driver")
    monkeypatch.setattr(resize_engine, "PINNED_POOL", "processes")
    before = snapshot(v6_small)
    storage, state, step = plan(v6_small)
    runner = ResizeRunner(storage, state.metadata, spark=spark, clock=clock)
    pending, _ = runner.schedule(step)
    monkeypatch.setenv(ENV, "mid_rewrite")  # armed after any forkserver started: workers still see it

    with pytest.raises(StepFailed, match=r"rewriting 3 group\(s\) failed: WorkerDied: a worker process died while "
                       r"rewriting group\(s\) 0 \(.*file group .*-0\)") as failed:
        runner.execute(pending, groups_of_step(step))

    monkeypatch.delenv(ENV)
    assert "the clustering was rolled back" in failed.value.message
    assert not read_table_metadata(storage).timeline.pending()
    assert not list(v6_small.rglob("*.tmp"))  # the dead worker's temporary file went with it
    assert not list(v6_small.rglob(f"*_{pending.time}.parquet"))
    assert snapshot(v6_small) == before

    storage, state, step = plan(v6_small)
    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    assert outcome.notes[0].startswith("rewrote 3 groups on 2 worker processes of the driver")
    assert not list(v6_small.rglob("*.tmp"))
    assert snapshot(v6_small) == before
    assert not read_table_metadata(storage).timeline.pending()


@pytest.mark.s3
@TWO_CPUS
@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_on_s3_either_pool_rewrites_and_the_storage_with_its_credentials_reaches_the_workers(
        pool, v6_small, monkeypatch, tmp_path, s3_server, s3_bucket):  # noqa: F811
    """The S3 storage pickles (its options carry the endpoint and keys, not a client), so worker
    processes read and write through the same server; the files read back as the threads' do."""
    from runner.declarations.model import SparkSettings
    from runner.hudi.state import read_table_state
    from runner.plan.sizing import plan_sizing
    from runner.storage import storage_for
    from tests.execute.test_resize import SIZING
    from tests.s3 import upload_tree

    def never() -> object:
        raise AssertionError("the driver engine must not start Spark")

    monkeypatch.setattr(resize_engine, "PINNED_POOL", pool)
    before = snapshot(v6_small)
    upload_tree(v6_small, s3_bucket, "t", s3_server)
    storage = storage_for(f"s3://{s3_bucket}/t", options=s3_server.options())
    state = read_table_state(storage)
    step = plan_sizing(SIZING, state)
    assert step is not None

    outcome = run_resize(storage, state.metadata, step, clock=clock,
                         spark=resize_engine.SparkOnDemand(SparkSettings(master="local[2]"), never))  # type: ignore[arg-type]

    where = "2 worker processes of the driver" if pool == "processes" else "2 threads in the driver"
    assert outcome.notes[0].startswith(f"rewrote 3 groups on {where}")
    client, back = s3_server.client(), tmp_path / "back"
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=s3_bucket, Prefix="t/"):
        for item in page.get("Contents", []):
            target = back / item["Key"].removeprefix("t/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(client.get_object(Bucket=s3_bucket, Key=item["Key"])["Body"].read())
    assert snapshot(back) == before  # the `hudi` reader, on the table as the workers left it on S3
    assert all((back / p).exists() for p in outcome.output_files)


_ORPHAN_DRIVER = """
import os, sys, time
from runner.execute.resize_engine import _executor
pool = _executor("processes", 1)
pool.submit(time.sleep, 600)  # a worker busy with a long group
while not pool._processes:
    time.sleep(0.05)
print(next(iter(pool._processes)), flush=True)
time.sleep(600)
"""


def _running(pid: int) -> bool:
    """Whether `pid` still runs (an exited orphan waits unreaped when PID 1 does not reap)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_busy_worker_process_exits_when_the_driver_is_killed():
    driver = subprocess.Popen([sys.executable, "-c", _ORPHAN_DRIVER], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[2])
    try:
        assert driver.stdout is not None
        worker = int(driver.stdout.readline())
        assert _running(worker)
        driver.kill()  # SIGKILL: no clean-up of its own runs
        driver.wait()
        deadline = time.monotonic() + 60
        while _running(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(worker), f"worker {worker} outlived its driver"
    finally:
        driver.kill()
