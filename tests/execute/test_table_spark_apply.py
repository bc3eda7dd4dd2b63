"""A table's Spark settings take effect in a real apply: `resize_partitions` bounds the tasks of
its rewrite job (counted from the write tokens Spark tasks put in the new files' names), and
`executor_memory` sizes the session a run starts, read back from that session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.cli import main
from runner.execute import resize_engine
from tests.conftest import FIXTURES, extract_fixture
from tests.execute.conftest import oracle_snapshot

TABLE = ("name: t\npath: table\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n"
         "file_sizing:\n  max_file_size: 10MiB\n  small_file_limit: 5MiB\n")


def sized_project(root: Path, spark: str = "", project: str = "name: p\n") -> Path:
    root.mkdir(parents=True)
    (root / "project.yml").write_text(project)
    (root / "tables").mkdir()
    (root / "tables" / "t.yml").write_text(TABLE + spark)
    extract_fixture(FIXTURES / "sample_table/cow/v9_txns_simple_nometa.zip", root / "unzip").rename(root / "table")
    return root


def apply_json(capsys: pytest.CaptureFixture[str], root: Path) -> dict:
    capsys.readouterr()
    assert main(["apply", "--auto-approve", "--project-dir", str(root), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def rewrite_tasks(root: Path, result: dict) -> tuple[int, int]:
    """(new base files, distinct Spark partition ids in their write tokens) of the resize."""
    (commit,) = [n for n in result["instants_written"] if n.endswith(".replacecommit")]
    instant = commit.split(".")[0].split("_")[0]
    names = [p.name for p in (root / "table").rglob(f"*_{instant}.parquet")]
    return len(names), len({name.split("_")[1].split("-")[0] for name in names})


@pytest.mark.spark
def test_resize_partitions_bounds_the_tasks_of_the_rewrite_job(tmp_path, capsys, spark, monkeypatch):
    monkeypatch.setattr(resize_engine, "PINNED", "spark")  # a local master would rewrite on the driver
    default = sized_project(tmp_path / "default")
    files, tasks = rewrite_tasks(default, apply_json(capsys, default)["tables"][0])
    assert files > 1 and tasks == files  # by default one task per rewrite group

    bounded = sized_project(tmp_path / "bounded", "spark:\n  resize_partitions: 1\n")
    rows_before = sorted(map(repr, oracle_snapshot(bounded / "table")[1]))
    result = apply_json(capsys, bounded)["tables"][0]
    assert rewrite_tasks(bounded, result) == (files, 1)
    assert f"rewrote {files} groups in Spark jobs of at most 1 task (spark.resize_partitions: 1)" in result["notes"]
    rows_after = oracle_snapshot(bounded / "table")[1]
    assert len(rows_after) == len(rows_before)  # same rows, now in fewer files


@pytest.mark.spark
def test_executor_memory_sizes_the_session_the_run_starts(tmp_path):
    """In a process of its own, so the run starts its own session (tests share one otherwise)."""
    root = sized_project(tmp_path / "p", "spark:\n  executor_memory: 1g\n",
                         project='name: p\nspark:\n  master: "local[1]"\n')
    (root / "tables" / "u.yml").write_text("name: u\npath: other\nspark:\n  executor_memory: 512m\n")
    extract_fixture(FIXTURES / "sample_table/cow/v9_txns_simple_nometa.zip", root / "unzip2").rename(root / "other")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNER_")}
    # A local master rewrites on the driver and starts no session: pin Spark so that one starts.
    pinned = ("import sys; from runner.execute import resize_engine; resize_engine.PINNED = 'spark'; "
              "from runner.cli import main; sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", pinned, "apply", "--auto-approve", "--project-dir", str(root)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    expected = "spark.executor.memory=1g, set by table t, the largest among the selected tables"
    assert f"note: {expected}\n" in done.stdout
    report = json.loads((root / "target" / "run_results.json").read_text())
    assert report["notes"] == [expected]  # read back from the running session's conf
