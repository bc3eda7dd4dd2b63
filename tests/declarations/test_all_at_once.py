"""Validation reports each problem once, and accepts the shorthand people naturally write."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.errors import DeclarationError

from .conftest import WriteProject


def test_a_bare_record_key_is_a_one_element_list(write_project: WriteProject) -> None:
    root = write_project({"tables/t.yml": "name: t\npath: w/t\ntable:\n  record_key: id\n  partition_by: region\n"})
    spec = load_project(root).tables[0].table
    assert spec is not None and (spec.record_key, spec.partition_by) == (("id",), ("region",))


def test_a_missing_project_file_is_one_problem_even_without_a_tables_folder(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError) as caught:
        load_project(tmp_path)
    assert [str(p) for p in caught.value.problems] == [
        f"project.yml: not found in {tmp_path}; every project needs a project.yml with at least `name:`. "
        "To fix this, create it, or pass the right folder with --project-dir"]
