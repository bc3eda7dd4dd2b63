"""Attack: partition names in another form than the one storage lists.

Hudi records partition paths as strings (commit metadata, replacecommits, compaction plans); a file
system may list the same folder under another spelling. macOS's file systems fold case and
Unicode normalisation (HFS+ lists names decomposed, NFD; APFS finds `Zürich` in NFC and NFD alike),
so a table written as `city=Zürich` (NFC) and copied from or kept on such a disk lists its folder as
`city=Zürich` in NFD, or a writer's `city=Basel` lands in the folder `city=basel`. An incremental clean takes its
partitions from the commit metadata; one it cannot list under that exact name has no file groups,
and was planned for deletion: on a folding file system that name is the folder holding the live
data, and a pending clean naming it is run by Hudi's cleaner as a recursive delete. A partition is
only planned for deletion when it is listed under exactly the name the clean records.

S3 and the local disk here compare names byte for byte, as Hudi does: two partitions differing only
in case or normalisation there are two partitions, each cleaned by its own rules.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from runner.cli import main
from runner.testing.tables import TableBuilder
from tests.execute.conftest import oracle_snapshot
from tests.plan_json import planned_table
from tests.safety.conftest import digest

NFC = unicodedata.normalize("NFC", "city=Zürich")
NFD = unicodedata.normalize("NFD", NFC)


def _project(table: Path, root: Path, incremental: bool = True) -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "project.yml").write_text('name: forms\nspark: {master: "local[1]"}\n')
    (root / "tables" / "t.yml").write_text(
        f"name: t\npath: {table}\nclean: {{policy: KEEP_LATEST_COMMITS, commits_retained: 1, "
        f"incremental: {str(incremental).lower()}}}\nfile_sizing: {{small_file_limit: 0}}\n")
    return root


@pytest.mark.parametrize(("written", "listed"), [(NFC, NFD), ("city=Basel", "city=basel")],
                         ids=["nfc-listed-nfd", "case"])
def test_a_partition_listed_under_another_spelling_is_never_planned_for_deletion(written, listed, tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=[written, "city=Bern"])
    builder.commit(writes=1)
    builder.commit(updates=1)
    builder.commit(updates=1)
    root = _project(table, tmp_path / "project")
    assert main(["apply", "--project-dir", str(root), "--auto-approve"]) == 0  # a clean to be incremental from
    builder.commit(updates=1)
    builder.commit(updates=1)
    (table / written).rename(table / listed)  # the folder as a folding file system lists it
    capsys.readouterr()

    plan = planned_table(root, capsys)

    (clean,) = [s for s in plan["steps"] if s["kind"] == "clean"]
    assert clean["partitions_to_delete"] == [], clean
    before = {k: v for k, v in digest(table).items() if k.startswith(listed)}
    assert main(["apply", "--project-dir", str(root), "--auto-approve"]) == 0, capsys.readouterr().out
    assert {k: v for k, v in digest(table).items() if k.startswith(listed)} == before


def test_partitions_differing_only_in_case_or_form_are_cleaned_each_by_its_rules(tmp_path, capsys):
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=[NFC, NFD, "city=Basel", "city=basel"])
    builder.commit(writes=1)
    builder.commit(updates=1)
    builder.commit(updates=1)
    _, rows = oracle_snapshot(table)
    root = _project(table, tmp_path / "project", incremental=False)

    plan = planned_table(root, capsys)

    (clean,) = [s for s in plan["steps"] if s["kind"] == "clean"]
    by_partition: dict[str, int] = {}
    for f in clean["files_to_delete"]:
        by_partition[f["partition"]] = by_partition.get(f["partition"], 0) + 1
    assert by_partition == {NFC: 1, NFD: 1, "city=Basel": 1, "city=basel": 1}, by_partition
    assert main(["apply", "--project-dir", str(root), "--auto-approve"]) == 0, capsys.readouterr().out
    assert oracle_snapshot(table)[1] == rows


@pytest.mark.parametrize(("written", "listed"), [(NFC, NFD), ("city=Basel", "city=basel")],
                         ids=["nfc-listed-nfd", "case"])
def test_replaced_groups_listed_under_another_spelling_refuse_the_clean(written, listed, tmp_path, capsys):
    # The replacecommit names the groups it replaced under the partition as its writer spelled it;
    # listed under another spelling they look active, so the clean keeps their latest slices while
    # recording a bound past the replacecommit, which Hudi's archiver then takes for cleaned.
    table = tmp_path / "t"
    builder = TableBuilder(table, name="t", partitions=[written, "city=Bern"])
    builder.commit(writes={written: 2, "city=Bern": 1})
    builder.clustering(written)
    builder.commit(updates=1)
    builder.commit(updates=1)
    (table / written).rename(table / listed)
    root = _project(table, tmp_path / "project", incremental=False)
    before = digest(table)

    code = main(["plan", "--project-dir", str(root), "--format", "json"])
    out = capsys.readouterr().out
    assert code == 1, out
    error = json.dumps(json.loads(out)["tables"][0]["error"], ensure_ascii=False)
    assert written in error and listed in error and "nothing" in error, error
    assert main(["apply", "--project-dir", str(root), "--auto-approve"]) == 1
    assert digest(table) == before
