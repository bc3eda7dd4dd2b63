"""The clean-policy registry is complete: every policy has one rule, one planner and one schema entry."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import fields
from datetime import UTC, datetime

import pytest

from runner.declarations.merge import SETTINGS
from runner.declarations.model import CleanPolicy, CleanPolicyName
from runner.declarations.policies import POLICY_RULES, retention_fields
from runner.declarations.schema import load_schema
from runner.plan.policies import PLANNERS, PolicyPlanner, planner_for
from runner.testing.states import StateBuilder


def concrete_planners(base: type[PolicyPlanner] = PolicyPlanner) -> list[type[PolicyPlanner]]:
    found = []
    for sub in base.__subclasses__():
        if not inspect.isabstract(sub):
            found.append(sub)
        found.extend(concrete_planners(sub))
    return found


def test_every_policy_has_exactly_one_planner_class() -> None:
    names = [planner.name for planner in concrete_planners()]
    assert sorted(names) == sorted(CleanPolicyName), names
    assert {name: PLANNERS[name] for name in CleanPolicyName} == {p.name: p for p in concrete_planners()}


def test_every_policy_has_exactly_one_rule_owning_a_distinct_clean_policy_field() -> None:
    assert list(POLICY_RULES) == list(CleanPolicyName)
    assert all(name is rule.name for name, rule in POLICY_RULES.items())
    owned = retention_fields()
    assert len(set(owned)) == len(owned)
    assert set(owned) <= {f.name for f in fields(CleanPolicy)}


def test_the_schema_policy_enums_equal_the_registry() -> None:
    table_clean = load_schema("table.schema.json")["$defs"]["clean"]["properties"]
    assert table_clean["policy"]["enum"] == [str(name) for name in POLICY_RULES]
    enums = list(policy_enums(load_schema("plan.schema.json")))
    assert enums and all(e == [str(name) for name in POLICY_RULES] for e in enums)


def policy_enums(node: object) -> Iterator[list[str]]:
    """Every `policy` property's enum anywhere in a schema."""
    if isinstance(node, dict):
        policy = node.get("properties", {}).get("policy") if isinstance(node.get("properties"), dict) else None
        if isinstance(policy, dict) and "enum" in policy:
            yield policy["enum"]
        for value in node.values():
            yield from policy_enums(value)
    elif isinstance(node, list):
        for value in node:
            yield from policy_enums(value)


def test_the_schema_declares_each_owned_field_with_the_registry_default() -> None:
    clean = load_schema("table.schema.json")["$defs"]["clean"]["properties"]
    assert set(clean) - {"policy", "incremental"} == set(retention_fields())
    for rule in POLICY_RULES.values():
        entry = clean[rule.field]
        assert (entry["type"], entry["minimum"], entry["default"]) == ("integer", 1, rule.default), rule
        assert entry["description"].startswith(f"{rule.name} only:"), entry["description"]


def test_merged_settings_list_every_owned_field_in_registry_order() -> None:
    clean_keys = [key for block, key, _ in SETTINGS if block == "clean"]
    assert clean_keys == ["policy", *retention_fields(), "incremental"]


@pytest.mark.parametrize("name", list(CleanPolicyName))
def test_a_planner_reads_only_its_own_retention_field(name: CleanPolicyName) -> None:
    rule = POLICY_RULES[name]
    clean = CleanPolicy(name, **{rule.field: 7})  # type: ignore[arg-type]
    planner = planner_for(clean)
    assert type(planner) is PLANNERS[name] and planner.retained == 7
    assert "7" in planner.summary()
    meta = StateBuilder().metadata()
    assert planner.earliest_commit_to_retain(meta, now=datetime(2024, 1, 1, tzinfo=UTC)) is None


def test_a_planner_refuses_another_policys_declaration() -> None:
    with pytest.raises(AssertionError):
        PLANNERS[CleanPolicyName.KEEP_LATEST_COMMITS](CleanPolicy(CleanPolicyName.KEEP_LATEST_BY_HOURS))
