"""The JSON Schemas and the runner agree on every value of every setting (issue 12, item 6).

Editors and CI tools check declarations with the schema alone (our `byte-size` formats are unknown
to them), so a value the schema accepts must load, and a value the runner refuses must be refused
by the schema too. Each setting is tried with a spread of values, alone in an otherwise valid
file, the other settings chosen so that cross-field rules (small_file_limit below max_file_size,
retention field of the chosen policy) cannot fire: those need two fields and no JSON Schema can
express them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from runner.declarations.loader import load_project
from runner.declarations.schema import inline_refs, load_schema
from runner.errors import DeclarationError

from .conftest import WriteProject

VALUES: list[Any] = [
    0, 1, -1, 2, 10**15, "0", "1", "0MiB", "000 KB", "1MiB", "120MiB", " 100 MB ", "10 Mib", "1.5GiB",
    "-1MiB", "9" * 15, "9" * 16, "", "abc", "KEEP_LATEST_COMMITS", "keep_latest_commits",
    "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS", True, False, None, [], {}, 1.5, "id", "id,ts",
    ["id"], ["id", "ts"], ["id", "id"], ["a,b"], [1], "COPY_ON_WRITE", "MERGE_ON_READ", "keep", "disable",
    "w/a\x00b", "w/a\nb", "w/a\tb", "w/a\x85b", "s3://lake/t", "s3:/lake", "file:///tmp/t", "w/é",
    # The largest of each unit that a Java long surely holds, and one digit more.
    "999999999GiB", "1000000000GiB", "999999999 GB", "8589934592GB", "999999999999MiB", "1000000000000MB",
    "999999999999999KiB", "999999999999999 KB",
]
# JSON Schema counts 2.0 as an integer; the runner refuses it as a likely typo. No schema keyword
# can tell 2.0 from 2, so whole floats are the one known, deliberate difference and are not tried.

CONTEXT: dict[tuple[str, str], dict[str, Any]] = {
    ("clean", "commits_retained"): {"policy": "KEEP_LATEST_COMMITS"},
    ("clean", "file_versions_retained"): {"policy": "KEEP_LATEST_FILE_VERSIONS"},
    ("clean", "hours_retained"): {"policy": "KEEP_LATEST_BY_HOURS"},
    ("file_sizing", "max_file_size"): {"small_file_limit": 0},
    ("file_sizing", "small_file_limit"): {"max_file_size": 2**63 - 1},
}
SETTINGS = [(block, key) for block in ("clean", "file_sizing", "table")
            for key in load_schema("table.schema.json")["$defs"][block]["properties"]]
SETTINGS += [("", "metadata_table"), ("", "owner"), ("", "tags"), ("", "description"), ("", "path")]


def editor_accepts(schema_name: str, document: dict[str, Any]) -> bool:
    """What an editor or `check-jsonschema` says: the schema alone, formats not asserted."""
    schema = inline_refs(load_schema(schema_name), schema_name)
    return Draft202012Validator(schema).is_valid(document)


def runner_accepts(root: Path) -> bool:
    try:
        load_project(root)
    except DeclarationError:
        return False
    return True


@pytest.mark.parametrize(("block", "key"), SETTINGS, ids=lambda v: v or "top")
def test_table_settings_agree(block: str, key: str, write_project: WriteProject) -> None:
    disagreements = []
    for value in VALUES:
        body: dict[str, Any] = {**CONTEXT.get((block, key), {}), key: value}
        document: dict[str, Any] = {"name": "t", "path": "warehouse/t", **({block: body} if block else body)}
        if key == "path" and value in ("s3:/lake",):
            continue  # a URI's shape is a rule (paths.resolve_path), not a schema constraint
        root = write_project({"tables/t.yml": json.dumps(document)})
        schema_says, runner_says = editor_accepts("table.schema.json", document), runner_accepts(root)
        if schema_says != runner_says:
            disagreements.append(f"{value!r}: schema {'accepts' if schema_says else 'refuses'}, "
                                 f"runner {'accepts' if runner_says else 'refuses'}")
    assert not disagreements, f"{block}.{key}: " + "; ".join(disagreements)


@pytest.mark.parametrize(("block", "key"), [s for s in SETTINGS if s[0] in ("clean", "file_sizing")],
                         ids=lambda v: v)
def test_project_defaults_agree(block: str, key: str, write_project: WriteProject) -> None:
    disagreements = []
    for value in VALUES:
        document = {"name": "p", "defaults": {block: {**CONTEXT.get((block, key), {}), key: value}}}
        root = write_project({}, project=json.dumps(document))
        schema_says, runner_says = editor_accepts("project.schema.json", document), runner_accepts(root)
        if schema_says != runner_says:
            disagreements.append(f"{value!r}: schema {'accepts' if schema_says else 'refuses'}, "
                                 f"runner {'accepts' if runner_says else 'refuses'}")
    assert not disagreements, f"defaults.{block}.{key}: " + "; ".join(disagreements)
