"""Marks follow from what a test does: `spark` from the fixtures it uses, `crash` on the kill tests,
so `-m "not spark"` and the fast loop (README, Testing) select what they say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
JOBS = "tests/execute/test_spark_jobs.py"  # every test takes the `spark` fixture; the file has no mark
PLAIN = "tests/test_selection.py"  # no Spark at all
KILLS = "tests/execute/test_crash_recovery.py"
RESIZE = "tests/execute/test_resize.py"  # Spark tests, one of them a kill test


def _collected(marker: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker,
         JOBS, PLAIN, KILLS, RESIZE],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {line.split("[")[0] for line in done.stdout.splitlines() if "::" in line}


@pytest.fixture(scope="module")
def spark_marked() -> set[str]:
    return _collected("spark")


def test_a_test_using_the_spark_fixture_is_marked_spark_without_saying_so(spark_marked: set[str]) -> None:
    assert "pytest.mark.spark" not in (ROOT / JOBS).read_text()
    assert {f"{JOBS}::test_results_come_back_in_item_order_across_many_tasks",
            f"{JOBS}::test_each_thread_sees_only_its_own_jobs"} <= spark_marked
    assert f"{RESIZE}::test_v6_resize_keeps_the_snapshot_and_replaces_the_inputs" in spark_marked


def test_a_test_without_spark_is_not_marked(spark_marked: set[str]) -> None:
    assert "def test_selection_grammar" in (ROOT / PLAIN).read_text()
    assert not any(node.startswith(PLAIN) for node in spark_marked)


def test_the_kill_tests_are_marked_crash() -> None:
    crash = _collected("crash")
    assert f"{RESIZE}::test_a_killed_process_is_finished_by_the_next_run" in crash
    assert f"{KILLS}::test_killed_apply_is_finished_by_the_next_one" in crash
    assert f"{RESIZE}::test_v6_resize_keeps_the_snapshot_and_replaces_the_inputs" not in crash
    assert not any(node.startswith((JOBS, PLAIN)) for node in crash)
