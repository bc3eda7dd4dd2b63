"""Valid projects: merging, provenance, path resolution and discovery of declaration files."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.declarations.model import (
    CleanPolicy,
    CleanPolicyName,
    FileSizing,
    MetadataTableMode,
    Source,
    SparkSettings,
    TableSpark,
    TableSpec,
)
from runner.errors import DeclarationError
from runner.vocabulary import TableType

from .conftest import WriteProject

PROJECT = """\
name: demo
allowed_roots: [warehouse, "s3://lake/prod/"]
defaults:
  clean:
    policy: KEEP_LATEST_COMMITS
    commits_retained: 5
    hours_retained: 48       # another policy's field: harmless in defaults
  file_sizing:
    small_file_limit: 64MiB
spark:
  master: local[2]
  conf:
    spark.sql.shuffle.partitions: 2
    spark.ui.enabled: false
    spark.app.name: demo
"""


def test_a_table_with_nothing_but_name_and_path_gets_every_default(write_project: WriteProject) -> None:
    root = write_project({"tables/t.yml": "name: t\npath: warehouse/t\n"}, project="name: p\n")
    (table,) = load_project(root).tables
    assert table.clean == CleanPolicy()
    assert table.file_sizing == FileSizing()
    assert table.table is None and table.metadata_table is MetadataTableMode.KEEP
    assert table.tags == () and table.owner is None and table.description is None
    assert table.spark == TableSpark()  # the session's own settings
    runners = ("spark.", "file_sizing.strategy")  # the runner's own settings; Hudi has no counterpart
    assert {source for name, source in table.provenance if not name.startswith(runners)} == {Source.HUDI_DEFAULT}
    assert {source for name, source in table.provenance if name.startswith(runners)} == {Source.RUNNER_DEFAULT}


def test_project_defaults_merge_field_by_field_and_the_table_wins(write_project: WriteProject) -> None:
    root = write_project({"tables/t.yml": "name: t\npath: warehouse/t\nclean:\n  commits_retained: 2\n"},
                         project=PROJECT)
    (table,) = load_project(root).tables
    assert table.clean == CleanPolicy(CleanPolicyName.KEEP_LATEST_COMMITS, commits_retained=2, hours_retained=48)
    assert table.file_sizing.small_file_limit == 64 * 1024**2
    assert dict(table.provenance) == {
        "clean.policy": Source.PROJECT_DEFAULT,
        "clean.commits_retained": Source.TABLE,
        "clean.file_versions_retained": Source.HUDI_DEFAULT,
        "clean.hours_retained": Source.PROJECT_DEFAULT,
        "clean.incremental": Source.HUDI_DEFAULT,
        "file_sizing.max_file_size": Source.HUDI_DEFAULT,
        "file_sizing.small_file_limit": Source.PROJECT_DEFAULT,
        "file_sizing.insert_split_size": Source.HUDI_DEFAULT,
        "file_sizing.strategy": Source.RUNNER_DEFAULT,
        "spark.executor_memory": Source.RUNNER_DEFAULT,
        "spark.resize_partitions": Source.RUNNER_DEFAULT,
    }


def test_a_table_choosing_another_policy_uses_the_project_default_for_its_field(write_project: WriteProject) -> None:
    root = write_project({"tables/t.yml": "name: t\npath: warehouse/t\nclean:\n  policy: KEEP_LATEST_BY_HOURS\n"},
                         project=PROJECT)
    (table,) = load_project(root).tables
    assert table.clean.policy is CleanPolicyName.KEEP_LATEST_BY_HOURS
    assert table.clean.hours_retained == 48


def test_every_field_of_a_full_declaration_reaches_the_model(write_project: WriteProject) -> None:
    text = """\
name: orders
path: s3://lake/prod/orders/
description: Orders.
owner: sales
tags: [gold, pii]
clean: {policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: 2, incremental: false}
file_sizing: {max_file_size: 1 MB, small_file_limit: 0, insert_split_size: 1000}
table: {type: MERGE_ON_READ, record_key: [id, region], partition_by: [region], precombine_field: ts}
metadata_table: disable
"""
    root = write_project({"tables/orders.yml": text}, project=PROJECT)
    (table,) = load_project(root).tables
    assert (table.name, table.path, table.source_file) == ("orders", "s3://lake/prod/orders", "tables/orders.yml")
    assert (table.description, table.owner, table.tags) == ("Orders.", "sales", ("gold", "pii"))
    assert table.clean == CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, 5, 2, 48, False)
    assert table.file_sizing == FileSizing(1_000_000, 0, 1000)
    assert table.table == TableSpec(TableType.MERGE_ON_READ, ("id", "region"), ("region",), "ts")
    assert table.metadata_table is MetadataTableMode.DISABLE


def test_project_settings_are_typed_and_spark_conf_values_become_text(write_project: WriteProject) -> None:
    root = write_project({}, project=PROJECT)
    project = load_project(root)
    assert (project.name, project.directory, project.tables_dir) == ("demo", str(root), "tables")
    assert project.allowed_roots == (f"{root}/warehouse", "s3://lake/prod")
    assert project.spark == SparkSettings("local[2]", (
        ("spark.sql.shuffle.partitions", "2"), ("spark.ui.enabled", "false"), ("spark.app.name", "demo")))
    assert project.tables == ()


def test_tables_are_found_in_nested_folders_and_sorted_by_name(write_project: WriteProject) -> None:
    root = write_project({
        "tables/z/b.yaml": "name: alpha\npath: warehouse/alpha\n",
        "tables/a.yml": "name: zulu\npath: warehouse/zulu\n",
        "tables/deep/er/c.yml": "name: mike\npath: warehouse/mike\n",
        "tables/notes.txt": "not a declaration",
        "tables/.hidden.yml": "- ignored: editors and tools leave such files",
        "tables/.git/x.yml": "- ignored",
    })
    tables = load_project(root).tables
    assert [(t.name, t.source_file) for t in tables] == [
        ("alpha", "tables/z/b.yaml"), ("mike", "tables/deep/er/c.yml"), ("zulu", "tables/a.yml")]


@pytest.mark.parametrize(
    ("declared", "resolved"),
    [
        ("warehouse/t/", "{root}/warehouse/t"),
        ("file://{root}/warehouse/t", "{root}/warehouse/t"),
        ("/data/t", "/data/t"),
        ("s3://bucket/t/", "s3://bucket/t"),
    ],
)
def test_table_paths_are_resolved(write_project: WriteProject, tmp_path: Path, declared: str, resolved: str) -> None:
    root = write_project({"tables/t.yml": f"name: t\npath: {declared.replace('{root}', str(tmp_path))}\n"})
    assert load_project(root).tables[0].path == resolved.replace("{root}", str(tmp_path))


def test_a_custom_tables_dir_and_a_byte_order_mark_are_fine(write_project: WriteProject) -> None:
    root = write_project({"decls/t.yml": "\ufeffname: t\npath: x\n"}, project="name: p\ntables_dir: decls\n")
    assert [t.name for t in load_project(root).tables] == ["t"]


def test_a_path_given_as_a_pathlike_or_a_relative_string_is_accepted(
    write_project: WriteProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_project({"tables/t.yml": "name: t\npath: x\n"})
    monkeypatch.chdir(root.parent)
    assert load_project(root.name).directory == str(root)
    assert load_project(root).directory == str(root)


def test_errors_in_one_file_do_not_hide_errors_in_others(write_project: WriteProject) -> None:
    files = {f"tables/t{i}.yml": f"name: t{i}\npath: x{i}\nclean: {{commits_retained: 0}}\n" for i in range(5)}
    with pytest.raises(DeclarationError) as caught:
        load_project(write_project(files))
    assert [p.file for p in caught.value.problems] == [f"tables/t{i}.yml" for i in range(5)]
    assert str(caught.value).startswith("5 problems in the declarations:\n  tables/t0.yml:3:9: ")
