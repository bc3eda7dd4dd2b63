"""Lazy, cached decoding of commit metadata: the same answers as decoding everything up front, while
a plan reads only the instant files it needs, and a re-read of the timeline decodes nothing twice."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.execute.apply import apply_table
from runner.hudi.instant import Action
from runner.hudi.metadata import decode_commit_metadata
from runner.hudi.state import read_table_metadata
from runner.hudi.timeline_metadata import DECODED
from runner.planner import plan_one
from runner.storage import DeleteResult, FileInfo, LocalStorage
from runner.testing import TableBuilder
from tests.conftest import extract_fixture, fixture_id, fixture_zips

NOW = datetime(2026, 11, 22, tzinfo=UTC)


@dataclass
class CountingStorage:
    """A real `LocalStorage` that also records which instant files were read."""

    inner: LocalStorage
    reads: list[str] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return self.inner.uri

    def read(self, path: str) -> bytes:
        self.reads.append(path.rsplit("/", 1)[-1])
        return self.inner.read(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        return self.inner.list_dir(path)

    def walk(self, path: str = "") -> Iterator[FileInfo]:
        return self.inner.walk(path)

    def stat(self, path: str) -> FileInfo | None:
        return self.inner.stat(path)

    def commit_reads(self) -> list[str]:
        return sorted(n for n in self.reads if n.split(".")[-1] in ("commit", "deltacommit", "replacecommit"))


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    DECODED.clear()
    yield
    DECODED.clear()


@pytest.mark.parametrize("zip_path", fixture_zips(), ids=fixture_id)
def test_lazy_commits_equal_decoding_every_commit_eagerly(zip_path: Path, tmp_path: Path) -> None:
    base = extract_fixture(zip_path, tmp_path)
    storage = LocalStorage(str(base))
    meta = read_table_metadata(storage)

    eager = {}
    for instant in meta.timeline.completed_writes:
        data = storage.read(f"{meta.timeline_folder}/{instant.file_name}")
        eager[instant.time] = decode_commit_metadata(data, path=instant.file_name) if data.strip() else None

    lazy = dict(meta.commits)
    assert list(lazy) == list(eager)
    for time, expected in eager.items():
        if expected is None:
            assert not lazy[time].partition_to_write_stats
        else:
            assert lazy[time] == expected
    # A second read of the same table answers from the cache with equal values.
    assert dict(read_table_metadata(storage).commits) == lazy


def _builder(path: Path) -> TableBuilder:
    builder = TableBuilder(path, name="t", partitions=[f"p={i}" for i in range(6)], tiny=True)
    builder.commit(writes=3)
    for _ in range(3):
        builder.commit(updates=3)
    return builder


def test_an_incremental_plan_decodes_only_its_window(tmp_path: Path) -> None:
    builder = _builder(tmp_path / "t")
    keep_one = CleanPolicy(CleanPolicyName.KEEP_LATEST_COMMITS, commits_retained=1)
    decl = TableDeclaration(name="t", path=str(tmp_path / "t"), source_file="tables/t.yml", clean=keep_one,
                            file_sizing=FileSizing(small_file_limit=0))
    done = apply_table(decl, None, now=NOW, spark_settings=SparkSettings(),
                       deleter_factory=lambda: lambda s, ps: [DeleteResult(p, s.delete(p)) for p in ps])
    assert done.status == "success" and done.files_deleted > 0, done
    latest = read_table_metadata(LocalStorage(str(tmp_path / "t"))).timeline.latest_time
    assert latest is not None
    touched = builder.commit(updates={"p=2": 3}, at=latest.to_datetime() + timedelta(seconds=1))
    builder.commit(updates={"p=4": 3}, at=touched.to_datetime() + timedelta(seconds=1))
    DECODED.clear()
    storage = CountingStorage(LocalStorage(str(tmp_path / "t")))

    meta = read_table_metadata(storage)  # type: ignore[arg-type]
    plan = plan_one(decl, storage, now=NOW, metadata=meta)  # type: ignore[arg-type]

    assert plan.clean is not None and plan.clean.scope.startswith("incremental"), plan.clean
    window = [i for i in meta.timeline.completed_writes if i.time == touched or i.time < touched]
    # The window is [last clean's ECTR, new ECTR): the commit before the clean and the one after it.
    expected = {i.time for i in window[-2:]}
    assert meta.commits.decoded == expected  # type: ignore[attr-defined]
    assert storage.commit_reads() == sorted(i.file_name for i in window[-2:])
    full = plan_one(replace(decl, clean=replace(keep_one, incremental=False)), LocalStorage(str(tmp_path / "t")),
                    now=NOW)
    assert full.clean is not None and full.clean.scope.startswith("full listing")
    assert plan.clean.files_to_delete and plan.clean.files_to_delete == full.clean.files_to_delete

    # Planning again in the same process reads no commit file: they are cached by file identity.
    storage.reads.clear()
    again = plan_one(decl, storage, now=NOW)  # type: ignore[arg-type]
    assert again == plan
    assert storage.commit_reads() == []


def test_a_rewritten_instant_file_is_decoded_afresh(tmp_path: Path) -> None:
    _builder(tmp_path / "t")
    storage = LocalStorage(str(tmp_path / "t"))
    meta = read_table_metadata(storage)
    first = meta.timeline.completed_writes[0]
    before = meta.commits[first.time]
    path = tmp_path / "t" / meta.timeline_folder / first.file_name
    text = path.read_text()
    path.write_text(text.replace('"operationType" : "INSERT"', '"operationType" : "UPSERT"')
                    .replace('"operationType": "INSERT"', '"operationType": "UPSERT"') + " ")

    after = read_table_metadata(storage).commits[first.time]

    assert before.operation_type == "INSERT"
    assert after.operation_type == "UPSERT"


def test_replacecommits_are_decoded_for_the_replaced_groups(tmp_path: Path) -> None:
    builder = _builder(tmp_path / "t")
    builder.insert_overwrite("p=1", groups=2)
    storage = CountingStorage(LocalStorage(str(tmp_path / "t")))

    meta = read_table_metadata(storage)  # type: ignore[arg-type]

    replaces = {i.time for i in meta.timeline.completed(Action.REPLACE_COMMIT)}
    assert replaces and meta.commits.decoded == replaces  # type: ignore[attr-defined]
    assert {p for p, _ in meta.replaced} == {"p=1"}
