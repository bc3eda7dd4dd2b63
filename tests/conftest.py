"""Shared test fixtures: the real Hudi fixture tables, one Spark session per run, isolation."""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["tests.s3", "tests.spark_cluster"]

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "hudi-rs"
# Fixtures that start the shared SparkSession: a test using one, directly or through another
# fixture, is marked `spark` without saying so. Tests that start Spark in a child process carry
# the mark themselves.
SPARK_FIXTURES = frozenset({"spark"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)


def fixture_zips() -> list[Path]:
    return sorted(FIXTURES.rglob("*.zip"))


def fixture_id(zip_path: Path) -> str:
    return str(zip_path.relative_to(FIXTURES).with_suffix(""))


def extract_fixture(zip_path: Path, dest: Path) -> Path:
    """Unzip one fixture (skipping macOS debris) and return the table's base path."""
    with zipfile.ZipFile(zip_path) as archive:
        for member in archive.namelist():
            if member.startswith("__MACOSX/") or member.endswith(".DS_Store"):
                continue
            archive.extract(member, dest)
    return dest / zip_path.stem


@pytest.fixture
def hudi_fixture(tmp_path: Path):
    """Factory: `hudi_fixture("sample_table/cow/v6_nonpartitioned")` → a private copy's base path."""

    def make(name: str) -> Path:
        return extract_fixture(FIXTURES / f"{name}.zip", tmp_path / "fx" / name.replace("/", "_"))

    return make


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("RUNNER_"):
            monkeypatch.delenv(key)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession for the whole run; pyspark is imported only by tests that need it."""
    from runner.declarations.model import SparkSettings
    from runner.execute.spark import get_spark

    session = get_spark(SparkSettings(master="local[2]", conf=(("spark.sql.shuffle.partitions", "2"),)))
    yield session
    session.stop()


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest
