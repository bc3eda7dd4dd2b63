"""Writer test helpers: a project folder with declared tables, and the hudi-rs reader as oracle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Callable[..., Path]:
    """Factory: `project(orders=yaml_text, ...)` writes project.yml and tables/<name>.yml."""

    def make(**tables: str) -> Path:
        root = tmp_path / "proj"
        (root / "tables").mkdir(parents=True, exist_ok=True)
        (root / "project.yml").write_text("name: writer_tests\n")
        for name, text in tables.items():
            (root / "tables" / f"{name}.yml").write_text(text)
        return root

    return make


@pytest.fixture(params=["driver", "spark"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per write engine (the driver engine is the default for the tests' small
    inputs, so only the Spark engine needs pinning)."""
    from runner.writer import local

    if request.param == "spark":
        monkeypatch.setattr(local, "PINNED", "spark")
    return str(request.param)
