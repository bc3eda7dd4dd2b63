"""The compiled validator (`schema.is_valid`, a fast yes or no) and `jsonschema` (`schema.explainer`,
which words every error) accept exactly the same documents.

`check_and_prune` trusts a yes from the compiled validator and asks `jsonschema` only after a no,
so a document the compiled one wrongly accepted would skip every schema check, and one it wrongly
refused would only cost time. Both directions are checked here, on valid declarations mutated one
field at a time by hypothesis: the mutations put values next to every boundary of the schemas
(lengths, minimums, patterns with their `$`, sizes, enums, integers written as floats, YAML 1.1
traps, unknown and missing keys).
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.declarations import schema
from runner.declarations.yaml_io import Trap, TrapKind

from .conftest import write_files

TABLE: dict[str, Any] = {
    "name": "orders",
    "path": "warehouse/orders",
    "description": "Orders",
    "owner": "team-a",
    "tags": ["bench", "tier1"],
    "clean": {"policy": "KEEP_LATEST_COMMITS", "commits_retained": 5, "file_versions_retained": 2,
              "hours_retained": 24, "incremental": True},
    "file_sizing": {"max_file_size": "120MiB", "small_file_limit": 104857600, "insert_split_size": 500000},
    "spark": {"executor_memory": "8g", "resize_partitions": 4},
    "table": {"type": "COPY_ON_WRITE", "record_key": ["id"], "partition_by": "day", "precombine_field": "ts"},
    "metadata_table": "keep",
}
PROJECT: dict[str, Any] = {
    "name": "lake",
    "tables_dir": "tables",
    "allowed_roots": ["warehouse", "s3://bucket/lake"],
    "defaults": {"clean": {"policy": "KEEP_LATEST_BY_HOURS", "hours_retained": 48},
                 "file_sizing": {"max_file_size": 1000, "small_file_limit": "0"},
                 "spark": {"executor_memory": "4096m"}},
    "spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": "2", "spark.x": 3, "spark.y": True}},
    "threads": 4,
    "target": "prod",
    "targets": {"prod": {"spark": {"remote": "sc://spark:15002/;token=x"}, "threads": 8}, "dev": {}},
}
BOUNDARIES: list[object] = [
    "orders", "Orders", "a\n", "a\n\n", "\na", "", " ", "x" * 128, "x" * 129, "a,b", "a b", "_x", "x-y",
    "tab\there", "nul\x00", "del\x7f", "nel\x85", "ü",
    "8g", "8G", "8gb", "8 g", "449m", "450m", "1234567890m", "4096", "8g\n",
    "120MiB", "120 MiB", " 5 MB ", "5 MB\n", "0", "0MiB", "00 KB", "0B", "1B", "12 XB", "1" * 15, "1" * 16,
    "KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS", "keep_latest_commits",
    "keep", "disable", "KEEP", "COPY_ON_WRITE", "MERGE_ON_READ",
    "sc://host:15002", "sc://host/x", "sc://host/x y", "sc://h\n", "sc://", "local[*]", "prod", "dev", "x.y-z",
    0, 1, -1, 2, 63, 64, 65, 10000, 10001, 2**70, True, False, None,
    10.0, 1.5, -0.0, float("nan"), float("inf"),
    [], ["a"], ["a", "a"], ["a", 1], [None], ["a\n"], {}, {"x": 1}, {"spark.x": "1"}, {"remote": "sc://h"},
    Trap("010", TrapKind.OCTAL), Trap("yes", TrapKind.BOOLEAN), Trap("2024-01-01", TrapKind.DATE),
    Trap("500_000", TrapKind.UNDERSCORE),
]
KEYS = ["name", "path", "clean", "policy", "commits_retained", "spark", "conf", "threads", "remote", "master",
        "max_file_size", "record_key", "prod", "bogus", "1x", "x y", ""]

# Drawn values are copied: BOUNDARIES holds mutable lists and dicts, and a mutation that adds a key
# to one drawn as is would change the shared constant, so later examples (and hypothesis's replays
# of earlier ones) would draw something else (FlakyStrategyDefinition).
values = st.recursive(
    st.sampled_from(BOUNDARIES) | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    max_leaves=6,
).map(copy.deepcopy)


def paths(node: object, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every place in a document, the top level included."""
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += paths(value, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths(doc)))
        parent: Any = doc
        for part in where[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["set", "set", "set", "delete", "add"]))
        if not where:
            continue
        if action == "delete" and isinstance(parent, dict):
            parent.pop(where[-1], None)
        elif action == "add" and isinstance(parent[where[-1]], dict):
            parent[where[-1]][draw(st.sampled_from(KEYS))] = draw(values)
        else:
            parent[where[-1]] = draw(values)
    return doc


def jsonschema_accepts(doc: object, name: str) -> bool:
    return next(iter(schema.explainer(name).iter_errors(doc)), None) is None


def assert_agree(doc: dict[str, Any], name: str) -> None:
    """A yes from the compiled validator is always jsonschema's yes; a no is jsonschema's no except
    for a document holding a float, which `is_valid` always leaves to jsonschema by design (a float
    is valid only where the schema allows a number: `spark.conf` values)."""
    fast, full = schema.is_valid(doc, name), jsonschema_accepts(doc, name)
    if fast:
        assert full
    elif not schema._has_float(doc):
        assert not full


AGREE = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_unmutated_declarations_are_valid_for_both() -> None:
    for doc, name in ((TABLE, schema.TABLE_SCHEMA), (PROJECT, schema.PROJECT_SCHEMA)):
        assert schema.is_valid(doc, name) and jsonschema_accepts(doc, name)


@AGREE
@given(mutated(TABLE))
def test_both_validators_accept_the_same_tables(doc: dict[str, Any]) -> None:
    assert_agree(doc, schema.TABLE_SCHEMA)


@AGREE
@given(mutated(PROJECT))
def test_both_validators_accept_the_same_projects(doc: dict[str, Any]) -> None:
    assert_agree(doc, schema.PROJECT_SCHEMA)


def test_the_places_where_the_two_libraries_read_a_schema_differently_agree() -> None:
    # Each of these, handed to fastjsonschema as is, gets the other answer than jsonschema's.
    cases = [
        {**TABLE, "name": "orders\n"},  # a final newline: refused by both (`$` is the end of the text)
        {**TABLE, "clean": {"commits_retained": 10.0}},  # JSON Schema's integer; ours refuses it
        {**TABLE, "file_sizing": {"max_file_size": "0MiB"}},  # our formats raise instead of saying no
        {**TABLE, "tags": []},  # its defaults must not be written into the data it checks
    ]
    for doc in cases:
        before = copy.deepcopy(doc)
        assert schema.is_valid(doc, schema.TABLE_SCHEMA) == jsonschema_accepts(doc, schema.TABLE_SCHEMA), doc
        assert doc == before


def test_validating_a_valid_project_never_loads_jsonschema(tmp_path: Path) -> None:
    # jsonschema is imported only to explain an invalid file: most of `runner validate`'s start-up.
    valid = write_files(tmp_path / "valid", {"project.yml": "name: p\n",
                                             "tables/a.yml": "name: a\npath: warehouse/a\n"})
    invalid = write_files(tmp_path / "invalid", {"project.yml": "name: p\n",
                                                 "tables/a.yml": "name: a\npath: warehouse/a\nowner: 3\n"})
    check = (
        "import sys\n"
        "from runner.cli import main\n"
        "code = main(['validate', '--project-dir', sys.argv[1]])\n"
        "print('jsonschema' in sys.modules)\n"
        "sys.exit(code)\n"
    )
    for root, code, loaded in ((valid, 0, "False"), (invalid, 1, "True")):
        done = subprocess.run([sys.executable, "-c", check, str(root)], capture_output=True, text=True, check=False)
        assert (done.returncode, done.stdout.splitlines()[-1]) == (code, loaded), done.stdout + done.stderr
