"""A demo project (the repository's own declarations and `runner.demo` warehouse) for report tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.demo import build_demo_warehouse

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def demo_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once per run; report tests only read it (and each checks it stays unchanged)."""
    root = tmp_path_factory.mktemp("docs-demo")
    shutil.copy(REPO / "project.yml", root / "project.yml")
    shutil.copytree(REPO / "tables", root / "tables")
    build_demo_warehouse(root)
    return root
