"""Fixtures for declaration tests: projects are written as `{relative path: text}` dicts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

WriteProject = Callable[..., Path]


def write_files(root: Path, files: Mapping[str, str]) -> Path:
    """Write each `relative path: text` under `root` (creating folders) and return `root`."""
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def write_project(tmp_path: Path) -> WriteProject:
    """Write a project into tmp_path; project.yml defaults to `name: test` and tables/ always exists."""

    def write(files: Mapping[str, str], project: str | None = "name: test\n") -> Path:
        (tmp_path / "tables").mkdir(exist_ok=True)
        all_files = dict(files) if project is None else {"project.yml": project, **files}
        return write_files(tmp_path, all_files)

    return write
