"""`runner status` reports whether the metadata table agrees with storage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner.cli import main
from tests.mdt.conftest import MDT_IDS

F9 = "sample_table/cow/v9_txns_simple_meta"


def _project(tmp_path: Path, table: Path) -> Path:
    root = tmp_path / "p"
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text("name: s\n")
    (root / "tables" / "t.yml").write_text(f"name: t\npath: {table}\n")
    return root


@pytest.mark.parametrize("fixture", MDT_IDS)
def test_status_says_every_fixture_mdt_is_in_step(
    mdt_tables: dict[str, Path], fixture: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path, mdt_tables[fixture])
    assert main(["status", "--project-dir", str(root), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["tables"][0]
    assert row["metadata_table_check"]["ok"] is True
    assert row["metadata_table_check"]["drift"]["in_sync"] is True


def test_status_names_files_deleted_behind_the_mdt_s_back(
    mdt_tables: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "t"
    shutil.copytree(mdt_tables[F9], table)
    victim = sorted(table.glob("region=eu/*.parquet"))[0]
    victim.unlink()
    root = _project(tmp_path, table)
    assert main(["status", "--project-dir", str(root), "--format", "json"]) == 0
    check = json.loads(capsys.readouterr().out)["tables"][0]["metadata_table_check"]
    assert check["ok"] is False
    assert check["drift"]["listed_but_absent"] == [f"region=eu/{victim.name}"]
    assert main(["status", "--project-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"metadata table listed but absent: region=eu/{victim.name}" in out


def test_status_reports_a_pending_mdt_write(
    mdt_tables: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "t"
    shutil.copytree(mdt_tables[F9], table)
    (table / ".hoodie/metadata/.hoodie/timeline/20991231000000000.deltacommit.requested").write_bytes(b"")
    root = _project(tmp_path, table)
    assert main(["status", "--project-dir", str(root)]) == 0
    assert (
        "metadata table: the metadata table has a pending or failed write: 20991231000000000.deltacommit.requested"
        in capsys.readouterr().out
    )


@pytest.mark.parametrize("partitioned", [True, False])
def test_status_on_a_version_6_metadata_table_names_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], partitioned: bool
) -> None:
    from tests.mdt.synthetic import build_with_mdt

    b = build_with_mdt(tmp_path / "t", 6, "MERGE_ON_READ", partitioned)
    root = _project(tmp_path, Path(b.path))
    assert main(["status", "--project-dir", str(root), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["tables"][0]["metadata_table_check"]["ok"] is True
    victim = next(s for s in b.latest_slices() if s.base_file)
    relative = f"{victim.partition}/{victim.base_file}".lstrip("/")
    Path(b.path, relative).unlink()
    assert main(["status", "--project-dir", str(root), "--format", "json"]) == 0
    check = json.loads(capsys.readouterr().out)["tables"][0]["metadata_table_check"]
    assert check["ok"] is False and check["drift"]["listed_but_absent"] == [relative]
