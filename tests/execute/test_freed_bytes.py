"""Sizes where they are needed: apply's own plan lists a table without a `stat` per file, the
deletes report the bytes they really free, and a plan someone reads still shows every size."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

import runner.storage.local as local
from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table
from runner.execute.clean import CleanRunner
from runner.execute.deleter import Deleter
from runner.hudi.state import read_table_metadata, read_timeline
from runner.hudi.timeline_writer import TimelineWriter, new_instant_time
from runner.planner import plan_one
from runner.storage import LocalStorage, storage_for
from runner.testing import TableBuilder
from tests.s3 import S3Server, upload_tree

NOW = datetime(2026, 11, 22, tzinfo=UTC)
KEEP_ONE = CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)


def _table(path: Path, *, sizing: FileSizing | None = None) -> TableDeclaration:
    builder = TableBuilder(path, name="t", partitions=["p=1", "p=2"], tiny=True)
    builder.commit(writes=3)
    builder.commit(updates=3)
    builder.commit(updates=3)
    return TableDeclaration(name="t", path=str(path), source_file="tables/t.yml", clean=KEEP_ONE,
                            file_sizing=sizing or FileSizing(small_file_limit=0),
                            file_sizing_declared=sizing is not None)


def _counting_stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names the local listing asks the file system about, one `stat` each."""
    asked: list[str] = []
    real = local._stat_files

    def counting(fd: int, full: str, names: list[str]) -> list[tuple[str, os.stat_result]]:
        asked.extend(names)
        return real(fd, full, names)

    monkeypatch.setattr(local, "_stat_files", counting)
    return asked


def test_a_plan_without_sizes_is_the_same_plan_with_sizes_unmeasured(tmp_path: Path) -> None:
    decl = _table(tmp_path / "t")
    storage = LocalStorage(decl.path)

    shown = plan_one(decl, storage, now=NOW)
    applied = plan_one(decl, storage, now=NOW, sizes=False)

    assert shown.clean is not None and applied.clean is not None
    assert [(f.partition, f.path, f.reason) for f in applied.clean.files_to_delete] == [
        (f.partition, f.path, f.reason) for f in shown.clean.files_to_delete]
    assert applied.clean.earliest_commit_to_retain == shown.clean.earliest_commit_to_retain
    assert applied.clean.partitions_to_delete == shown.clean.partitions_to_delete
    # The plan a person reads measures every deleted file; apply's own measures none.
    assert all(f.size == os.path.getsize(os.path.join(decl.path, f.path)) > 0 for f in shown.clean.files_to_delete)
    assert {f.size for f in applied.clean.files_to_delete} == {-1}
    assert shown.clean.bytes_to_reclaim == sum(f.size for f in shown.clean.files_to_delete)


def test_a_table_with_file_sizing_is_measured_even_for_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    decl = _table(tmp_path / "t", sizing=FileSizing(small_file_limit=100 * 1024 * 1024))
    storage = LocalStorage(decl.path)
    shown = plan_one(decl, storage, now=NOW)
    asked = _counting_stats(monkeypatch)

    applied = plan_one(decl, storage, now=NOW, sizes=False)

    assert shown.sizing is not None and shown.sizing.groups  # tiny files are all small
    assert applied.sizing == shown.sizing  # small-file detection saw the same sizes
    assert applied.clean == shown.clean
    assert any(name.endswith(".parquet") for name in asked)


def test_apply_lists_without_a_stat_per_file_and_reports_what_the_deletes_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decl = _table(tmp_path / "t")
    planned = plan_one(decl, LocalStorage(decl.path), now=NOW).clean
    assert planned is not None
    grown = os.path.join(decl.path, planned.files_to_delete[0].path)
    with open(grown, "ab") as f:  # a file whose size changed after the plan was shown
        f.write(b"\0" * 1000)
    really = sum(os.path.getsize(os.path.join(decl.path, f.path)) for f in planned.files_to_delete)
    asked = _counting_stats(monkeypatch)

    done = apply_table(decl, None, now=NOW, spark_settings=SparkSettings(master="local[2]"),
                       deleter_factory=lambda: Deleter(SparkSettings(master="local[2]")))

    assert done.status == "success" and done.files_deleted == len(planned.files_to_delete)
    assert done.bytes_deleted == really == planned.bytes_to_reclaim + 1000
    assert not [name for name in asked if name.endswith(".parquet")]  # no data file was stat-ed to plan


def test_a_pending_clean_on_local_disk_is_not_stat_ed_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decl = _table(tmp_path / "t")
    storage = LocalStorage(decl.path)
    step = plan_one(decl, storage, now=NOW).clean
    assert step is not None
    meta = read_table_metadata(storage)
    writer = TimelineWriter(storage, meta.timeline_folder, meta.config.timeline_layout_version)

    def completion() -> str:
        return new_instant_time(read_timeline(storage)[1], clock=datetime.now(UTC), table_timezone="UTC")

    cleaner = CleanRunner(storage, writer, lambda s, paths: s.delete_many(paths),
                          completion_time=completion)  # type: ignore[arg-type]
    inflight, clean_plan = cleaner.start(completion(), step)  # type: ignore[arg-type]
    asked: list[str] = []
    real_stat = LocalStorage.stat

    def counting(self: LocalStorage, path: str) -> object:
        asked.append(path)
        return real_stat(self, path)

    monkeypatch.setattr(LocalStorage, "stat", counting)

    outcome = cleaner.finish(inflight, clean_plan)  # as a crashed run's clean is finished: no sizes given

    assert outcome.files_deleted == len(step.files_to_delete)
    assert outcome.bytes_deleted == step.bytes_to_reclaim > 0
    assert not [path for path in asked if path.endswith(".parquet")]


@pytest.mark.s3
def test_on_s3_apply_keeps_the_listings_sizes_and_reports_them_as_freed(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    # S3 lists sizes for free and deletes without asking first (no size per result): apply's plan
    # keeps the listing's sizes, and the bytes freed come from them.
    decl = _table(tmp_path / "t")
    on_disk = plan_one(decl, LocalStorage(decl.path), now=NOW).clean
    assert on_disk is not None
    upload_tree(decl.path, s3_bucket, "t", s3_server)
    storage = storage_for(f"s3://{s3_bucket}/t", options=s3_server.options())
    step = plan_one(replace(decl, path=f"s3://{s3_bucket}/t"), storage, now=NOW, explain=False, sizes=False).clean
    assert step is not None
    assert [(f.path, f.size) for f in step.files_to_delete] == [(f.path, f.size) for f in on_disk.files_to_delete]
    meta = read_table_metadata(storage)
    writer = TimelineWriter(storage, meta.timeline_folder, meta.config.timeline_layout_version)

    def completion() -> str:
        return new_instant_time(read_timeline(storage)[1], clock=datetime.now(UTC), table_timezone="UTC")

    deleter = Deleter(SparkSettings(master="local[2]"))
    cleaner = CleanRunner(storage, writer, deleter, completion_time=completion)  # type: ignore[arg-type]
    inflight, clean_plan = cleaner.start(completion(), step)  # type: ignore[arg-type]

    outcome = cleaner.finish(inflight, clean_plan, sizes={f.path: f.size for f in step.files_to_delete})

    assert outcome.files_deleted == len(on_disk.files_to_delete)
    assert outcome.bytes_deleted == on_disk.bytes_to_reclaim > 0
