"""A resize job starts its largest groups first, so a large group does not run alone at the end
while the other cores idle; a plan read back after a crash keeps the groups' sizes for the same order."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.execute import resize_engine
from runner.execute.resize import ResizeRunner, finish_pending_resize, run_resize
from runner.execute.resize_plan import decode_plan, encode_plan, groups_of_step
from runner.hudi.files import BaseFile
from runner.hudi.state import read_table_metadata
from runner.plan.model import RewriteGroup, SizingStep
from tests.execute.test_resize import clock, plan, snapshot, v6_small  # noqa: F401 - v6_small is a fixture

MIB = 1024 * 1024


def by_size(step: SizingStep) -> SizingStep:
    """`step` with its groups smallest first, the order the job must not keep."""
    groups = sorted(step.groups, key=lambda g: (g.total_bytes, len(g.files)))
    return SizingStep(step.max_file_size, step.small_file_limit, tuple(groups), step.strategy)


def task_of(path: str) -> int:
    """The Spark partition (task), or the driver's group index, that wrote a base file: the first
    part of its write token."""
    base = BaseFile.parse(path.rsplit("/", 1)[-1])
    assert base is not None
    return int(base.write_token.split("-")[0])


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_the_largest_group_is_the_job_s_first_task(engine, v6_small, spark, monkeypatch):  # noqa: F811
    monkeypatch.setattr(resize_engine, "PINNED", engine)
    before = snapshot(v6_small)
    storage, state, planned = plan(v6_small)
    step = by_size(planned)
    sizes = [g.total_bytes for g in step.groups]
    assert len(sizes) >= 2 and sizes[0] < sizes[-1]

    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    assert snapshot(v6_small) == before
    tasks = {task_of(p): p for p in outcome.output_files}
    assert sorted(tasks) == list(range(len(step.groups)))
    largest = step.groups[-1]
    first = tasks[0]
    assert first.split("/")[0] == largest.partition
    # the first task's file holds the largest group's rows (its record count decides it)
    records = {r: n for r, n in zip(outcome.output_files, _records(v6_small, outcome.output_files), strict=True)}
    assert records[first] == max(records.values())


def test_a_plan_read_back_keeps_each_group_s_size_in_whole_mib(v6_small):  # noqa: F811
    _, _, step = plan(v6_small)
    big = RewriteGroup(step.groups[0].partition, tuple(
        type(f)(f.file_id, f.path, 3 * MIB + 5) for f in step.groups[0].files))
    step = SizingStep(step.max_file_size, step.small_file_limit, (big, *step.groups[1:]), step.strategy)

    decoded = decode_plan(encode_plan(step, base_uri="file:/t"), path="p")

    assert [g.input_bytes for g in groups_of_step(step)] == [sum(f.size for f in g.files) for g in step.groups]
    # Hudi's TOTAL_IO_READ_MB is whole MiB: the small groups read back as unknown (0)
    assert decoded[0].input_bytes == (3 * MIB + 5) * len(big.files) // MIB * MIB
    assert all(g.input_bytes == 0 for g in decoded[1:])


def test_an_interrupted_resize_finishes_largest_first_too(v6_small, spark):  # noqa: F811
    before = snapshot(v6_small)
    storage, state, planned = plan(v6_small)
    step = by_size(planned)
    runner = ResizeRunner(storage, state.metadata, spark=spark, clock=clock)
    runner.schedule(step)

    outcome = finish_pending_resize(storage, read_table_metadata(storage), spark=spark, clock=clock)

    assert outcome is not None and snapshot(v6_small) == before
    records = dict(zip(outcome.output_files, _records(v6_small, outcome.output_files), strict=True))
    first = next(p for p in outcome.output_files if task_of(p) == 0)
    assert records[first] == max(records.values())


def _records(base: Path, paths: tuple[str, ...]) -> list[int]:
    import pyarrow.parquet as pq

    return [pq.ParquetFile(base / p).metadata.num_rows for p in paths]
