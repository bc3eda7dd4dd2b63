"""`create_new` (a file streamed by the caller, published whole or not at all) and `open_input`,
on a local folder and on the local S3 server, plus the local temporary-file behaviour."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runner.errors import StorageError
from runner.storage import AlreadyExists, LocalStorage, Storage

TEMP = re.compile(r"^\.a\.parquet\.[0-9a-f]{32}\.tmp$")


def test_create_new_publishes_what_was_streamed(storage: Storage) -> None:
    with storage.create_new("p/a.parquet") as out:
        out.write(b"PAR1")
        out.write(b"rows")

    assert storage.read("p/a.parquet") == b"PAR1rows"
    with storage.open_input("p/a.parquet") as f:
        f.seek(4)
        assert f.read(2) == b"ro"
        assert f.seek(0, 2) == 8


def test_create_new_never_replaces_an_existing_file(storage: Storage) -> None:
    storage.write_new("p/a.parquet", b"first")

    with pytest.raises(AlreadyExists, match=r"p/a\.parquet: it already exists"), \
            storage.create_new("p/a.parquet") as out:
        out.write(b"second")

    assert storage.read("p/a.parquet") == b"first"


def test_create_new_publishes_nothing_when_the_writer_fails(storage: Storage) -> None:
    with pytest.raises(ValueError, match="bad row"), storage.create_new("p/a.parquet") as out:
        out.write(b"half")
        raise ValueError("bad row")

    assert storage.stat("p/a.parquet") is None
    assert [i.path for i in storage.walk()] == []


def test_open_input_of_a_missing_file_names_it(storage: Storage) -> None:
    with pytest.raises(StorageError, match=r"p/missing\.parquet"):
        storage.open_input("p/missing.parquet")


# --- Local: the stream goes to a hidden temporary file, linked into place -------------------------


def test_the_stream_goes_to_a_hidden_temporary_file_beside_the_target(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path))
    with storage.create_new("p/a.parquet") as out:
        out.write(b"PAR1")
        out.flush()
        (temp,) = (tmp_path / "p").iterdir()
        assert TEMP.match(temp.name) and temp.read_bytes() == b"PAR1"
        assert not (tmp_path / "p/a.parquet").exists()  # invisible until complete

    assert [p.name for p in (tmp_path / "p").iterdir()] == ["a.parquet"]
    assert (tmp_path / "p/a.parquet").read_bytes() == b"PAR1"


def test_an_existing_target_is_refused_before_anything_is_streamed(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path))
    storage.write_new("p/a.parquet", b"first")
    entered = False

    with pytest.raises(AlreadyExists), storage.create_new("p/a.parquet"):
        entered = True

    assert not entered
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["a.parquet"]


def test_a_rival_that_creates_the_target_during_the_stream_wins(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path))

    with pytest.raises(AlreadyExists), storage.create_new("p/a.parquet") as out:
        out.write(b"mine")
        storage.write_new("p/a.parquet", b"rival")

    assert (tmp_path / "p/a.parquet").read_bytes() == b"rival"
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["a.parquet"]  # the temp file is gone


def test_an_empty_file_is_created_in_place_and_never_over_an_existing_name(storage: Storage) -> None:
    """Empty bytes (markers, requested instants) skip the temp file, yet stay exclusive: of two
    creators one wins, and an existing file keeps its bytes."""
    storage.write_new("p/a.parquet.marker.CREATE", b"")
    assert storage.read("p/a.parquet.marker.CREATE") == b""
    with pytest.raises(AlreadyExists, match=r"a\.parquet\.marker\.CREATE: it already exists"):
        storage.write_new("p/a.parquet.marker.CREATE", b"")
    storage.write_new("p/b", b"bytes")
    with pytest.raises(AlreadyExists):
        storage.write_new("p/b", b"")
    assert storage.read("p/b") == b"bytes"


def test_an_empty_file_is_not_created_through_a_dangling_link(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path / "t"))
    (tmp_path / "t" / "p").mkdir(parents=True)
    (tmp_path / "t" / "p" / "m").symlink_to(tmp_path / "t" / "p" / "elsewhere")  # inside the root

    with pytest.raises(AlreadyExists):
        storage.write_new("p/m", b"")
    assert not (tmp_path / "t" / "p" / "elsewhere").exists()
    assert [p.name for p in (tmp_path / "t" / "p").iterdir()] == ["m"]
