"""Arrow's allocator for the rewrite: jemalloc chosen by the `runner` command before pyarrow loads
(`runner.arrow_allocator`), or as pyarrow's default pool when pyarrow loaded first
(`resize_job.use_rewrite_allocator`); never over a choice the environment made, nor in a process
that only imports `runner`; and the same file whatever the allocator. Each case runs in a new
interpreter: Arrow reads its allocator once per process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
HAS_JEMALLOC = "jemalloc" in pa.supported_memory_backends()


def run(code: str, env: dict[str, str | None] | None = None) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    environment["PYTHONPATH"] = str(ROOT)
    for key, value in (env or {}).items():
        if value is not None:
            environment[key] = value
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                          check=True, cwd=ROOT)
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(sys.platform != "linux" or not HAS_JEMALLOC, reason="pyarrow's Linux builds carry jemalloc")
def test_the_runner_command_gives_arrow_jemalloc() -> None:
    code = ("import contextlib, io, runner.cli\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    runner.cli.main(['--version'])\n"
            "import pyarrow as pa; print(pa.default_memory_pool().backend_name)")
    assert run(code) == "jemalloc"


def test_importing_runner_leaves_the_processs_allocator_alone() -> None:
    """A pipeline that imports `runner` for `runner.write` keeps the allocator its owner chose."""
    code = "import runner, pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    assert run(code) == run("import pyarrow as pa; print(pa.default_memory_pool().backend_name)")


def test_an_allocator_the_environment_chose_is_kept() -> None:
    code = ("import runner, pyarrow as pa; from runner.execute import resize_job; "
            "resize_job.use_rewrite_allocator(); print(pa.default_memory_pool().backend_name)")
    assert run(code, {"ARROW_DEFAULT_MEMORY_POOL": "system"}) == "system"
    assert run(code, {"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}) == "mimalloc"


@pytest.mark.skipif(not HAS_JEMALLOC, reason="this pyarrow has no jemalloc")
def test_the_rewrite_sets_pyarrows_default_pool_where_pyarrow_loaded_first() -> None:
    code = ("import pyarrow as pa; before = pa.default_memory_pool().backend_name; "
            "from runner.execute import resize_job; resize_job.use_rewrite_allocator(); "
            "print(before, pa.default_memory_pool().backend_name)")
    assert run(code) == "mimalloc jemalloc"


def test_the_rewritten_file_is_the_same_bytes_whatever_the_allocator(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    for index in range(3):
        rows = 5000
        keys = [f"key-{index}-{i:05d}" for i in range(rows)]
        pq.write_table(pa.table({
            "_hoodie_commit_time": ["20240101000000000"] * rows, "_hoodie_commit_seqno": keys,
            "_hoodie_record_key": keys, "_hoodie_partition_path": ["p"] * rows,
            "_hoodie_file_name": ["x"] * rows, "category": [f"c{i % 7}" for i in range(rows)],
            "amount": [i * 0.5 for i in range(rows)],
        }), tmp_path / f"p/f{index}-0_0-1-1_2024010100000000{index}.parquet")
    code = (
        "import hashlib, os, sys, pyarrow as pa; from runner.execute.resize_job import GroupRewrite, rewrite_group; "
        "from runner.storage.local import LocalStorage; root = sys.argv[1]; "
        "inputs = tuple(sorted(f'p/{n}' for n in os.listdir(root + '/p') if n.startswith('f'))); "
        "done = rewrite_group(LocalStorage(root), GroupRewrite('p', 'bbbbbbbb-0000-0000-0000-000000000000-0', inputs), "
        "'20240102000000000', '0-0-0'); data = open(root + '/' + done.path, 'rb').read(); "
        "os.unlink(root + '/' + done.path); "
        "print(pa.default_memory_pool().backend_name, hashlib.sha256(data).hexdigest())"
    )
    digests = {}
    for pool in ["mimalloc", "system", *(["jemalloc"] if HAS_JEMALLOC else [])]:
        environment = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
        environment |= {"PYTHONPATH": str(ROOT), "ARROW_DEFAULT_MEMORY_POOL": pool}
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=environment, capture_output=True,
                              text=True, check=True, cwd=ROOT)
        backend, digests[pool] = done.stdout.split()
        assert backend == pool
    assert len(set(digests.values())) == 1, digests
    assert hashlib.sha256(b"").hexdigest() not in digests.values()


def test_the_runner_command_names_no_allocator_where_the_wheels_lack_jemalloc() -> None:
    # Linux ARM wheels have no jemalloc (pyarrow >= 18): naming it there gets Arrow's "Unsupported
    # backend" warning on stderr in the command and in every Spark worker inheriting the variable.
    code = ("import contextlib, io, os, platform, runner.cli\n"
            "platform.machine = lambda: 'aarch64'\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    runner.cli.main(['--version'])\n"
            "print(os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))")
    assert run(code) == "None"


@pytest.mark.skipif(not HAS_JEMALLOC, reason="this pyarrow has no jemalloc")
def test_a_pipeline_on_mimalloc_is_told_once_how_to_choose_jemalloc() -> None:
    """`runner.write` changes no allocator, but its first call in a process on Arrow's default
    mimalloc logs how the process's owner can choose jemalloc; never where the environment chose."""
    code = ("import pyarrow as pa; from runner.arrow_allocator import library_hint; "
            "print(pa.default_memory_pool().backend_name, repr(library_hint()), repr(library_hint()))")
    backend, told = run(code).split(" ", 1)
    first, second = told.rsplit(" ", 1)
    if backend == "mimalloc":
        assert "ARROW_DEFAULT_MEMORY_POOL=jemalloc" in first and second == "None"
    else:
        assert first == second == "None"
    assert run(code, {"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}).endswith("None None")
