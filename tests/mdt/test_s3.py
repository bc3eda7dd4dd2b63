"""The metadata table through object storage: read, compare with storage, record a clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.execute.clean import CleanRunner
from runner.hudi.instant import Action, InstantTime
from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.mdt.maintain import prepare_clean_maintenance
from runner.hudi.metadata import CleanFileInfo, CleanPlan, encode_clean_plan
from runner.hudi.state import read_table_metadata, read_table_state
from runner.hudi.timeline_writer import TimelineWriter
from runner.storage import DeleteResult, storage_for
from tests.conftest import FIXTURES, extract_fixture
from tests.s3 import S3Server, upload_tree

F9 = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"


@pytest.mark.s3
def test_clean_recorded_in_the_mdt_on_s3(tmp_path: Path, s3_server: S3Server, s3_bucket: str) -> None:
    base = extract_fixture(F9, tmp_path)
    upload_tree(base, s3_bucket, "t", s3_server)
    storage = storage_for(f"s3://{s3_bucket}/t", options=s3_server.options())
    state = read_table_state(storage)
    assert check_metadata_table(storage, state).ok
    replaced = next(g for g in state.file_groups if g.key in state.metadata.replaced)
    victim = f"{replaced.partition}/{replaced.slices[0].base_file.name}"
    meta = read_table_metadata(storage)
    maintenance = prepare_clean_maintenance(storage, meta)
    times = iter(["20990101000000001", "20990101000000002"])
    runner = CleanRunner(
        storage, TimelineWriter(storage, meta.timeline_folder, 2),
        lambda s, paths: [DeleteResult(p, s.delete(p)) for p in paths],
        completion_time=lambda: InstantTime(next(times)), before_complete=maintenance,
    )
    plan = CleanPlan(
        earliest_instant_to_retain=None,
        last_completed_commit_timestamp="",
        policy="KEEP_LATEST_FILE_VERSIONS",
        file_paths_to_delete={replaced.partition: (CleanFileInfo(f"s3://{s3_bucket}/t/{victim}", False),)},
        partitions_to_delete=(),
        extra_metadata={},
        version=2,
    )
    pending = TimelineWriter(storage, meta.timeline_folder, 2).requested(
        InstantTime("20990101000000000"), Action.CLEAN, encode_clean_plan(plan)
    )
    outcome = runner.finish(pending, plan)
    assert outcome.files_deleted == 1
    assert any(".hoodie/metadata/files/.files-0000-0_20990101000000000.log.1_" in w for w in outcome.instants_written)
    after = check_metadata_table(storage, read_table_state(storage))
    assert after.ok, after.to_json()
