"""The metadata-table decision is made once, by its planner: keep, refuse or disable, or nothing."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from runner.declarations.model import CleanPolicy, CleanPolicyName, MetadataTableMode, TableDeclaration
from runner.hudi.state import TableState
from runner.plan.build import plan_table
from runner.plan.clean import clean_scope
from runner.plan.model import TableStatus
from runner.plan.steps import DisableMetadataTable, StepKind, UpdateMetadataTable
from runner.testing import StateBuilder

NOW = datetime(2024, 1, 2, tzinfo=UTC)
KEEP_ONE = CleanPolicy(policy=CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)


def _state(*, versions: int, has_mdt: bool = True) -> TableState:
    b = StateBuilder()
    for n in range(1, versions + 1):
        b.commit(n, {"p": ["a"]})
    state = b.state()
    # A table without a metadata table has neither the folder nor partitions in hoodie.properties.
    partitions = ("files", "column_stats", "record_index") if has_mdt else ()
    config = dataclasses.replace(state.metadata.config, metadata_partitions=partitions)
    meta = dataclasses.replace(state.metadata, has_metadata_table=has_mdt, config=config)
    return dataclasses.replace(state, metadata=meta)


def _plan(state: TableState, mode: MetadataTableMode, refusals: tuple[str, ...] = ()):
    decl = TableDeclaration(name="t", path="/t", source_file="tables/t.yml", clean=KEEP_ONE, metadata_table=mode)
    return plan_table(decl, state, clean_scope(KEEP_ONE, state.metadata, now=NOW), refusals)


def test_keep_names_the_metadata_partitions_a_clean_updates():
    plan = _plan(_state(versions=2), MetadataTableMode.KEEP)
    assert plan.step(StepKind.UPDATE_METADATA_TABLE) == UpdateMetadataTable(("files", "column_stats"))
    assert plan.step(StepKind.DISABLE_METADATA_TABLE) is None
    assert [s.kind for s in plan.steps] == [StepKind.UPDATE_METADATA_TABLE, StepKind.CLEAN]


def test_keep_with_refusals_carries_them_for_apply_to_refuse():
    plan = _plan(_state(versions=2), MetadataTableMode.KEEP, ("behind the data table",))
    assert plan.step(StepKind.UPDATE_METADATA_TABLE) == UpdateMetadataTable(
        ("files", "column_stats"), refusals=("behind the data table",))
    assert plan.status is TableStatus.CHANGES


def test_disable_names_the_indexes_it_loses():
    plan = _plan(_state(versions=2), MetadataTableMode.DISABLE)
    assert plan.step(StepKind.DISABLE_METADATA_TABLE) == DisableMetadataTable(("files", "column_stats", "record_index"))
    assert plan.step(StepKind.UPDATE_METADATA_TABLE) is None


def test_no_metadata_step_without_other_work_or_without_a_metadata_table():
    in_sync = _plan(_state(versions=1), MetadataTableMode.DISABLE)
    assert in_sync.status is TableStatus.IN_SYNC and not in_sync.has_work
    assert {s.kind for s in in_sync.steps} == {StepKind.CLEAN}  # empty: it says why nothing is deleted
    without = _plan(_state(versions=2, has_mdt=False), MetadataTableMode.KEEP)
    assert [s.kind for s in without.steps] == [StepKind.CLEAN]
