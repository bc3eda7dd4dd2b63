"""`runner status` summarises a real table, including drift from the `table:` block."""

from __future__ import annotations

import json

from runner.cli import main
from tests.conftest import FIXTURES, extract_fixture


def test_status_of_a_fixture_with_replaced_groups_and_drift(tmp_path, capsys):
    root = tmp_path / "p"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: s\n")
    (root / "tables" / "t.yml").write_text(
        "name: t\npath: table\ntable:\n  type: MERGE_ON_READ\n  record_key: [id]\n"
        "file_sizing:\n  max_file_size: 1MiB\n  small_file_limit: 512KiB\n"
    )
    zip_path = FIXTURES / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip"
    extract_fixture(zip_path, root / "unzip").rename(root / "table")
    assert main(["status", "--project-dir", str(root), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["tables"][0]
    assert (row["table_type"], row["table_version"], row["metadata_table"]) == ("COPY_ON_WRITE", 6, False)
    assert row["instants"] == {"commit.completed": 2, "replacecommit.completed": 1}
    assert (row["partitions"], row["file_groups"], row["replaced_file_groups"]) == (3, 1, 3)
    assert row["latest_slices"]["files"] == 1 and row["replaced_slices"]["files"] == 4
    assert row["small_files"]["count"] == 1
    assert row["declaration_drift"] == ["table.type: declared 'MERGE_ON_READ', hoodie.properties has 'COPY_ON_WRITE'"]
    assert main(["status", "--project-dir", str(root)]) == 0
    assert "drift: table.type" in capsys.readouterr().out
