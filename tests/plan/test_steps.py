"""Every step kind has its planner, handler, renderer and JSON form, and the JSON round-trips."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from runner.commands.render import STEP_RENDERERS, render_plan
from runner.declarations.model import CleanPolicyName
from runner.execute.apply import HANDLERS
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.plan.build import PLANNERS
from runner.plan.model import Plan, PlanProject, Requirements, TablePlan, TableStatus
from runner.plan.steps import (
    STEP_ORDER,
    Clean,
    DisableMetadataTable,
    FileKept,
    FileToDelete,
    FileToRewrite,
    FinishPendingClean,
    FinishPendingResize,
    Resize,
    RewriteGroup,
    StepKind,
    UpdateMetadataTable,
)

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "plan.schema.json").read_text())

EVERY_STEP = (
    DisableMetadataTable(("files", "column_stats")),
    UpdateMetadataTable(("files",), refusals=("the metadata table is behind",)),
    FinishPendingClean(("20240101000001000",)),
    Clean(CleanPolicyName.KEEP_LATEST_COMMITS,
          Instant(InstantTime("20240101000005000"), Action.COMMIT, State.COMPLETED),
          "20240101000009000", (FileToDelete("p", "p/a.parquet", 10, "older"),), ("q",), ("20240101000002000",),
          "full listing", (FileKept("p", "p/k.parquet", 3, "kept for savepoint 20240101000002000"),), "why"),
    FinishPendingResize(("20240101000003000",)),
    Resize(1000, 500, (RewriteGroup("p", (FileToRewrite("f1", "p/f1.parquet", 100),)),)),
)


def test_every_step_kind_has_one_of_each_part():
    assert [s.kind for s in EVERY_STEP] == list(STEP_ORDER) == list(StepKind)
    assert set(HANDLERS) == set(StepKind) == set(STEP_RENDERERS)
    # One planner decides both metadata-table kinds (keep or disable), so that decision is made once.
    assert set(PLANNERS) == set(StepKind) - {StepKind.DISABLE_METADATA_TABLE}


def test_every_step_round_trips_through_json_that_matches_the_schema():
    table = TablePlan("t", "/t", TableStatus.CHANGES, requirements=Requirements("abc"), steps=EVERY_STEP,
                      declaration_fingerprint="f")
    plan = Plan("2024-01-01T00:00:00+00:00", "20240101000010000", (table,), PlanProject("p", "/p"))
    data = json.loads(json.dumps(plan.to_json()))
    jsonschema.validate(data, SCHEMA)
    assert data["format_version"] == 2
    assert Plan.from_json(data) == plan


def test_every_step_is_rendered_in_the_order_apply_runs_it():
    table = TablePlan("t", "/t", TableStatus.CHANGES, steps=EVERY_STEP)
    text = render_plan(Plan("g", "20240101000010000", (table,)), "p")
    markers = ["indexes lost: files, column_stats", "apply will refuse", "finish pending clean 20240101000001000",
               "clean (KEEP_LATEST_COMMITS)", "finish the interrupted resize (clustering 20240101000003000)",
               "resize: 1 small file"]
    positions = [text.index(m) for m in markers]
    assert positions == sorted(positions)


def test_a_step_kind_listed_twice_is_refused_by_the_decoder():
    data = Plan("g", "20240101000010000", (TablePlan("t", "/t", TableStatus.CHANGES, steps=EVERY_STEP[2:3]),)).to_json()
    data["tables"][0]["steps"] *= 2
    from runner.errors import PlanError

    with pytest.raises(PlanError, match="lists a step kind twice"):
        Plan.from_json(data)


def test_an_unknown_step_kind_is_a_schema_error():
    data = Plan("g", "20240101000010000", (TablePlan("t", "/t", TableStatus.CHANGES),)).to_json()
    data["tables"][0]["steps"] = [{"kind": "compact"}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA)
