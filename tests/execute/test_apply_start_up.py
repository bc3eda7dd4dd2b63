"""What `runner apply` loads to clean a table: the codecs of the metadata table (numpy, pyarrow),
the plan-file schema check (jsonschema) and Spark only when the table or the input needs them.

On a small table the interpreter's start-up is most of a scheduled run, and these imports were
about half of it (issue 10's CLI row)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner.testing.tables import TableBuilder

HEAVY = ("numpy", "pyarrow", "jsonschema", "pyspark", "py4j")


def project_with(table: Path, tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "tables").mkdir(parents=True)
    (project / "project.yml").write_text('name: startup\nspark: {master: "local[1]"}\n')
    (project / "tables" / "t.yml").write_text(
        f"name: t\npath: {table}\n"
        "clean: {policy: KEEP_LATEST_FILE_VERSIONS, file_versions_retained: 1}\n"
        "file_sizing: {small_file_limit: 0}\n"
    )
    return project


def apply_and_list_heavy_modules(project: Path) -> tuple[int, list[str], str]:
    check = (
        "import json, sys\n"
        "from runner.cli import main\n"
        f"code = main(['apply', '--auto-approve', '--project-dir', {str(project)!r}])\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))\n"
        "print('HEAVY=' + json.dumps(heavy))\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=False)
    line = next(x for x in done.stdout.splitlines() if x.startswith("HEAVY="))
    return done.returncode, json.loads(line.removeprefix("HEAVY=")), done.stdout + done.stderr


def test_cleaning_a_table_without_a_metadata_table_loads_no_heavy_codec(tmp_path: Path) -> None:
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["region=eu", "region=us"], tiny=True)
    builder.commit(writes=2)
    for _ in range(3):
        builder.commit(updates=2)

    code, heavy, output = apply_and_list_heavy_modules(project_with(table, tmp_path))

    assert code == 0, output
    assert list((table / ".hoodie").glob("*.clean")), "nothing was cleaned: the check proves nothing"
    assert heavy == [], f"a clean of a table without a metadata table imported {heavy}"


@pytest.mark.parametrize("version", [6, 8])
def test_a_table_with_a_metadata_table_still_gets_it_maintained(tmp_path: Path, version: int) -> None:
    """The lazy imports must not skip the metadata table's upkeep."""
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=["region=eu", "region=us"], version=version,
                           tiny=True, metadata_table=True)
    builder.commit(writes=2)
    for _ in range(3):
        builder.commit(updates=2)
    before = {p.name for p in (table / ".hoodie" / "metadata" / ".hoodie").rglob("*deltacommit*")}

    code, heavy, output = apply_and_list_heavy_modules(project_with(table, tmp_path))

    assert code == 0, output
    after = {p.name for p in (table / ".hoodie" / "metadata" / ".hoodie").rglob("*deltacommit*")}
    assert after > before, "the clean wrote no metadata-table deltacommit"
    assert "numpy" in heavy
