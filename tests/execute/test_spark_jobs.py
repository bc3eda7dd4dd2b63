"""`run_tasks`: items travel to Spark tasks as DataFrame rows and come back in item order, with the
executors that ran them collected per context (per table, also across apply threads)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from runner.spark_jobs import executors_seen, run_tasks

# The task must be importable on the Python workers, which do not have this test module: the
# builtin `iter` is the identity task (each item back as its result).
IDENTITY = iter


def test_results_come_back_in_item_order_across_many_tasks(spark) -> None:
    items = list(range(1234))
    with executors_seen() as seen:
        results = run_tasks(spark, items, IDENTITY, per_task=100)
    assert results == items
    assert seen == {"driver"}  # local mode: tasks run in the driver's JVM


def test_each_thread_sees_only_its_own_jobs(spark) -> None:
    def job(n: int) -> set[str]:
        with executors_seen() as seen:
            assert run_tasks(spark, list(range(n)), IDENTITY, per_task=10) == list(range(n))
        return seen

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(job, [30, 50])) == [{"driver"}, {"driver"}]
    assert run_tasks(spark, [], IDENTITY) == []
