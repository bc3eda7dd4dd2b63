"""apply (clean and resize) and runner.write on a real standalone cluster and over Spark Connect.

Everything runs as users run it: `runner apply` and a writing script in subprocesses, with only
project.yml's `spark:` block choosing `spark://...` or `sc://...`, on a table in the local S3
server. The checks: the independent `hudi` reader sees the same rows before and after apply, and
the job results name the executors that ran the tasks, which are the workers' (not `driver`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.s3 import S3Server
from tests.spark_cluster import APP_CONF, Cluster, jvm_env

pytestmark = [pytest.mark.cluster, pytest.mark.s3]
HERE = Path(__file__).resolve().parent
TIMEOUT = 900
TABLE = """\
name: orders
path: s3://{bucket}/warehouse/orders
table:
  type: COPY_ON_WRITE
  record_key: [id]
  partition_by: [region]
  precombine_field: ts
clean:
  policy: KEEP_LATEST_FILE_VERSIONS
  file_versions_retained: 1
file_sizing:
  small_file_limit: 1MB
  max_file_size: 8MB
"""


def make_project(root: Path, bucket: str, spark_block: str) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text(f"name: scale\n{spark_block}")
    (root / "tables" / "orders.yml").write_text(TABLE.format(bucket=bucket))
    return root


def environment(s3: S3Server) -> dict[str, str]:
    options = s3.options()
    return jvm_env(AWS_ENDPOINT_URL_S3=options["endpoint_override"], AWS_ACCESS_KEY_ID=options["access_key"],
                   AWS_SECRET_ACCESS_KEY=options["secret_key"], AWS_REGION=options["region"])


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False)


def oracle_rows(s3: S3Server, bucket: str) -> list[dict[str, Any]]:
    """The rows the `hudi` reader (hudi-rs) reads from the table on S3, meta columns left out."""
    from hudi import HudiTable

    options = s3.options()
    table = HudiTable(f"s3://{bucket}/warehouse/orders", {
        "aws_endpoint_url": options["endpoint_override"], "aws_access_key_id": options["access_key"],
        "aws_secret_access_key": options["secret_key"], "aws_region": options["region"], "aws_allow_http": "true",
    })
    rows = pa.Table.from_batches(table.read()).select(["id", "region", "name", "ts"]).to_pylist()
    return sorted(rows, key=lambda r: r["id"])


def expected_rows() -> list[dict[str, Any]]:
    return [{"id": i, "region": ("eu", "us")[i % 2], "name": f"name-{i}-v{2 if i < 4 else 1}", "ts": 2 if i < 4 else 1}
            for i in range(90)]


def on_workers(executors: list[str]) -> bool:
    """Executor ids of a standalone cluster are numbers; `driver` means the task ran in-process."""
    return bool(executors) and all(e.isdigit() for e in executors)


def write_then_apply(root: Path, s3: S3Server, bucket: str) -> None:
    env = environment(s3)
    written = run([sys.executable, str(HERE / "write_orders.py"), str(root)], env, root)
    assert written.returncode == 0, written.stderr[-4000:]
    results = [json.loads(line) for line in written.stdout.splitlines() if line.startswith("{")]
    assert [r["operation"] for r in results] == ["BULK_INSERT"] * 3 + ["UPSERT"]
    assert results[-1]["num_updates"] == 4
    for result in results:
        assert on_workers(result["executors"]), result
        assert result["engine"] == "spark", result  # a cluster's executors write, never the driver
    before = oracle_rows(s3, bucket)
    assert before == expected_rows()

    applied = run([sys.executable, "-m", "runner", "apply", "--auto-approve", "--format", "json",
                   "--project-dir", str(root)], env, root)
    assert applied.returncode == 0, applied.stdout[-4000:] + applied.stderr[-4000:]
    table = json.loads(applied.stdout)["tables"][0]
    assert table["status"] == "success", table
    assert table["files_deleted"] >= 1 and table["files_rewritten"] >= 2, table
    assert on_workers(table["executors"]), table
    assert oracle_rows(s3, bucket) == before

    again = run([sys.executable, "-m", "runner", "plan", "--format", "json", "--project-dir", str(root)], env, root)
    assert again.returncode in (0, 2), again.stderr[-4000:]


def spark_conf_block() -> str:
    return "".join(f"    {key}: \"{value}\"\n" for key, value in APP_CONF.items())


def test_write_and_apply_on_a_standalone_cluster(tmp_path: Path, spark_cluster: Cluster, s3_server: S3Server,
                                                  s3_bucket: str) -> None:
    block = f"spark:\n  master: {spark_cluster.master_url}\n  conf:\n{spark_conf_block()}"
    write_then_apply(make_project(tmp_path / "p", s3_bucket, block), s3_server, s3_bucket)


@pytest.mark.connect
def test_write_and_apply_over_spark_connect(tmp_path: Path, spark_connect: str, s3_server: S3Server,
                                            s3_bucket: str) -> None:
    block = f"spark:\n  remote: {spark_connect}\n"
    write_then_apply(make_project(tmp_path / "p", s3_bucket, block), s3_server, s3_bucket)
