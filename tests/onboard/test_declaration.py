"""The declaration text `runner import` drafts: every name and field, however Hudi spelled it, reads
back through the project's own loader as exactly what hoodie.properties says."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.declarations.loader import load_project
from runner.hudi.properties import TableConfig
from runner.onboard.declaration import MAX_NAME, Names, base_name, draft
from runner.onboard.discover import CleanEvidence, TableFacts


@pytest.mark.parametrize(("table_name", "expected"), [
    ("orders", "orders"),
    ("Sales.Orders-EU", "sales_orders_eu"),
    ("2024 sales", "t_2024_sales"),
    ("__private", "private"),
    ("Ünïcode", "unicode"),  # accents folded, not the letters dropped
    ("Café.Commände", "cafe_commande"),
    ("ﬁle_Ⅻ", "file_xii"),  # compatibility forms become their letters
    ("注文", "table"),  # no Latin letter or digit left
    ("???", "table"),
    ("x" * 200, "x" * MAX_NAME),
])
def test_base_name_is_what_the_schema_accepts(table_name, expected):
    assert base_name(table_name) == expected


@pytest.mark.parametrize(("table_name", "folder", "expected"), [
    ("???", "/lake/Orders EU", "orders_eu"),   # nothing usable in the name: the folder's name, not `table`
    ("注文", "s3://bucket/sales/chuumon", "chuumon"),
    ("???", "/lake/???", "table"),              # nor in the folder's
    ("orders", "/lake/anything", "orders"),     # a usable name wins
])
def test_a_name_with_nothing_usable_falls_back_to_the_folder_name(table_name, folder, expected):
    assert base_name(table_name, folder=folder) == expected


def test_names_count_up_skip_taken_ones_and_stay_within_the_limit():
    names = Names(["orders", "orders_3"])
    assert [names.choose("orders") for _ in range(3)] == ["orders_2", "orders_4", "orders_5"]
    assert names.choose("customers") == "customers"
    long = "x" * MAX_NAME
    assert Names([long]).choose(long) == "x" * (MAX_NAME - 2) + "_2"


def facts(**properties: str) -> TableFacts:
    props = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "6",
             **properties}
    return TableFacts("/lake/t", TableConfig.from_properties(props, path="hoodie.properties"), None)


@pytest.mark.parametrize("properties", [
    # YAML 1.1 would read these unquoted as booleans, numbers or null.
    {"hoodie.table.name": "yes", "hoodie.table.recordkey.fields": "on,off",
     "hoodie.table.partition.fields": "2024:SIMPLE,null", "hoodie.table.precombine.field": "010"},
    # Spaces, colons, hashes, quotes and a newline in a name must not escape their scalar or comment.
    {"hoodie.table.name": "a: b\n# c", "hoodie.table.recordkey.fields": "key #1, 'q'",
     "hoodie.table.partition.fields": "", "hoodie.table.ordering.fields": "x y,z"},
])
def test_every_field_reads_back_through_the_loader(tmp_path: Path, properties: dict[str, str]):
    (tmp_path / "project.yml").write_text("name: p\n")
    table = facts(**properties)
    made = draft(table, name=base_name(table.config.name), path=table.location, schema_ref="../schemas/x.json")

    (decl,) = load_project(tmp_path, new_files={"tables/t.yml": made.text}).tables

    config = table.config
    assert decl.name == base_name(config.name)
    assert decl.path == "/lake/t"
    assert decl.table is not None
    assert decl.table.type is config.table_type
    assert decl.table.record_key == config.record_key_fields
    assert decl.table.partition_by == config.partition_fields
    assert decl.table.precombine_field == ",".join(config.ordering_fields)


def test_a_clean_policy_the_runner_does_not_know_falls_back_to_hudis_default(tmp_path: Path):
    (tmp_path / "project.yml").write_text("name: p\n")
    table = facts()
    odd = TableFacts(table.location, table.config, CleanEvidence("KEEP_NOTHING", ".hoodie/1.clean.requested"))

    made = draft(odd, name="t", path=odd.location, schema_ref="x")

    (decl,) = load_project(tmp_path, new_files={"tables/t.yml": made.text}).tables
    assert (decl.clean.policy.value, decl.clean.commits_retained) == ("KEEP_LATEST_COMMITS", 10)
    assert made.notes == ('clean policy "KEEP_NOTHING" in .hoodie/1.clean.requested is not one the runner '
                          "knows; the project's default policy applies, else Hudi's KEEP_LATEST_COMMITS",)
    assert "\nclean:" not in made.text
