"""A table's `spark:` block: validated like every other field, merged with project defaults, and
listed by `runner ls` with where each value came from."""

from __future__ import annotations

import json

import pytest

from runner.cli import main
from runner.declarations.loader import load_project
from runner.declarations.model import Source, TableSpark
from runner.errors import DeclarationError
from tests.declarations.conftest import WriteProject


def problems(write_project: WriteProject, table: str, project: str = "name: p\n") -> list[str]:
    root = write_project({"tables/t.yml": "name: t\npath: w/t\n" + table}, project=project)
    with pytest.raises(DeclarationError) as caught:
        load_project(root)
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize(("value", "found"), [
    ("8 GB", '"8 GB"'), ("8GiB", '"8GiB"'), ("'8'", '"8"'), ("lots", '"lots"'),
])
def test_executor_memory_must_be_a_spark_size(write_project: WriteProject, value: str, found: str) -> None:
    (problem,) = problems(write_project, f"spark:\n  executor_memory: {value}\n")
    assert problem.startswith("tables/t.yml:4:3: spark.executor_memory: expected ")
    assert "a whole number and a unit k, m, g or t" in problem and problem.endswith(f"got {found}")


def test_a_bare_number_of_executor_memory_is_refused_not_guessed(write_project: WriteProject) -> None:
    expected = ("tables/t.yml:4:3: spark.executor_memory: expected a size with a unit, such as 8g or 8192m "
                "(Spark would read a bare 8 as 8 MiB), got 8")
    assert problems(write_project, "spark:\n  executor_memory: 8\n") == [expected]


def test_executor_memory_below_sparks_minimum_is_refused(write_project: WriteProject) -> None:
    assert problems(write_project, "spark:\n  executor_memory: 256m\n") == [
        "tables/t.yml:4:3: spark.executor_memory: must be at least 450m (Spark refuses smaller executors), got 256m"]


def test_a_project_default_below_the_minimum_is_reported_in_project_yml(write_project: WriteProject) -> None:
    project = "name: p\ndefaults:\n  spark:\n    executor_memory: 100m\n"
    assert problems(write_project, "", project=project) == [
        "project.yml:4:5: defaults.spark.executor_memory: must be at least 450m (Spark refuses smaller executors), "
        "got 100m"]


@pytest.mark.parametrize(("value", "message"), [
    ("0", "must be >= 1, got 0"), ("2.5", "expected an integer, got 2.5"), ("many", 'expected an integer, got "many"'),
])
def test_resize_partitions_must_be_a_positive_whole_number(write_project: WriteProject, value: str,
                                                           message: str) -> None:
    (problem,) = problems(write_project, f"spark:\n  resize_partitions: {value}\n")
    assert problem.startswith("tables/t.yml:4:3: spark.resize_partitions: ")
    assert problem.endswith(message)


def test_an_unknown_spark_key_names_the_allowed_ones(write_project: WriteProject) -> None:
    (problem,) = problems(write_project, "spark:\n  shuffle_partitions: 64\n")
    assert problem.startswith("tables/t.yml:4:3: spark.shuffle_partitions: unknown key")
    assert "executor_memory, resize_partitions" in problem


def test_schema_and_semantic_problems_of_one_block_are_reported_together(write_project: WriteProject) -> None:
    assert len(problems(write_project, "spark:\n  executor_memory: 100m\n  resize_partitions: 0\n")) == 2


def test_the_table_wins_over_the_project_default_field_by_field(write_project: WriteProject) -> None:
    project = "name: p\ndefaults:\n  spark:\n    executor_memory: 4g\n    resize_partitions: 8\n"
    root = write_project({"tables/t.yml": "name: t\npath: w/t\nspark:\n  executor_memory: 16G\n",
                          "tables/u.yml": "name: u\npath: w/u\n"}, project=project)
    t, u = load_project(root).tables
    assert t.spark == TableSpark(executor_memory="16G", resize_partitions=8)
    assert u.spark == TableSpark(executor_memory="4g", resize_partitions=8)
    assert dict(t.provenance)["spark.executor_memory"] is Source.TABLE
    assert dict(t.provenance)["spark.resize_partitions"] is Source.PROJECT_DEFAULT


def test_ls_shows_each_spark_setting_with_its_source(write_project: WriteProject,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    project = "name: p\ndefaults:\n  spark:\n    resize_partitions: 8\n"
    root = write_project({"tables/t.yml": "name: t\npath: w/t\nspark:\n  executor_memory: 16g\n",
                          "tables/u.yml": "name: u\npath: w/u\n"}, project=project)
    assert main(["ls", "--project-dir", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split() == ["spark.executor_memory", "16g", "table"] for line in lines)
    assert sum(line.split() == ["spark.resize_partitions", "8", "project", "default"] for line in lines) == 2
    assert main(["ls", "--project-dir", str(root), "--format", "json", "-s", "u"]) == 0
    (u,) = json.loads(capsys.readouterr().out)["tables"]
    assert u["settings"]["spark.executor_memory"] == {"value": None, "source": "runner default"}


def test_spark_settings_do_not_invalidate_a_saved_plan() -> None:
    from runner.declarations.fingerprint import declaration_fingerprint
    from runner.declarations.model import TableDeclaration

    plain = TableDeclaration("t", "/w/t", "tables/t.yml")
    sized = TableDeclaration("t", "/w/t", "tables/t.yml", spark=TableSpark("8g", 64))
    assert declaration_fingerprint(plain) == declaration_fingerprint(sized)
