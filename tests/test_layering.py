"""The import rules that keep planning pure and `validate` free of Spark, checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "runner"


def imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


@pytest.mark.parametrize("path", modules("plan"), ids=lambda p: p.name)
def test_planning_is_pure(path):
    forbidden = ("runner.storage", "runner.execute", "runner.commands", "pyspark")
    bad = sorted(m for m in imports(path) if m.startswith(forbidden))
    assert not bad, f"{path.name} imports {bad}: planners take values, not storage or Spark"


@pytest.mark.parametrize("path", modules("hudi") + modules("declarations") + modules("sizing"),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_lower_layers_do_not_reach_up(path):
    forbidden = ("runner.plan", "runner.execute", "runner.commands", "runner.cli")
    bad = sorted(m for m in imports(path) if m.startswith(forbidden))
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_spark_module_imports_pyspark_at_module_level(path):
    if path == PACKAGE / "execute" / "spark.py":
        return
    bad = sorted(m for m in imports(path, top_level_only=True) if m.startswith(("pyspark", "py4j")))
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad} at module level; import it inside the job"


@pytest.mark.parametrize("path", modules("service") + modules("execute") + [PACKAGE / "planner.py"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_service_layer_sits_below_the_commands(path):
    """Commands parse, render and pick exit codes; the service and below never reach back up."""
    forbidden = ("runner.commands", "runner.cli") + (("runner.service",) if path.parent.name != "service" else ())
    bad = sorted(m for m in imports(path) if m.startswith(forbidden))
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_plan_command_plans_through_the_service_only():
    bad = sorted(m for m in imports(PACKAGE / "commands" / "plan.py") if m.startswith(("runner.execute", "runner.hudi")))
    assert not bad, f"commands/plan.py imports {bad}: planning goes through runner.service"
