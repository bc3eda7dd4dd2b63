"""What `.hoodie` holds beside the timeline (the metadata table, a bucket index, a schema history) is
read from one listing of `.hoodie`, not a `stat` per marker: the same answers as asking each path,
in fewer requests, on both timeline layouts."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runner.hudi.state import read_table_metadata
from runner.storage import FileInfo, LocalStorage
from runner.testing import TableBuilder
from tests.conftest import extract_fixture, fixture_id, fixture_zips


@dataclass
class RequestLog:
    """A real `LocalStorage` that records every request, as an object store would bill them."""

    inner: LocalStorage
    requests: list[tuple[str, str]] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return self.inner.uri

    def read(self, path: str) -> bytes:
        self.requests.append(("read", path))
        return self.inner.read(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        self.requests.append(("list", path))
        return self.inner.list_dir(path)

    def walk(self, path: str = "") -> Iterator[FileInfo]:
        self.requests.append(("walk", path))
        return self.inner.walk(path)

    def stat(self, path: str) -> FileInfo | None:
        self.requests.append(("stat", path))
        return self.inner.stat(path)


def _truth(storage: LocalStorage) -> tuple[bool, bool, bool]:
    """Each marker asked path by path, as `read_table_metadata` did before."""
    return (
        storage.stat(".hoodie/metadata") is not None,
        storage.stat(".hoodie/.bucket_index") is not None,
        any(not f.is_dir for f in storage.list_dir(".hoodie/.schema")),
    )


def _markers(storage: LocalStorage) -> tuple[bool, bool, bool]:
    meta = read_table_metadata(storage)
    return meta.has_metadata_table, meta.has_bucket_index_folder, meta.has_schema_history


@pytest.mark.parametrize("zip_path", fixture_zips(), ids=fixture_id)
def test_every_fixture_reads_the_same_markers_as_asking_each_path(zip_path: Path, tmp_path: Path) -> None:
    storage = LocalStorage(str(extract_fixture(zip_path, tmp_path)))
    assert _markers(storage) == _truth(storage)


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("extras", [
    (),
    (".hoodie/.bucket_index/",),
    (".hoodie/.schema/",),  # Hudi creates it empty with every table: not a history
    (".hoodie/.schema/20260101000000000",),
    (".hoodie/.bucket_index/", ".hoodie/.schema/20260101000000000"),
    (".hoodie/metadata",),  # a file, not a folder: there all the same, as a `stat` said
])
def test_synthetic_markers_agree_and_cost_one_listing(tmp_path: Path, version: int, extras: tuple[str, ...]) -> None:
    base = tmp_path / "t"
    TableBuilder(base, name="t", partitions=["p=0"], tiny=True, version=version).commit(writes=1)
    for extra in extras:
        target = base / extra
        if extra.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("x")
    storage = LocalStorage(str(base))
    log = RequestLog(storage)

    markers = read_table_metadata(log)  # type: ignore[arg-type]

    assert (markers.has_metadata_table, markers.has_bucket_index_folder, markers.has_schema_history) == _truth(storage)
    about_markers = [r for r in log.requests if r[1] in (".hoodie", ".hoodie/metadata", ".hoodie/.bucket_index")
                     or r[1].startswith(".hoodie/.schema")]
    # Layout 1 lists `.hoodie` for its timeline anyway; layout 2 lists it once more. The schema
    # folder is listed only when it is there, to see whether it holds a history.
    schema_listed = [("list", ".hoodie/.schema")] if any(e.startswith(".hoodie/.schema") for e in extras) else []
    assert about_markers == [("list", ".hoodie"), *schema_listed], log.requests
