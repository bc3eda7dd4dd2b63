"""Issue acceptance: apply on every real fixture without a metadata table, under each policy.

Afterwards the independent `hudi` reader must see the same latest slices and rows, and a second
plan must report the table in sync.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import fastavro
import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table
from runner.hudi.metadata import decode_clean_metadata, decode_clean_plan
from runner.hudi.state import read_table_metadata
from runner.plan.model import TableStatus
from runner.planner import plan_one
from runner.storage import storage_for
from tests.conftest import FIXTURES, extract_fixture, fixture_id, fixture_zips
from tests.execute.conftest import oracle_snapshot

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
POLICIES = {
    "commits": CleanPolicy(CleanPolicyName.KEEP_LATEST_COMMITS, commits_retained=1),
    "versions": CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
    "hours": CleanPolicy(CleanPolicyName.KEEP_LATEST_BY_HOURS, hours_retained=1),
}


def _without_mdt() -> list[Path]:
    import zipfile

    result = []
    for zip_path in fixture_zips():
        with zipfile.ZipFile(zip_path) as archive:
            if not any("/.hoodie/metadata/" in n for n in archive.namelist()):
                result.append(zip_path)
    return result


CASES = [pytest.param(z, p, id=f"{fixture_id(z)}-{p}") for z in _without_mdt() for p in POLICIES]


@pytest.mark.parametrize(("zip_path", "policy"), CASES)
def test_apply_keeps_what_readers_see_and_converges(zip_path, policy, tmp_path, spark_deleter):
    base = extract_fixture(zip_path, tmp_path)
    # Policy "hours" measured from just after the table's last commit, so the ECTR is real.
    decl = TableDeclaration(
        name="t", path=str(base), source_file="tables/t.yml", clean=POLICIES[policy],
        file_sizing=FileSizing(small_file_limit=0),
    )
    now = _now_for(base, policy)
    before = oracle_snapshot(base)
    planned = plan_one(decl, storage_for(str(base)), now=now)

    result = apply_table(decl, None, now=now, spark_settings=SparkSettings(), deleter_factory=spark_deleter)

    assert result.status in ("success", "in_sync"), result
    assert result.files_deleted == len(planned.clean.files_to_delete)
    assert oracle_snapshot(base) == before
    again = plan_one(decl, storage_for(str(base)), now=now)
    assert again.status is TableStatus.IN_SYNC, again
    if result.status == "success":
        _assert_clean_recorded(base, planned)


def _now_for(base: Path, policy: str) -> datetime:
    if policy != "hours":
        return NOW
    meta = read_table_metadata(storage_for(str(base)))
    writes = meta.timeline.completed_writes
    if not writes:
        return NOW
    last = writes[-1].time.to_datetime().astimezone(UTC)
    return last.replace(microsecond=0)  # 1 hour retention → ECTR is the first commit of the last hour


def _assert_clean_recorded(base: Path, planned) -> None:
    meta = read_table_metadata(storage_for(str(base)))
    assert meta.last_clean is not None and not meta.pending_cleans
    instant, clean = meta.last_clean
    folder = base / meta.timeline_folder
    assert clean.total_files_deleted == len(planned.clean.files_to_delete)
    ectr = planned.clean.earliest_commit_to_retain
    assert clean.earliest_commit_to_retain == (str(ectr.time) if ectr else "")
    requested = (folder / f"{instant.time}.clean.requested").read_bytes()
    plan = decode_clean_plan(requested, path="requested", base_path=str(base))
    assert plan.version == 2 and plan.policy == planned.clean.policy.value
    # The files we wrote are Avro containers whose embedded schemas carry Hudi's record names.
    for name in (f"{instant.time}.clean.requested", instant.file_name):
        schema = fastavro.reader(io.BytesIO((folder / name).read_bytes())).writer_schema
        assert schema["name"] in ("org.apache.hudi.avro.model.HoodieCleanerPlan",
                                  "org.apache.hudi.avro.model.HoodieCleanMetadata")
    assert decode_clean_metadata((folder / instant.file_name).read_bytes(), path="x") == clean


def test_fixture_folder_is_present():
    assert FIXTURES.is_dir(), f"expected the shared fixtures at {FIXTURES}"
