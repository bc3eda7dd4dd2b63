"""The file-system view agrees with the independent `hudi` reader on all 47 real fixtures,
and reads the same model through S3 as from local disk."""

from __future__ import annotations

import pytest

from runner.hudi.state import read_table_state
from runner.storage import storage_for
from tests.conftest import extract_fixture, fixture_id, fixture_zips
from tests.s3 import upload_tree

ZIPS = fixture_zips()


def latest_slices(state):
    return {
        (g.partition, g.file_id, g.latest.base_file.name if g.latest.base_file else None,
         tuple(sorted(log.name for log in g.latest.log_files)))
        for g in state.active_groups
        if g.latest
    }


def oracle_slices(base):
    from hudi import HudiTable

    return {
        (s.partition_path, s.file_id, s.base_file_name or None, tuple(sorted(s.log_file_names)))
        for s in HudiTable(str(base)).get_file_slices()
    }


def test_there_are_47_fixtures():
    assert len(ZIPS) == 47


@pytest.mark.parametrize("zip_path", ZIPS, ids=fixture_id)
def test_latest_slices_match_the_hudi_reader(zip_path, tmp_path):
    base = extract_fixture(zip_path, tmp_path)
    state = read_table_state(storage_for(str(base)))
    assert latest_slices(state) == oracle_slices(base)
    assert state.config.version in (6, 8, 9)


@pytest.mark.s3
@pytest.mark.parametrize("name", [
    "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
    "sample_table/cow/v9_txns_simple_nometa",
])
def test_object_store_reads_the_same_model(name, hudi_fixture, s3_server, s3_bucket):
    base = hudi_fixture(name)
    upload_tree(base, s3_bucket, "warehouse/t", s3_server)
    local = read_table_state(storage_for(str(base)))
    remote = read_table_state(storage_for(f"s3://{s3_bucket}/warehouse/t", options=s3_server.options()))
    assert remote.file_groups == local.file_groups
    assert remote.metadata.timeline == local.metadata.timeline
    assert dict(remote.metadata.commits) == dict(local.metadata.commits)
    assert remote.partitions == local.partitions
