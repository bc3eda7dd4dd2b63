"""What a declaration needs to know about each clean policy: its name and the retention field it owns.

This is the declaration half of the clean-policy registry; the planning half (earliest commit to
retain, scope, slices to delete) is `runner.plan.policies`, one class per policy, keyed by the same
`CleanPolicyName`. Declarations may not import planning or the Hudi model, hence two halves.

Adding a policy: a `CleanPolicyName` value, its retention field on `CleanPolicy` (whose default is
Hudi's), one `PolicyRule` below, the enum value and the field in `schemas/table.schema.json`, and
one planner class in `runner.plan.policies`. Tests check that all of these agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from runner.declarations.model import CleanPolicy, CleanPolicyName


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One clean policy as the declarations see it.

    Args:
        name: the policy, as `clean.policy` spells it.
        field: the one `clean.<field>` retention setting this policy reads; a table may set it
            only when this is its policy (`runner.declarations.rules.policy_problems`).
    """

    name: CleanPolicyName
    field: str

    def retained(self, clean: CleanPolicy) -> int:
        """The declared value of this policy's retention field."""
        value = getattr(clean, self.field)
        assert isinstance(value, int)
        return value

    @property
    def default(self) -> int:
        """Hudi's default for the retention field, as `CleanPolicy` declares it."""
        return self.retained(CleanPolicy())


POLICY_RULES: Mapping[CleanPolicyName, PolicyRule] = {
    rule.name: rule
    for rule in (
        PolicyRule(CleanPolicyName.KEEP_LATEST_COMMITS, "commits_retained"),
        PolicyRule(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, "file_versions_retained"),
        PolicyRule(CleanPolicyName.KEEP_LATEST_BY_HOURS, "hours_retained"),
    )
}


def rule_for(name: CleanPolicyName) -> PolicyRule:
    return POLICY_RULES[name]


def retention_fields() -> tuple[str, ...]:
    """Every policy's retention field, in registry order (the order `runner ls` shows them)."""
    return tuple(rule.field for rule in POLICY_RULES.values())

