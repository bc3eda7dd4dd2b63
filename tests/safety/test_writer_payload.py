"""`runner.write` into a table whose records Hudi merges by another payload than the writer's.

The writer merges as Hudi 0.14's default payload, `OverwriteWithLatestAvroPayload`: an arriving
record replaces the stored one whatever their ordering values. A table created with another payload
records it in `hoodie.properties` (`hoodie.compaction.payload.class`), and its writers and readers
merge by it: `DefaultHoodieRecordPayload` keeps a stored record whose ordering value is greater (a
late event must not overwrite a newer one), `AWSDmsAvroPayload` deletes a record that arrives with
`Op = 'D'`, partial-update payloads keep the stored values of null fields. Merged the writer's way,
such a table loses the newer records, or keeps the deleted ones.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import runner
from runner.errors import RefusedError
from runner.testing.tables import TableBuilder
from tests.safety.conftest import SIZED, digest, project_for

DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"


def _table_with(root: Path, properties: str) -> tuple[TableBuilder, Path]:
    table = root / "t"
    builder = TableBuilder(table, name="t", partitions=["p=a"])
    builder.commit(writes=1)
    (table / ".hoodie" / "hoodie.properties").open("a").write(properties)
    return builder, project_for(table, root / "project", sizing=SIZED)


def _late_update(builder: TableBuilder) -> pa.Table:
    """An update of a stored record with a smaller ordering value (`ts`) than the stored one."""
    rows = builder.expected_rows()
    rows = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    stored = rows.to_pylist()[0]
    return pa.Table.from_pylist([{**stored, "ts": stored["ts"] - 1, "note": "late"}], schema=rows.schema)


@pytest.mark.parametrize("properties", [
    f"hoodie.compaction.payload.class={DEFAULT_PAYLOAD}\n",
    "hoodie.compaction.payload.class=org.apache.hudi.common.model.AWSDmsAvroPayload\n",
    f"hoodie.datasource.write.payload.class={DEFAULT_PAYLOAD}\n",
    "hoodie.compaction.record.merger.strategy=00000000-0000-0000-0000-000000000001\n",
], ids=["default-payload", "dms-payload", "write-payload-key", "record-merger"])
@pytest.mark.parametrize("operation", ["upsert", "insert", "bulk_insert"])
def test_runner_write_refuses_a_table_that_merges_by_another_payload(properties, operation, tmp_path):
    builder, root = _table_with(tmp_path, properties)
    table = Path(builder.path)
    before = digest(table)
    key = properties.split("=", 1)[0]

    with pytest.raises(RefusedError) as refused:
        runner.write(_late_update(builder), "t", operation=operation, project_dir=str(root))

    assert key in refused.value.message and "OverwriteWithLatestAvroPayload" in refused.value.message
    assert digest(table) == before


@pytest.mark.parametrize("properties", [
    "",
    "hoodie.compaction.payload.class=org.apache.hudi.common.model.OverwriteWithLatestAvroPayload\n"
    "hoodie.compaction.record.merger.strategy=eeb8d96f-b1e4-49fd-bbf8-28ac514178e5\n",
], ids=["unset", "hudi-defaults-recorded"])
def test_the_writer_s_own_payload_still_writes(properties, tmp_path):
    """What Hudi 0.14/0.15 record for a table of the default payload (fixture v6_trips_8i1u)."""
    builder, root = _table_with(tmp_path, properties)

    result = runner.write(_late_update(builder), "t", operation="upsert", project_dir=str(root))

    assert result.num_updates == 1


@pytest.mark.parametrize("operation", ["upsert", "insert", "bulk_insert"])
def test_runner_write_refuses_a_table_that_logs_changes_for_cdc_queries(operation, tmp_path):
    """`hoodie.table.cdc.enabled=true`: Hudi's writers add a `.cdc` log of each write's changes (and
    `cdcStats` to its write stats), which CDC queries read; the writer writes none, so a CDC query
    over its commit would miss or fail on the changes."""
    builder, root = _table_with(tmp_path, "hoodie.table.cdc.enabled=true\n")
    table = Path(builder.path)
    before = digest(table)

    with pytest.raises(RefusedError) as refused:
        runner.write(_late_update(builder), "t", operation=operation, project_dir=str(root))

    assert "hoodie.table.cdc.enabled" in refused.value.message
    assert digest(table) == before
