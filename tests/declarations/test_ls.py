"""`runner ls`: effective settings of the selected tables, each with where it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.cli import main

from .conftest import WriteProject

PROJECT = "name: p\ndefaults:\n  clean:\n    commits_retained: 7\n  file_sizing:\n    max_file_size: 256MiB\n"
ORDERS = """\
name: orders
path: warehouse/orders
owner: sales
tags: [gold]
clean:
  incremental: false
table: {type: MERGE_ON_READ, record_key: [id], partition_by: [day]}
"""


def ls(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    code = main(["ls", "--project-dir", str(root), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_shows_each_setting_with_its_source(
    write_project: WriteProject, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_project({"tables/orders.yml": ORDERS}, project=PROJECT)
    code, out, _ = ls(capsys, root)
    assert code == 0
    assert out.splitlines() == [
        "orders",
        f"  path                           {root}/warehouse/orders",
        f"  declared in                    {root}/tables/orders.yml",  # absolute: --project-dir was given
        "  owner                          sales",
        "  tags                           gold",
        "  table                          MERGE_ON_READ; key id; partitioned by day",
        "  metadata_table                 keep",
        "  clean.policy                   KEEP_LATEST_COMMITS         hudi default",
        "  clean.commits_retained         7                           project default",
        "  clean.incremental              false                       table",
        "  file_sizing.max_file_size      256MiB (268,435,456 bytes)  project default",
        "  file_sizing.small_file_limit   100MiB (104,857,600 bytes)  hudi default",
        "  file_sizing.insert_split_size  500,000                     hudi default",
        "  file_sizing.strategy           rewrite                     runner default",
    ]


def test_text_shows_only_the_retention_of_the_tables_policy(
    write_project: WriteProject, capsys: pytest.CaptureFixture[str]
) -> None:
    table = "name: t\npath: t\nclean: {policy: KEEP_LATEST_BY_HOURS}\n"
    _, out, _ = ls(capsys, write_project({"tables/t.yml": table}, project=PROJECT))
    assert "clean.hours_retained" in out
    assert "commits_retained" not in out and "file_versions_retained" not in out


def test_json_lists_every_setting_and_source(write_project: WriteProject, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_project({"tables/orders.yml": ORDERS, "tables/b.yml": "name: b\npath: b\n"}, project=PROJECT)
    code, out, _ = ls(capsys, root, "--format", "json", "-s", "tag:gold")
    data = json.loads(out)
    assert code == 0 and data["project"] == "p"
    (orders,) = data["tables"]
    assert orders["table"] == {"type": "MERGE_ON_READ", "record_key": ["id"], "partition_by": ["day"],
                               "precombine_field": None, "meta_fields": None}
    assert orders["settings"] == {
        "clean.policy": {"value": "KEEP_LATEST_COMMITS", "source": "hudi default"},
        "clean.commits_retained": {"value": 7, "source": "project default"},
        "clean.file_versions_retained": {"value": 3, "source": "hudi default"},
        "clean.hours_retained": {"value": 24, "source": "hudi default"},
        "clean.incremental": {"value": False, "source": "table"},
        "file_sizing.max_file_size": {"value": 268435456, "source": "project default"},
        "file_sizing.small_file_limit": {"value": 104857600, "source": "hudi default"},
        "file_sizing.insert_split_size": {"value": 500000, "source": "hudi default"},
        "file_sizing.strategy": {"value": "rewrite", "source": "runner default"},
        "spark.executor_memory": {"value": None, "source": "runner default"},
        "spark.resize_partitions": {"value": None, "source": "runner default"},
    }


def test_a_selector_matching_nothing_is_an_error_with_did_you_mean(
    write_project: WriteProject, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = ls(capsys, write_project({"tables/orders.yml": ORDERS}), "-s", "order")
    assert (code, out) == (1, "")
    assert err.startswith('error: --select "order" matches no table (did you mean "orders"?); nothing was done')


def test_invalid_declarations_exit_1_with_every_problem(
    write_project: WriteProject, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_project({"tables/a.yml": "name: a\n", "tables/b.yml": "name: b\npath: b\nclean: 3\n"})
    code, out, err = ls(capsys, root)
    assert (code, out) == (1, "")
    # --project-dir names another folder: problems name their files by absolute path.
    assert err == ("error: 2 problems in the declarations:\n"
                   f"  {root}/tables/a.yml:1:1: path: is required but missing\n"
                   f"  {root}/tables/b.yml:3:1: clean: expected a mapping (key: value lines), got 3\n")


def test_a_table_without_meta_fields_says_so(write_project: WriteProject, capsys: pytest.CaptureFixture[str]) -> None:
    table = "name: v\npath: v\ntable: {record_key: [id], partition_by: [day], meta_fields: false}\n"
    root = write_project({"tables/v.yml": table}, project=PROJECT)
    _, out, _ = ls(capsys, root)
    assert "COPY_ON_WRITE; key id; partitioned by day; no meta fields (virtual keys)" in out
    _, out, _ = ls(capsys, root, "--format", "json")
    assert json.loads(out)["tables"][0]["table"]["meta_fields"] is False
