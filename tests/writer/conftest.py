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
