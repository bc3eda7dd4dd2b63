"""Whatever is in the files, `load_project` returns a Project or raises DeclarationError, nothing else."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.declarations.loader import load_project
from runner.declarations.model import Project
from runner.errors import DeclarationError

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KEYS = ["name", "path", "description", "owner", "tags", "clean", "file_sizing", "table", "metadata_table",
        "policy", "commits_retained", "file_versions_retained", "hours_retained", "incremental",
        "max_file_size", "small_file_limit", "insert_split_size", "type", "record_key", "partition_by",
        "precombine_field", "tables_dir", "allowed_roots", "defaults", "spark", "master", "conf", "<<"]
TOKENS = ["010", "0x1F", "1:30", "yes", "off", "2024-01-01", "500_000", "120MiB", "12 XB", "0", "-1", "~",
          "KEEP_LATEST_COMMITS", "KEEP_LATEST_BY_HOURS", "keep", "disable", "MERGE_ON_READ", "s3://b/x/",
          "file:///tmp/x", "file://h/x", "../x", "warehouse/t", "t", ".inf", ".nan", "1e3", "*a", "&a x", "!!int 3",
          "0" + "7" * 4400, "1_" + "0" * 4400]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20),
                    st.sampled_from(TOKENS))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8),
                                                                inner, max_size=5),
    max_leaves=20,
)
declarations = st.dictionaries(st.sampled_from(KEYS), values, max_size=8)
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=300)


def _outcome(files: dict[str, bytes]) -> Project | DeclarationError:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "tables").mkdir()
        for name, content in files.items():
            (root / name).write_bytes(content)
        try:
            return load_project(root)
        except DeclarationError as error:
            assert error.problems, "a DeclarationError always carries at least one problem"
            return error


def _raw(document: dict[str, Any]) -> str:
    """YAML text that writes trap tokens unquoted, as a person would."""
    lines = []
    for key, value in document.items():
        unquoted = isinstance(value, str) and value in TOKENS
        rendered = value if unquoted else yaml.safe_dump(value, default_flow_style=True)
        lines.append(f"{key}: {rendered.strip()}".replace("\n...", ""))
    return "\n".join(lines) + "\n"


@FUZZ
@given(table=text, project=text)
def test_any_text(table: str, project: str) -> None:
    _outcome({"project.yml": project.encode(), "tables/t.yml": table.encode()})
    _outcome({"project.yml": b"name: p\n", "tables/t.yml": table.encode()})


@FUZZ
@given(st.binary(max_size=200))
def test_any_bytes(content: bytes) -> None:
    _outcome({"project.yml": b"name: p\n", "tables/t.yml": content})


@FUZZ
@given(table=declarations, other=declarations, project=declarations)
def test_any_structure(table: dict[str, Any], other: dict[str, Any], project: dict[str, Any]) -> None:
    files = {"project.yml": yaml.safe_dump(project).encode(), "tables/a.yml": yaml.safe_dump(table).encode(),
             "tables/b.yml": _raw(other).encode()}
    _outcome(files)


@FUZZ
@given(table=declarations)
def test_near_valid_structures(table: dict[str, Any]) -> None:
    document = {"name": "t", "path": "warehouse/t", **table}
    outcome = _outcome({"project.yml": b"name: p\nallowed_roots: [warehouse]\n",
                        "tables/t.yml": _raw(document).encode()})
    if isinstance(outcome, Project):
        (declared,) = outcome.tables
        assert declared.file_sizing.small_file_limit < declared.file_sizing.max_file_size \
            or declared.file_sizing.small_file_limit == 0
