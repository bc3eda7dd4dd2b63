"""The JSON Schemas are well-formed, fully documented, closed, and agree with the code's defaults."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from runner.declarations import model
from runner.declarations.model import SparkSettings
from runner.declarations.schema import PROJECT_SCHEMA, TABLE_SCHEMA, load_schema
from runner.declarations.sizes import parse_size

# Fields with no meaningful default: required identity fields, and free text whose absence means "none".
NO_DEFAULT = {"name", "path", "description", "owner", "precombine_field", "meta_fields", "table", "remote", "target",
              "executor_memory", "resize_partitions"}  # None: the Spark session's own


def _properties(schema: dict[str, Any], where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (dotted name, subschema) of every `properties` map, including those under `$defs`."""
    for name, sub in schema.get("properties", {}).items():
        yield f"{where}{name}", sub
        yield from _properties(sub, f"{where}{name}.")
    for name, sub in schema.get("$defs", {}).items():
        yield from _properties(sub, f"$defs.{name}.")


def _objects(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from _objects(value)


@pytest.mark.parametrize("name", [TABLE_SCHEMA, PROJECT_SCHEMA])
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("name", [TABLE_SCHEMA, PROJECT_SCHEMA])
def test_every_field_has_a_description_and_a_default_unless_it_cannot(name: str) -> None:
    schema = load_schema(name)
    for field, sub in _properties(schema):
        target = load_schema(TABLE_SCHEMA)["$defs"][sub["$ref"].split("/")[-1]] if "$ref" in sub else sub
        assert target.get("description"), f"{name}: {field} has no description"
        if field.split(".")[-1] not in NO_DEFAULT:
            assert "default" in sub or "default" in target, f"{name}: {field} has no default"


@pytest.mark.parametrize("name", [TABLE_SCHEMA, PROJECT_SCHEMA])
def test_every_object_is_closed(name: str) -> None:
    for sub in _objects(load_schema(name)):
        if "properties" in sub:
            assert sub.get("additionalProperties") is False, sub.get("description")


def test_table_schema_defaults_are_the_models_defaults() -> None:
    defs = load_schema(TABLE_SCHEMA)["$defs"]
    clean, sizing = defs["clean"]["properties"], defs["file_sizing"]["properties"]
    assert clean["policy"]["default"] == model.DEFAULT_POLICY
    assert clean["commits_retained"]["default"] == model.DEFAULT_COMMITS_RETAINED
    assert clean["file_versions_retained"]["default"] == model.DEFAULT_FILE_VERSIONS_RETAINED
    assert clean["hours_retained"]["default"] == model.DEFAULT_HOURS_RETAINED
    assert clean["incremental"]["default"] is model.DEFAULT_INCREMENTAL
    assert parse_size(sizing["max_file_size"]["default"]) == model.DEFAULT_MAX_FILE_SIZE
    assert parse_size(sizing["small_file_limit"]["default"]) == model.DEFAULT_SMALL_FILE_LIMIT
    assert sizing["insert_split_size"]["default"] == model.DEFAULT_INSERT_SPLIT_SIZE
    assert sizing["strategy"]["default"] == model.DEFAULT_RESIZE_STRATEGY
    table = load_schema(TABLE_SCHEMA)["properties"]
    assert table["metadata_table"]["default"] == model.MetadataTableMode.KEEP
    assert defs["table"]["properties"]["type"]["default"] == model.TableType.COPY_ON_WRITE


def test_enums_in_the_schema_are_the_models_enums() -> None:
    defs = load_schema(TABLE_SCHEMA)["$defs"]
    assert defs["clean"]["properties"]["policy"]["enum"] == list(model.CleanPolicyName)
    assert defs["table"]["properties"]["type"]["enum"] == list(model.TableType)
    assert defs["file_sizing"]["properties"]["strategy"]["enum"] == list(model.ResizeStrategy)
    assert load_schema(TABLE_SCHEMA)["properties"]["metadata_table"]["enum"] == list(model.MetadataTableMode)


def test_project_schema_defaults_are_the_models_defaults() -> None:
    properties = load_schema(PROJECT_SCHEMA)["properties"]
    assert properties["tables_dir"]["default"] == model.Project.__dataclass_fields__["tables_dir"].default
    assert properties["spark"]["properties"]["master"]["default"] == SparkSettings().master
    assert properties["allowed_roots"]["default"] == []
    assert properties["threads"]["default"] == model.Project.__dataclass_fields__["threads"].default
