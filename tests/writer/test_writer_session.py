"""runner.write with a SparkSession the user created, from an interpreter whose virtualenv is not
activated: Spark would start its Python workers with whatever `python3` PATH finds."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.writer.writer_helpers import oracle_rows, table_yaml

# Some tests here start their own session, in a child process, instead of using the fixture.
pytestmark = pytest.mark.spark

USER_SCRIPT = """
import sys
from pyspark.sql import SparkSession

spark = (SparkSession.builder.master("local[1]").appName("user-job")
         .config("spark.ui.enabled", "false").getOrCreate())
import runner

df = spark.createDataFrame([(1, "eu", "a", 1), (2, "us", "b", 1)], "id long, region string, name string, ts long")
result = runner.write(df, "orders", operation="bulk_insert", project_dir=sys.argv[1])
print("INSTANT", result.instant)
print("WORKERS", spark.sparkContext.pythonExec)
"""


def without_the_virtualenv(env: dict[str, str]) -> dict[str, str]:
    """The environment of a shell where the virtualenv was never activated.

    Run the scripts from outside the repository (`cwd`): Python workers put their working folder on
    `sys.path`, so from the repository root they would import the runner's sources anyway.
    """
    venv_bin = os.path.dirname(sys.executable)
    cleaned = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    cleaned["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    return cleaned


def test_a_users_own_session_without_an_activated_virtualenv_writes(
    project: Callable[..., Path], tmp_path: Path
) -> None:
    root = project(orders=table_yaml("orders"))
    script = tmp_path / "user_job.py"
    script.write_text(USER_SCRIPT)

    done = subprocess.run([sys.executable, str(script), str(root)], env=without_the_virtualenv(dict(os.environ)),
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)

    assert done.returncode == 0, done.stderr[-3000:]
    assert "No module named 'runner'" not in done.stderr
    assert "WORKERS python3" in done.stdout  # the user's session setting is left as it was
    rows = oracle_rows(root / "warehouse" / "orders", columns=("id", "name"))
    assert rows == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


RUNNER_SESSION_SCRIPT = """
import sys
from runner.declarations.model import SparkSettings
from runner.execute.spark import delete_files, get_spark
from runner.storage import storage_for

spark = get_spark(SparkSettings(master="local[1]"))
print("RESULT", delete_files(spark, storage_for(sys.argv[1]), ["doomed.parquet"]))
"""


def test_the_runners_own_local_session_runs_tasks_whatever_pyspark_python_says(tmp_path: Path) -> None:
    # A shell configured for some other Spark setup: PYSPARK_PYTHON names the system interpreter.
    (tmp_path / "doomed.parquet").write_bytes(b"PAR1")
    script = tmp_path / "apply_like.py"
    script.write_text(RUNNER_SESSION_SCRIPT)
    env = without_the_virtualenv(dict(os.environ)) | {"PYSPARK_PYTHON": "python3"}

    done = subprocess.run([sys.executable, str(script), str(tmp_path)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)

    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESULT [DeleteResult(path='doomed.parquet', deleted=True, error=None)]" in done.stdout
    assert not (tmp_path / "doomed.parquet").exists()
