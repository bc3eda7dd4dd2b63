"""Pytest plugin: a real Spark standalone cluster and a Spark Connect server on 127.0.0.1.

Both come from the installed pyspark package (its `bin/spark-class`, `bin/spark-submit` and
`jars/`), bind only to 127.0.0.1 on ports the OS picks, start once per session on first use and
stop at the end. They are separate Spark applications from the in-process shared session of
`conftest.spark`, so tests drive them through subprocesses (the CLI, or a script calling
`runner.write`), exactly as users do.

Sizes fit a 2-core machine: two workers with 2 task slots and 2 GiB each, so the application of
the Connect server and one CLI application (each 1-core, 1 GiB executors, at most 2 cores) can run
side by side. If the JVM cannot bind to 127.0.0.1, the tests that need them skip saying so.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

STARTUP_SECONDS = 120
# Executor sizes for every application started against the test cluster (see the module docstring),
# and shuffle partitions to match its 2 task slots: with Spark's default of 200, each of
# runner.write's shuffles ran 200 tasks for a few dozen rows (measured: about 1,000 tasks for the
# cluster test's four writes, most of its time), which tests nothing more than 2 tasks do.
APP_CONF = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "1g",
    "spark.cores.max": "2",
    "spark.sql.shuffle.partitions": "2",
}


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def jvm_env(**extra: str) -> dict[str, str]:
    """The environment of every test JVM: pyspark's Spark home, loopback only, our interpreter."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_HOSTNAME="localhost",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_NO_DAEMONIZE="1",
    )
    env.update(extra)
    return env


def can_bind_loopback() -> str | None:
    """None if a socket binds to 127.0.0.1, else why not (the reason the tests skip with)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
    except OSError as error:
        return f"cannot bind to 127.0.0.1: {error}"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no JVM: neither `java` on PATH nor JAVA_HOME"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Daemon:
    """One JVM started in its own process group, its output in a log file."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str]) -> None:
        self.name, self.log = name, log
        with log.open("wb") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)

    def wait_for(self, pattern: str) -> re.Match[str]:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            found = re.search(pattern, text)
            if found:
                return found
            if "BindException" in text or "Cannot assign requested address" in text:
                self.stop()
                pytest.skip(f"the JVM cannot bind to 127.0.0.1 ({self.name}); see {self.log}")
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}; log:\n{text[-3000:]}")
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"{self.name} did not start within {STARTUP_SECONDS}s; log: {self.log}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@dataclass(frozen=True, slots=True)
class Cluster:
    master_url: str
    work_dir: Path


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A standalone master and two workers on 127.0.0.1, stopped at the end of the session."""
    reason = can_bind_loopback()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("spark-cluster")
    spark_class = str(spark_home() / "bin" / "spark-class")
    daemons: list[_Daemon] = []
    try:
        master = _Daemon("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                    "--port", "0", "--webui-port", "0"],
                         root / "master.log", jvm_env())
        daemons.append(master)
        url = master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)").group(1)
        for index in (1, 2):
            work = root / f"worker{index}"
            work.mkdir()
            worker = _Daemon(f"worker {index}", [
                spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", "0",
                "--webui-port", "0", "--cores", "2", "--memory", "2g", "--work-dir", str(work), url,
            ], root / f"worker{index}.log", jvm_env())
            daemons.append(worker)
        for worker in daemons[1:]:
            worker.wait_for(r"Successfully registered with master")
        yield Cluster(url, root)
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


@pytest.fixture(scope="session")
def spark_connect(spark_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server on 127.0.0.1 whose application runs on `spark_cluster`; its sc:// URL."""
    pytest.importorskip("grpc", reason="Spark Connect needs the `connect` extra (pip install -e '.[connect]')")
    root = tmp_path_factory.mktemp("spark-connect")
    port = free_port()
    conf = {**APP_CONF, "spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(port),
            "spark.ui.enabled": "false", "spark.pyspark.python": sys.executable}
    argv = [
        str(spark_home() / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        spark_cluster.master_url,
        "--name",
        "runner-tests-connect",
    ]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    server = _Daemon("Spark Connect server", [*argv, "spark-internal"], root / "connect.log", jvm_env())
    try:
        server.wait_for(r"Spark Connect server started|SparkConnectServer.*started|port " + str(port))
        _wait_port(port)
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.stop()


def _wait_port(port: int) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")
