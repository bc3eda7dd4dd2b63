"""`runner apply --threads N`: several tables at once in the shared Spark session, each with its
own result, in declaration order; a table that fails never stops the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.cli import main
from tests.conftest import FIXTURES, extract_fixture
from tests.execute.conftest import oracle_snapshot

OVERWRITE = FIXTURES / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip"
TABLE = ("name: {name}\npath: {name}\nclean:\n  policy: KEEP_LATEST_FILE_VERSIONS\n  file_versions_retained: 1\n"
         "file_sizing:\n  small_file_limit: 0\n")


def make_project(root: Path, names: list[str], broken: str, project_yml: str) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text(project_yml)
    for name in names:
        (root / "tables" / f"{name}.yml").write_text(TABLE.format(name=name))
        if name == broken:  # a folder that is not a Hudi table: planning it fails
            (root / name).mkdir()
            (root / name / "data.parquet").write_bytes(b"not hudi")
        else:
            extract_fixture(OVERWRITE, root / "unzip" / name).rename(root / name)
    return root


@pytest.mark.parametrize("how", [["--threads", "3"], []], ids=["flag", "project.yml"])
def test_tables_apply_concurrently_and_a_failure_stops_no_other(tmp_path, capsys, spark, how):
    names = ["a", "b", "broken", "c"]
    root = make_project(
        tmp_path / "p", names, "broken", "name: threads\nthreads: 3\n" if not how else "name: threads\n"
    )
    before = {n: oracle_snapshot(root / n) for n in names if n != "broken"}
    code = main(["apply", "--auto-approve", "--format", "json", "--project-dir", str(root), *how])
    report = json.loads(capsys.readouterr().out)
    assert code == 1  # one table failed
    assert [t["name"] for t in report["tables"]] == names
    status = {t["name"]: t for t in report["tables"]}
    assert status["broken"]["status"] == "error" and "broken" in status["broken"]["error"]["message"]
    for name, snapshot in before.items():
        assert status[name]["status"] == "success", status[name]
        assert status[name]["files_deleted"] == 4
        # A local master deletes 4 files on the runner's thread pool: no Spark job, no executor.
        assert status[name]["executors"] == []
        assert oracle_snapshot(root / name)[1] == snapshot[1]  # same rows for the independent reader


def test_threads_must_be_a_positive_count(tmp_path, capsys):
    assert main(["apply", "--auto-approve", "--threads", "0", "--project-dir", str(tmp_path)]) == 1
    assert "expected a whole number from 1 to 64" in capsys.readouterr().err
