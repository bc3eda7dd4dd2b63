"""A saved plan only narrows the fresh plan: every forgeable field is either refused or replaced.

These are pure checks of `runner.execute.narrow` on plan values; the end-to-end attacks through
`runner apply` are in test_forged_plans.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from runner.declarations.model import CleanPolicyName
from runner.errors import RefusedError
from runner.execute.narrow import NARROWED_NOTE, narrow
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.plan.model import (
    CleanStep,
    FileToDelete,
    FileToRewrite,
    RewriteGroup,
    SizingStep,
    TablePlan,
    TableStatus,
)
from runner.plan.steps import StepKind

ECTR = Instant(InstantTime("20240101000005000"), Action.COMMIT, State.COMPLETED)


def _fresh() -> TablePlan:
    clean = CleanStep(
        policy=CleanPolicyName.KEEP_LATEST_COMMITS,
        earliest_commit_to_retain=ECTR,
        last_completed_commit="20240101000009000",
        files_to_delete=(FileToDelete("p", "p/a_0-1-2_20240101000001000.parquet", 100),
                         FileToDelete("p", "p/b_0-1-2_20240101000001000.parquet", 200)),
        partitions_to_delete=("q",),
        savepointed_timestamps=("20240101000002000",),
    )
    sizing = SizingStep(1000, 500, (
        RewriteGroup("p", (FileToRewrite("c", "p/c_0-1-2_20240101000003000.parquet", 10),
                           FileToRewrite("d", "p/d_0-1-2_20240101000003000.parquet", 20))),
        RewriteGroup("p", (FileToRewrite("e", "p/e_0-1-2_20240101000003000.parquet", 30),
                           FileToRewrite("f", "p/f_0-1-2_20240101000003000.parquet", 40))),
    ))
    return TablePlan("t", "/t", TableStatus.CHANGES, steps=(clean, sizing))


def _gone(_: str) -> bool:
    return False


def _exists(_: str) -> bool:
    return True


def test_an_unedited_plan_is_the_fresh_plan():
    fresh = _fresh()
    assert narrow(fresh, fresh, exists=_exists) == fresh


def test_forged_recorded_values_are_replaced_by_the_fresh_ones():
    fresh = _fresh()
    assert fresh.clean is not None and fresh.sizing is not None
    forged_clean = replace(
        fresh.clean,
        policy=CleanPolicyName.KEEP_LATEST_FILE_VERSIONS,
        earliest_commit_to_retain=Instant(InstantTime("20991231000000000"), Action.COMMIT, State.COMPLETED),
        last_completed_commit="20991231000000000",
        savepointed_timestamps=(),
        files_to_delete=tuple(replace(f, size=10**12, partition="elsewhere") for f in fresh.clean.files_to_delete),
    )
    forged_sizing = replace(fresh.sizing, max_file_size=10**15, small_file_limit=10**14, groups=tuple(
        RewriteGroup("elsewhere", tuple(replace(f, size=1, file_id="forged") for f in g.files))
        for g in fresh.sizing.groups))
    result = narrow(fresh.with_steps(forged_clean, forged_sizing), fresh, exists=_exists)
    assert result.clean == fresh.clean
    assert result.sizing == fresh.sizing


def test_spellings_of_the_same_path_are_normalised_before_matching():
    fresh = _fresh()
    assert fresh.clean is not None
    spelled = tuple(replace(f, path="./" + f.path.replace("/", "//")) for f in fresh.clean.files_to_delete)
    result = narrow(fresh.with_steps(replace(fresh.clean, files_to_delete=spelled)), fresh, exists=_exists)
    assert result.clean == fresh.clean


@pytest.mark.parametrize("spelling", ["{p}", "./{p}", "p//{n}", "p/./{n}"])
def test_a_file_listed_twice_in_any_spelling_is_refused(spelling):
    fresh = _fresh()
    assert fresh.clean is not None
    first = fresh.clean.files_to_delete[0]
    twice = replace(first, path=spelling.format(p=first.path, n=first.path.split("/")[1]))
    saved = fresh.with_steps(replace(fresh.clean, files_to_delete=(*fresh.clean.files_to_delete, twice)))
    with pytest.raises(RefusedError, match="twice"):
        narrow(saved, fresh, exists=_exists)


def test_a_partition_listed_twice_is_refused():
    fresh = _fresh()
    assert fresh.clean is not None
    saved = fresh.with_steps(replace(fresh.clean, partitions_to_delete=("q", "./q")))
    with pytest.raises(RefusedError, match="twice"):
        narrow(saved, fresh, exists=_exists)


def test_a_resize_input_listed_twice_in_one_group_is_refused():
    fresh = _fresh()
    assert fresh.sizing is not None
    g = fresh.sizing.groups[0]
    saved = fresh.with_steps(replace(fresh.sizing, groups=(replace(g, files=g.files + g.files[:1]),)))
    with pytest.raises(RefusedError, match="twice"):
        narrow(saved, fresh, exists=_exists)


def test_a_resize_input_listed_in_two_groups_is_refused():
    fresh = _fresh()
    assert fresh.sizing is not None
    g0, g1 = fresh.sizing.groups
    saved = fresh.with_steps(replace(fresh.sizing, groups=(g0, replace(g1, files=g1.files + g0.files[:1]))))
    with pytest.raises(RefusedError, match="twice"):
        narrow(saved, fresh, exists=_exists)


def test_an_empty_resize_group_is_refused():
    fresh = _fresh()
    assert fresh.sizing is not None
    saved = fresh.with_steps(replace(fresh.sizing, groups=(*fresh.sizing.groups, RewriteGroup("p", ()))))
    with pytest.raises(RefusedError, match="empty"):
        narrow(saved, fresh, exists=_exists)


def test_regrouping_files_the_fresh_plan_packs_apart_is_refused():
    fresh = _fresh()
    assert fresh.sizing is not None
    g0, g1 = fresh.sizing.groups
    saved = fresh.with_steps(replace(fresh.sizing, groups=(RewriteGroup("p", g0.files + g1.files),)))
    with pytest.raises(RefusedError, match="different"):
        narrow(saved, fresh, exists=_exists)


def test_a_file_the_fresh_plan_would_not_rewrite_is_refused():
    fresh = _fresh()
    assert fresh.sizing is not None
    extra = FileToRewrite("z", "p/z_0-1-2_20240101000003000.parquet", 1)
    g0 = fresh.sizing.groups[0]
    saved = fresh.with_steps(replace(fresh.sizing, groups=(replace(g0, files=(*g0.files, extra)),)))
    with pytest.raises(RefusedError, match="would not rewrite"):
        narrow(saved, fresh, exists=_exists)
    with pytest.raises(RefusedError, match="would not rewrite"):
        narrow(fresh, fresh.with_steps(without=(StepKind.RESIZE,)), exists=_exists)


def test_a_partition_the_fresh_plan_keeps_is_refused():
    fresh = _fresh()
    assert fresh.clean is not None
    saved = fresh.with_steps(replace(fresh.clean, partitions_to_delete=("q", "p")))
    with pytest.raises(RefusedError, match="p/"):
        narrow(saved, fresh, exists=_exists)


def test_files_already_gone_are_dropped_not_refused():
    fresh = _fresh()
    assert fresh.clean is not None
    done = FileToDelete("p", "p/old_0-1-2_20240101000000000.parquet", 5)
    saved = fresh.with_steps(replace(fresh.clean, files_to_delete=(*fresh.clean.files_to_delete, done)))
    assert narrow(saved, fresh, exists=_gone).clean == fresh.clean


def test_a_narrower_selection_is_recorded_as_narrowed_with_the_fresh_bound():
    """The fresh bound, not one before the timeline: Hudi lets a user savepoint any commit at or after
    it, and a lower one would let through savepoints of commits whose files the clean deleted
    (tests/safety/test_savepoint_window.py). The next clean lists every partition (`narrowed`)."""
    fresh = _fresh()
    assert fresh.clean is not None and fresh.sizing is not None
    saved = fresh.with_steps(replace(fresh.clean, files_to_delete=fresh.clean.files_to_delete[:1]),
                    replace(fresh.sizing, groups=fresh.sizing.groups[:1]))
    result = narrow(saved, fresh, exists=_exists)
    assert result.clean is not None and result.sizing is not None
    assert result.clean.files_to_delete == fresh.clean.files_to_delete[:1]
    assert result.clean.earliest_commit_to_retain == ECTR and result.clean.narrowed
    assert not fresh.clean.narrowed and narrow(fresh, fresh, exists=_exists).clean == fresh.clean
    assert result.clean.policy is fresh.clean.policy
    assert result.clean.savepointed_timestamps == fresh.clean.savepointed_timestamps
    assert result.sizing.groups == fresh.sizing.groups[:1]
    assert NARROWED_NOTE in result.notes


def test_a_narrower_selection_keeping_a_replaced_group_is_bounded_by_its_replacecommit():
    """Hudi's archiver would drop a replacecommit before the recorded bound, so the bound goes back to
    the first one whose group the reviewer kept, and what a savepoint from there on reads stays."""
    fresh = _fresh()
    assert fresh.clean is not None
    replacecommit = InstantTime("20240101000003000")
    kept, deleted = fresh.clean.files_to_delete
    assert kept.path.startswith("p/a_")  # of group a, which the replacecommit replaced: the reviewer keeps it
    saved = fresh.with_steps(replace(fresh.clean, files_to_delete=(deleted,), partitions_to_delete=()))
    asked: list[tuple[InstantTime, frozenset[str]]] = []

    def reads(bound: InstantTime, partitions: object) -> frozenset[str]:
        asked.append((bound, frozenset(partitions)))  # type: ignore[arg-type]
        return frozenset()

    result = narrow(saved, fresh, exists=_exists, replaced={("p", "a"): replacecommit}, savepoint_reads=reads)

    assert result.clean is not None and result.clean.files_to_delete == (deleted,) and result.clean.narrowed
    assert result.clean.earliest_commit_to_retain == Instant(replacecommit, Action.REPLACE_COMMIT, State.COMPLETED)
    assert asked == [(replacecommit, frozenset({"p"}))]
    held = narrow(saved, fresh, exists=_exists, replaced={("p", "a"): replacecommit},
                  savepoint_reads=lambda bound, partitions: {deleted.path})
    assert held.clean is None  # a savepoint from the bound on reads the one file left: nothing is deleted


@pytest.mark.parametrize("path", [
    ".hoodie/hoodie.properties", "./.hoodie/.aux/a_0-1-2_20240101000001000.parquet",
    "p/../.hoodie/a_0-1-2_20240101000001000.parquet", "/etc/a_0-1-2_20240101000001000.parquet",
    "file:/t/p/a_0-1-2_20240101000001000.parquet", "p\\a_0-1-2_20240101000001000.parquet",
    "../outside/a_0-1-2_20240101000001000.parquet",
])
def test_paths_are_normalised_then_checked(path):
    fresh = _fresh()
    assert fresh.clean is not None
    saved = fresh.with_steps(replace(fresh.clean, files_to_delete=(FileToDelete("p", path, 1),)))
    with pytest.raises(RefusedError):
        narrow(saved, fresh, exists=_exists)
