"""A resize must not rewrite the files of a table that evolves its schema on read.

With `hoodie.schema.on.read.enable`, Hudi renames, drops and retypes columns without rewriting
files: it keeps every schema version (`.hoodie/.schema/`, and `latest_schema` in each commit's
metadata) and reads each file by the version in force at the instant in its name, matching
columns by field id. A resize writes its inputs' columns under their old names into a file named
with the clustering's instant, which readers then read by the newest version: a renamed column's
values would read as nulls, a dropped-and-re-added one's old values would come back. The runner
cannot map columns by id, so it refuses, naming what it found.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from runner.testing.tables import TableBuilder
from tests.safety.conftest import SIZED, apply_json, project_for
from tests.safety.test_bucket_index import _oracle

EVIDENCE = {
    "history_folder": ".hoodie/.schema/ holds schema versions",
    "property": "hoodie.schema.on.read.enable=true",
    "latest_schema": "records an internal schema (latest_schema)",
}


def _leave_evidence(table: Path, evidence: str, last: str) -> dict[Path, bytes | None]:
    """Returns what the evidence changed, to undo it for the oracle (hudi-rs refuses to read a
    table that sets `hoodie.schema.on.read.enable`)."""
    hoodie = table / ".hoodie"
    if evidence == "history_folder":
        (hoodie / ".schema").mkdir()
        history = hoodie / ".schema" / f"{last}.schemacommit"
        history.write_text('{"schemas": []}')
        return {history: None}
    if evidence == "property":
        properties = hoodie / "hoodie.properties"
        original = properties.read_bytes()
        properties.write_text(properties.read_text() + "hoodie.schema.on.read.enable=true\n")
        return {properties: original}
    # the JSON commit metadata of a version 6 table, as a schema-on-read writer leaves it
    commit = hoodie / f"{last}.commit"
    original = commit.read_bytes()
    meta = json.loads(original)
    meta["extraMetadata"]["latest_schema"] = json.dumps({"max_column_id": 9, "version_id": int(last),
                                                         "type": "record"})
    commit.write_text(json.dumps(meta))
    return {commit: original}


def _undo(changed: dict[Path, bytes | None]) -> None:
    for path, original in changed.items():
        if original is None:
            path.unlink()
        else:
            path.write_bytes(original)


@pytest.mark.parametrize("evidence", sorted(EVIDENCE))
def test_a_table_evolving_its_schema_on_read_is_never_resized(evidence, tmp_path: Path, capsys: Any):
    table = tmp_path / "t"
    last = TableBuilder(table, name="t", partitions=["p=a"], version=6).commit(writes=3)  # three small files
    before = _oracle(table)
    changed = _leave_evidence(table, evidence, str(last))
    root = project_for(table, tmp_path / "project", sizing=SIZED)

    main(["plan", "--project-dir", str(root), "--format", "json"])
    entry = json.loads(capsys.readouterr().out)["tables"][0]
    assert next(s for s in entry["steps"] if s["kind"] == "resize")["groups"] == []
    assert any("resize refused" in n and EVIDENCE[evidence] in n for n in entry["notes"]), entry["notes"]

    code, report = apply_json(capsys, "--project-dir", str(root), "--auto-approve")

    assert code == 0, report
    assert not list((table / ".hoodie").glob("*replacecommit*"))
    _undo(changed)
    assert _oracle(table) == before
