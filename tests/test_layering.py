"""The import rules that keep planning pure, `validate` free of Spark and test support out of the
product, checked on the source.

Rules count indirect imports: a module reaches everything its imports reach, through imports at
module level and inside functions (a lazy import runs as soon as the function is called). Two kinds
of import are not followed, because they never run on the path in question:

- imports under `if TYPE_CHECKING:`, which exist for annotations only;
- the function bodies of a parent package's `__init__`: importing `runner.plan.clean` runs
  `runner/__init__.py` at module level only, and its lazy `runner.write` accessor imports the writer
  only when somebody asks for `runner.write`.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "runner"


@dataclass(frozen=True)
class Rule:
    """Modules named `source` (or below it), except those in `exempt`, never reach `forbidden`."""

    source: str
    forbidden: str
    why: str
    exempt: tuple[str, ...] = ()

    def applies_to(self, module: str) -> bool:
        return within(module, self.source) and not any(within(module, e) for e in self.exempt)


RULES = (
    Rule("runner.plan", "runner.storage", "planners take values, never storage"),
    Rule("runner.plan", "runner.execute", "planning never reaches into the executor"),
    Rule("runner.plan", "runner.commands", "planning knows nothing of the CLI"),
    Rule("runner.plan", "pyspark", "planning is pure: no Spark"),
    Rule("runner.declarations", "runner.hudi", "declarations are YAML and types, not the Hudi model"),
    Rule("runner.declarations", "pyspark", "`runner validate` never loads Spark"),
    Rule("runner.writer", "runner.execute", "the writer is a library beside apply, not on top of it"),
    Rule("runner.writer", "runner.commands", "the writer knows nothing of the CLI"),
    Rule("runner.storage", "runner.hudi", "storage knows files, not Hudi's formats"),
    *(Rule(lower, upper, "the service layer sits below the commands; the executor below the service")
      for lower in ("runner.service", "runner.execute", "runner.planner")
      for upper in ("runner.commands", "runner.cli")),
    Rule("runner.execute", "runner.service", "the executor runs steps; the service runs the executor"),
    Rule("runner.planner", "runner.service", "plan_one is below the service layer"),
    Rule("runner", "runner.testing", "only demo, bench and tests use the test builders",
         exempt=("runner.demo", "runner.testing")),
    *(Rule(lower, upper, "lower layers never reach up")
      for lower in ("runner.hudi", "runner.declarations", "runner.sizing", "runner.storage")
      for upper in ("runner.plan", "runner.execute", "runner.commands", "runner.cli")),
)


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_names(tree: ast.Module, package: str, *, module_level_only: bool) -> set[str]:
    """Every dotted name imported, with `from a import b` giving both `a` and `a.b`."""
    found: set[str] = set()

    def visit(nodes: Iterable[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node):
                visit(node.orelse)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
            elif module_level_only and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            else:
                visit(ast.iter_child_nodes(node))

    visit(tree.body)
    return found


class ImportGraph:
    """Which modules each module of one package imports (internal ones resolved, others by top name)."""

    def __init__(self, root: Path) -> None:
        self.paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
        self.full: dict[str, set[str]] = {}
        self.load: dict[str, set[str]] = {}
        for name, path in self.paths.items():
            tree = ast.parse(path.read_text(), filename=str(path))
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            self.full[name] = self._resolve(_imported_names(tree, package, module_level_only=False))
            self.load[name] = self._resolve(_imported_names(tree, package, module_level_only=True))

    def _resolve(self, names: set[str]) -> set[str]:
        resolved: set[str] = set()
        for name in names:
            parts = name.split(".")
            prefixes = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            internal = [p for p in prefixes if p in self.paths]
            # The module itself; its parent packages are only loaded (see `path_to`).
            resolved.add(internal[-1] if internal else parts[0])
        return resolved

    def path_to(self, start: str, target: str) -> list[str] | None:
        """The shortest import chain from `start` to a module within `target`, or None."""
        # A node is (module, loaded_only): a parent package is only loaded, never called into.
        first = (start, False)
        previous: dict[tuple[str, bool], tuple[str, bool] | None] = {first: None}
        queue = deque([first])
        while queue:
            node = queue.popleft()
            module, loaded_only = node
            if module != start and within(module, target):
                chain = []
                step: tuple[str, bool] | None = node
                while step is not None:
                    chain.append(step[0])
                    step = previous[step]
                return chain[::-1]
            if module not in self.paths:
                continue  # a third-party package: a leaf
            edges = [(m, False) for m in (self.load if loaded_only else self.full)[module]]
            parents = module.split(".")[:-1]
            edges += [(".".join(parents[:i]), True) for i in range(1, len(parents) + 1)]
            for edge in edges:
                if edge not in previous:
                    previous[edge] = node
                    queue.append(edge)
        return None

    def violations(self, rule: Rule) -> list[str]:
        found = []
        for module in self.paths:
            if rule.applies_to(module):
                chain = self.path_to(module, rule.forbidden)
                if chain:
                    found.append(" -> ".join(chain))
        return found


@pytest.fixture(scope="module")
def graph() -> ImportGraph:
    return ImportGraph(PACKAGE)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.source}-never-{r.forbidden}")
def test_the_runner_keeps_its_layers(graph: ImportGraph, rule: Rule) -> None:
    bad = graph.violations(rule)
    assert not bad, f"{rule.why}; found:\n" + "\n".join(bad)


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _module_files(module: str, text: str) -> dict[str, str]:
    """`runner.a.b` as `a/__init__.py` and `a/b.py` below the package root."""
    parts = module.split(".")[1:]
    files = {"/".join([*parts[:depth], "__init__.py"]): "" for depth in range(len(parts))}
    files["/".join(parts) + ".py"] = text
    return files


def _synthetic_package(tmp_path: Path, rule: Rule) -> Path:
    """A tiny `runner` tree where a module under `rule.source` reaches `rule.forbidden` only
    indirectly: through a middle module, and inside a function there."""
    root = tmp_path / "runner"
    files = {"middle.py": f"def later():\n    import {rule.forbidden}\n"}
    if within(rule.forbidden, "runner"):
        files.update(_module_files(rule.forbidden, ""))
    files.update(_module_files(f"{rule.source}.leaf", "from runner import middle\n"))
    _write(root, files)
    return root


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.source}-never-{r.forbidden}")
def test_each_rule_catches_an_indirect_import(tmp_path: Path, rule: Rule) -> None:
    graph = ImportGraph(_synthetic_package(tmp_path, rule))
    assert graph.violations(rule), f"an indirect import of {rule.forbidden} went unnoticed"


def test_annotation_only_imports_and_lazy_package_accessors_are_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "runner"
    _write(root, {
        "__init__.py": "def __getattr__(name):\n    from runner import storage\n    return storage\n",
        "storage.py": "",
        "plan/__init__.py": "",
        "plan/clean.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from runner.storage import Storage\n"
        ),
    })
    graph = ImportGraph(root)
    assert graph.path_to("runner.plan.clean", "runner.storage") is None
    _write(root, {"plan/__init__.py": "import runner.storage\n"})
    assert ImportGraph(root).path_to("runner.plan.clean", "runner.storage") == [
        "runner.plan.clean", "runner.plan", "runner.storage",
    ]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_imports_pyspark_at_module_level(path: Path) -> None:
    tree = ast.parse(path.read_text())
    top = _imported_names(ast.Module(body=[n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))],
                                     type_ignores=[]), "", module_level_only=True)
    bad = sorted(m for m in top if m.startswith(("pyspark", "py4j")))
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad} at module level; import it inside the job"
