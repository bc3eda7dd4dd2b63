"""Every file in a clean plan carries its reason; files kept by a savepoint or compaction are listed."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from runner.declarations.model import CleanPolicy, CleanPolicyName
from runner.plan.clean import clean_scope, plan_clean
from runner.plan.model import CleanStep, Plan, TablePlan, TableStatus
from runner.plan.reasons import explain_clean
from runner.testing.states import StateBuilder, t
from tests.plan.test_clean_rules import NOW, commits, history, versions


def explained(policy: CleanPolicy, b: StateBuilder, now: datetime = NOW) -> CleanStep:
    state = b.state()
    scope = clean_scope(policy, state.metadata, now=now)
    return explain_clean(policy, state, scope, plan_clean(policy, state, scope))


def reasons(step: CleanStep) -> dict[str, str]:
    return {f.path: f.reason for f in step.files_to_delete}


def test_versions_policy_names_the_version_number():
    b = history(4)
    step = explained(versions(2), b)
    assert reasons(step) == {f"p/{b.name(2, 'a')}": "version 3 of 2 retained",
                             f"p/{b.name(1, 'a')}": "version 4 of 2 retained"}
    assert step.why == "keep 2 versions of every file group"


def test_commits_policy_names_the_earliest_commit_to_retain():
    b = history(5)
    step = explained(commits(2), b)
    assert reasons(step) == {f"p/{b.name(n, 'a')}": f"older than the earliest commit to retain {t(4)}"
                             for n in (1, 2)}
    assert step.why == f"keep the latest 2 commits, earliest commit to retain {t(4)}"


def test_replaced_groups_name_the_replacing_instant_and_clustering():
    b = history(2, groups=("a", "b"))
    b.replace(3, {"p": ["b"]}, {"p": ["c"]})
    b.commit(4, {"p": ["a"]})
    b.commit(5, {"p": ["a"]})
    assert reasons(explained(commits(1), b))[f"p/{b.name(1, 'b')}"] == f"replaced by insert_overwrite {t(3)}"
    b.commits[t(3)] = dataclasses.replace(b.commits[t(3)], operation_type="CLUSTER")
    assert reasons(explained(commits(1), b))[f"p/{b.name(2, 'b')}"] == f"replaced by clustering {t(3)}"


def test_log_files_say_they_belong_to_a_cleaned_slice():
    b = history(3)
    b.delta_commit(4, {"p": [("a", 1)]})
    b.commit(5, {"p": ["a"]})
    logs = {p: r for p, r in reasons(explained(commits(1), b)).items() if ".log." in p}
    assert logs and all(r.startswith("log file of a cleaned slice (older than the earliest commit to retain")
                        for r in logs.values())


def test_savepointed_files_are_listed_as_kept_with_the_savepoint():
    b = history(5)
    b.savepoint(1, {"p": [b.name(1, "a")]})
    step = explained(commits(2), b)
    assert [(f.path, f.reason) for f in step.kept] == [(f"p/{b.name(1, 'a')}", f"kept for savepoint {t(1)}")]
    assert [f.path for f in step.files_to_delete] == [f"p/{b.name(2, 'a')}"]
    assert step.why.endswith("; 1 file kept for savepoints or pending compactions")


def test_files_a_pending_compaction_needs_are_listed_as_kept():
    b = history(5)
    b.pending_compaction(6, {("p", "a"): 2})
    step = explained(commits(1), b)
    kept = {f.path: f.reason for f in step.kept}
    # ECTR t(5): the bare policy deletes t(1)..t(3); the compaction based on t(2) needs t(2) and t(3)
    assert kept == {f"p/{b.name(n, 'a')}": f"kept for pending compaction {t(6)}" for n in (2, 3)}
    assert [f.path for f in step.files_to_delete] == [f"p/{b.name(1, 'a')}"]


def test_in_sync_tables_say_why():
    few = history(2)
    assert (
        explained(commits(3), few).why == "keep the latest 3 commits: 2 completed commits, not more than the 3 retained"
    )
    hours = CleanPolicy(CleanPolicyName.KEEP_LATEST_BY_HOURS, hours_retained=24)
    late = datetime(2024, 1, 3, tzinfo=UTC)  # every commit is more than 24 h old
    assert explained(hours, history(3), late).why == (
        "keep 24 h of history: no commit inside the 24 h window yet, so every version may still be read"
    )
    assert (
        explained(versions(3), history(3)).why
        == "keep 3 versions of every file group: no file group has more than 3 versions"
    )


def test_reasons_and_kept_files_survive_the_json_round_trip():
    b = history(5)
    b.savepoint(1, {"p": [b.name(1, "a")]})
    step = explained(commits(2), b)
    plan = Plan("g", "n", (TablePlan("t", "/t", TableStatus.CHANGES, steps=(step,)),))
    again = Plan.from_json(plan.to_json())
    assert again.tables[0].clean == step
    assert again.to_json() == plan.to_json()


def test_apply_s_unexplained_plan_deletes_exactly_what_the_explained_plan_deletes():
    """`plan_table(explain=False)` (apply's plan under the lock) skips only the reasons."""
    from runner.declarations.model import FileSizing, TableDeclaration
    from runner.plan.build import plan_table

    b = history(4, groups=("a", "b"))
    b.savepoint(2, {"p": [b.name(2, "a")]})
    state = b.state()
    for policy in (versions(1), commits(1)):
        decl = TableDeclaration(name="t", path="/t", source_file="tables/t.yml", clean=policy,
                                file_sizing=FileSizing(small_file_limit=0))
        scope = clean_scope(policy, state.metadata, now=NOW)
        explained_plan = plan_table(decl, state, scope)
        bare = plan_table(decl, state, scope, explain=False)
        assert explained_plan.clean is not None and bare.clean is not None
        assert explained_plan.clean.files_to_delete, policy
        assert [(f.path, f.size) for f in bare.clean.files_to_delete] == \
            [(f.path, f.size) for f in explained_plan.clean.files_to_delete]
        assert all(f.reason for f in explained_plan.clean.files_to_delete)
        assert explained_plan.clean.kept and not bare.clean.kept  # the savepoint's file, only explained
        assert explained_plan.with_steps(bare.clean) == bare
