"""JSON a table keeps about itself (version 6 commit metadata, the LSM timeline's manifests) that no
Hudi writer makes: a number thousands of digits long, nesting 100,000 deep, a file of gigabytes.
Each is an error naming the file (and the field, where one is read), never an internal error, a
RecursionError or a read of gigabytes; plan refuses that table and plans the others."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runner.cli import main
from runner.errors import CorruptMetadataError
from runner.hudi.archived_timeline import archived_completion_times
from runner.hudi.instant import InstantTime
from runner.hudi.metadata import decode_commit_metadata
from runner.storage import storage_for
from runner.testing import TableBuilder


def _lake(tmp_path: Path) -> tuple[Path, Path]:
    """A project of two v6 tables, orders and customers; the latest commit file of orders."""
    project = tmp_path / "project"
    (project / "tables").mkdir(parents=True)
    (project / "project.yml").write_text("name: lake\n")
    for name in ("orders", "customers"):
        builder = TableBuilder(tmp_path / "lake" / name, name=name, partitions=["p=1"])
        builder.commit(writes=1)
        builder.commit(writes=1)
        (project / "tables" / f"{name}.yml").write_text(f"name: {name}\npath: {tmp_path / 'lake' / name}\n")
    commit = sorted((tmp_path / "lake" / "orders" / ".hoodie").glob("*.commit"))[-1]
    return project, commit


def _plan(project: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["plan", "--project-dir", str(project)])
    out, err = capsys.readouterr()
    return code, out + err


def test_a_number_thousands_of_digits_long_names_the_file_and_field(tmp_path: Path, capsys) -> None:
    project, commit = _lake(tmp_path)
    text = re.sub(r'"totalWriteBytes"\s*:\s*\d+', '"totalWriteBytes" : ' + "9" * 5000, commit.read_text(), count=1)
    commit.write_text(text)
    with pytest.raises(CorruptMetadataError) as caught:
        decode_commit_metadata(commit.read_bytes(), path=str(commit))
    assert caught.value.message.startswith(f"Cannot decode {commit}: expected commit metadata.")
    assert "totalWriteBytes to be a whole number, found a number 5,000 digits long" in caught.value.message
    code, out = _plan(project, capsys)
    assert code == 1 and "Traceback" not in out
    assert f".hoodie/{commit.name}" in out and "5,000 digits long" in out
    assert "customers" in out


def test_json_nested_100000_deep_names_the_file(tmp_path: Path, capsys) -> None:
    project, commit = _lake(tmp_path)
    document = json.loads(commit.read_text())
    text = json.dumps(document)[:-1] + ', "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
    commit.write_text(text)
    with pytest.raises(CorruptMetadataError) as caught:
        decode_commit_metadata(commit.read_bytes(), path=str(commit))
    assert caught.value.message.startswith(f"Cannot decode {commit}: expected commit metadata")
    assert caught.value.message.endswith("found JSON nested too deeply to read")
    code, out = _plan(project, capsys)
    assert code == 1 and "Traceback" not in out and "RecursionError" not in out
    assert f".hoodie/{commit.name}" in out and "nested too deeply" in out and "customers" in out


def test_a_commit_file_of_gigabytes_is_not_read(tmp_path: Path, capsys) -> None:
    project, commit = _lake(tmp_path)
    with open(commit, "r+b") as handle:
        handle.truncate(3 * 1024 ** 3)  # sparse: nothing is written
    code, out = _plan(project, capsys)
    assert code == 1 and "Traceback" not in out and "MemoryError" not in out
    assert f".hoodie/{commit.name}: it is 3.0 GiB" in out, out
    assert "customers" in out


def _history(tmp_path: Path, manifest: str | None = None, size: int | None = None) -> tuple[Path, str]:
    base = tmp_path / "t"
    folder = base / ".hoodie" / "timeline" / "history"
    folder.mkdir(parents=True)
    (folder / "_version_").write_text("1")
    path = folder / "manifest_1"
    if manifest is not None:
        path.write_text(manifest)
    if size is not None:
        with open(path, "wb") as handle:
            handle.truncate(size)
    return base, ".hoodie/timeline/history"


@pytest.mark.parametrize(("manifest", "found"), [
    ('{"files": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested too deeply to read"),
    ('{"files": [{"fileName": "1_2_0.parquet", "fileLen": ' + "7" * 5000 + "}]}", None),
])
def test_a_deep_or_long_manifest_is_an_error_naming_it(tmp_path: Path, manifest: str, found: str | None) -> None:
    base, folder = _history(tmp_path, manifest)
    wanted = {InstantTime("20260101000000000")}
    if found is None:  # a number in a field the runner never reads is harmless
        assert archived_completion_times(storage_for(str(base)), folder, wanted) == {}
        return
    with pytest.raises(CorruptMetadataError) as caught:
        archived_completion_times(storage_for(str(base)), folder, wanted)
    assert caught.value.message == (f"Cannot decode {base}/{folder}/manifest_1: expected an LSM timeline manifest "
                                    f"(JSON), found {found}")


def test_a_manifest_of_gigabytes_is_not_read(tmp_path: Path) -> None:
    base, folder = _history(tmp_path, size=3 * 1024 ** 3)
    with pytest.raises(CorruptMetadataError) as caught:
        archived_completion_times(storage_for(str(base)), folder, {InstantTime("20260101000000000")})
    assert caught.value.message.startswith(f"Cannot decode {base}/{folder}/manifest_1: it is 3.0 GiB")
