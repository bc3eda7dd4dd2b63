"""The example project committed at the repository root is valid and editor-ready."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.declarations.model import CleanPolicyName

REPO = Path(__file__).resolve().parents[2]
DECLARATIONS = [*sorted((REPO / "tables").rglob("*.y*ml")), REPO / "project.yml"]


def test_the_example_project_validates() -> None:
    project = load_project(REPO)
    assert project.name == "demo"
    assert [t.name for t in project.tables] == ["customers", "events", "orders"]
    policies = {t.name: t.clean.policy for t in project.tables}
    assert policies == {"customers": CleanPolicyName.KEEP_LATEST_FILE_VERSIONS,
                        "events": CleanPolicyName.KEEP_LATEST_BY_HOURS,
                        "orders": CleanPolicyName.KEEP_LATEST_COMMITS}
    assert all(t.path.startswith(str(REPO / "warehouse") + "/") for t in project.tables)


@pytest.mark.parametrize("path", DECLARATIONS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_example_names_its_schema_for_editors(path: Path) -> None:
    first_line = path.read_text(encoding="utf-8").splitlines()[0]
    prefix = "# yaml-language-server: $schema="
    assert first_line.startswith(prefix)
    schema = (path.parent / first_line.removeprefix(prefix)).resolve()
    expected = "project.schema.json" if path.name == "project.yml" else "table.schema.json"
    assert schema == REPO / "schemas" / expected
