"""Attack: a metadata table whose `files` listing disagrees with storage.

Hudi's readers and cleaner list a table with a metadata table through its `files` partition (hudi-rs
on table versions 8 and 9, Hudi itself on every version), while the runner plans from a storage
listing. A stray base file that storage holds but the metadata table does not (a speculative task's
copy that outlived marker reconciliation, a file copied in by hand) with a completed instant looks,
in a storage listing, like the latest version of its file group: cleaning by that listing deletes
the version every metadata-table reader takes as the latest. A file the metadata table lists but
storage lacks is the same disagreement the other way. Either way the runner must not clean by a
listing its readers do not use: plan says apply will refuse, and apply refuses before deleting.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.errors import RefusedError
from runner.execute.apply import apply_table
from runner.planner import plan_one
from runner.storage import storage_for
from tests.conftest import FIXTURES, extract_fixture
from tests.execute.conftest import oracle_snapshot

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
F9 = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"
# An active file group of the fixture (written by the clustering 20260307162454799) and a completed
# commit after it that did not touch it.
GROUP = "region=eu/04a47f87-3cc6-4c8b-a583-df8602967032-0"
LATEST = f"{GROUP}_1-235-587_20260307162454799.parquet"
STRAY = f"{GROUP}_0-249-999_20260307162456179.parquet"


def _decl(base: Path) -> TableDeclaration:
    return TableDeclaration(
        name="t", path=str(base), source_file="tables/t.yml",
        clean=CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
        file_sizing=FileSizing(small_file_limit=0))


def _no_deletes():  # type: ignore[no-untyped-def]
    def delete(storage, paths):  # type: ignore[no-untyped-def]
        raise AssertionError(f"nothing may be deleted, got {paths}")

    return delete


def _parquet(base: Path) -> list[str]:
    return sorted(str(p.relative_to(base)) for p in base.rglob("*.parquet") if ".hoodie" not in p.parts)


def test_a_stray_file_the_metadata_table_does_not_list_never_gets_its_groups_latest_file_deleted(
        tmp_path: Path) -> None:
    base = extract_fixture(F9, tmp_path)
    before = oracle_snapshot(base)  # hudi-rs lists this table through its metadata table
    shutil.copyfile(base / LATEST, base / STRAY)
    assert oracle_snapshot(base) == before  # readers do not see the stray file
    files = _parquet(base)

    planned = plan_one(_decl(base), storage_for(str(base)), now=NOW)
    step = planned.steps[0]
    assert any(STRAY in r for r in getattr(step, "refusals", ())), planned.steps
    with pytest.raises(RefusedError, match="disagrees with storage"):
        apply_table(_decl(base), None, now=NOW, spark_settings=SparkSettings(), deleter_factory=_no_deletes)
    assert _parquet(base) == files
    assert oracle_snapshot(base) == before


def test_a_listed_file_storage_lacks_is_refused_before_anything_is_deleted(tmp_path: Path) -> None:
    base = extract_fixture(F9, tmp_path)
    gone = "region=us/cfac0ac4-94d0-48b8-9af4-f0dbc7acfe0c-0_1-249-646_20260307162456179.parquet"
    (base / gone).unlink()
    files = _parquet(base)

    planned = plan_one(_decl(base), storage_for(str(base)), now=NOW)
    assert any(gone in r for r in getattr(planned.steps[0], "refusals", ())), planned.steps
    with pytest.raises(RefusedError, match="disagrees with storage"):
        apply_table(_decl(base), None, now=NOW, spark_settings=SparkSettings(), deleter_factory=_no_deletes)
    assert _parquet(base) == files


def test_a_saved_plan_made_before_the_stray_file_appeared_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tests.safety.conftest import apply_json, project_for, saved_plan

    base = extract_fixture(F9, tmp_path / "fx")
    root = project_for(base, tmp_path / "project")
    code, plan = saved_plan(root, tmp_path / "plan.json", capsys)
    assert code == 2
    shutil.copyfile(base / LATEST, base / STRAY)  # after the review, before the apply
    files = _parquet(base)

    code, report = apply_json(capsys, str(plan), "--project-dir", str(root))

    assert code == 1, report
    assert "disagrees with storage" in report["tables"][0]["error"]["message"]
    assert _parquet(base) == files
