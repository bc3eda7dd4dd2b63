"""The service layer: the Python API that `runner plan` and `runner apply` are thin shells around.

Schedulers (Airflow, Dagster) call these directly (see the README, "Calling the runner from
Python"):

- `plan_tables(project, tables=None, *, now=None) -> Plan`: read-only.
- `apply_tables(project, tables=None, *, plan=None, ...) -> RunReport`: applies a reviewed plan, or
  plans and applies under each table's lock; writes `target/run_results.json`.
- `load_plan(path) -> Plan`: a saved plan, validated against `schemas/plan.schema.json`.

Commands keep only argument parsing, rendering and exit codes; the per-table loop, threads, the
choice of delete engine and the run report live here.
"""

from __future__ import annotations

from runner.execute.apply import TableResult
from runner.plan.model import Plan, TablePlan, TableStatus
from runner.service.apply import Progress, Silent, apply_tables, check_provenance
from runner.service.plan import load_plan, plan_tables
from runner.service.report import RUN_RESULTS, RunReport

__all__ = [
    "RUN_RESULTS", "Plan", "Progress", "RunReport", "Silent", "TablePlan", "TableResult", "TableStatus",
    "apply_tables", "check_provenance", "load_plan", "plan_tables",
]
