"""One answer to "does this table have a metadata table": the folder, or the partitions hoodie.properties lists."""

from __future__ import annotations

from dataclasses import replace

import pytest

from runner.hudi.properties import TableConfig
from runner.testing.states import StateBuilder


@pytest.mark.parametrize(("folder", "partitions", "enabled"), [
    (False, "", False),
    (True, "", True),            # a folder Hudi left behind still holds a metadata table a reader may use
    (False, "files", True),      # HoodieTableConfig.isMetadataTableAvailable reads only this property
    (True, "files,column_stats", True),
])
def test_metadata_table_enabled(folder: bool, partitions: str, enabled: bool) -> None:
    meta = StateBuilder().metadata()
    config = TableConfig.from_properties({**meta.config.raw, "hoodie.table.metadata.partitions": partitions}, path="p")
    assert replace(meta, has_metadata_table=folder, config=config).metadata_table_enabled is enabled
