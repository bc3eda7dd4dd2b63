"""Storage: the same contract on a local folder and on a real S3-compatible server, plus local safety."""

from __future__ import annotations

import os
import pickle
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from runner.errors import RefusedError, StorageError
from runner.storage import AlreadyExists, FileInfo, LocalStorage, Storage, storage_for
from runner.storage.base import normalize
from runner.storage.s3 import ObjectStorage, S3Options
from tests.s3 import S3Server, upload_tree


@pytest.fixture
def s3(request: pytest.FixtureRequest) -> tuple[S3Server, str]:
    """The local S3 server and a fresh bucket in it (the `tests.s3` fixtures, fetched by name)."""
    return request.getfixturevalue("s3_server"), request.getfixturevalue("s3_bucket")


def paths(infos: Iterable[FileInfo]) -> list[str]:
    return [i.path for i in infos]


# --- The contract, on both backends ---------------------------------------------------------------


def test_write_new_then_read_stat_and_list(storage: Storage) -> None:
    storage.write_new(".hoodie/timeline/20240101.commit", b"{}")

    assert storage.read(".hoodie/timeline/20240101.commit") == b"{}"
    info = storage.stat(".hoodie/timeline/20240101.commit")
    assert info is not None and (info.path, info.size, info.is_dir) == (
        ".hoodie/timeline/20240101.commit",
        2,
        False,
    )
    assert info.mtime_ms is not None and info.mtime_ms > 0
    assert [(i.path, i.size, i.is_dir) for i in storage.list_dir(".hoodie")] == [
        (".hoodie/timeline", 0, True)
    ]
    assert paths(storage.list_dir(".hoodie/timeline")) == [".hoodie/timeline/20240101.commit"]


def test_write_new_refuses_to_replace(storage: Storage) -> None:
    storage.write_new("a/b.commit", b"first")

    with pytest.raises(AlreadyExists, match=r"a/b\.commit: it already exists"):
        storage.write_new("a/b.commit", b"second")
    assert storage.read("a/b.commit") == b"first"


def test_read_missing_names_the_full_path(storage: Storage) -> None:
    with pytest.raises(StorageError) as info:
        storage.read(".hoodie/hoodie.properties")
    assert f"{storage.uri}/.hoodie/hoodie.properties" in str(info.value)


def test_missing_paths_list_as_empty_and_stat_as_none(storage: Storage) -> None:
    storage.write_new("a/file", b"x")

    assert storage.list_dir("nope") == []
    assert storage.list_dir("a/file") == []
    assert list(storage.walk("nope")) == []
    assert storage.stat("nope/x.parquet") is None


def test_walk_yields_every_file_below_recursively(storage: Storage) -> None:
    for path in ["region=eu/day=1/a.parquet", "region=eu/b.parquet", "region=us/c.parquet", ".hoodie/x"]:
        storage.write_new(path, b"data")

    assert paths(storage.walk("region=eu")) == ["region=eu/b.parquet", "region=eu/day=1/a.parquet"]
    assert paths(storage.walk()) == [
        ".hoodie/x",
        "region=eu/b.parquet",
        "region=eu/day=1/a.parquet",
        "region=us/c.parquet",
    ]
    assert all(not i.is_dir and i.size == 4 for i in storage.walk())


def test_list_dir_shows_direct_children_only(storage: Storage) -> None:
    storage.write_new("p/a.parquet", b"1")
    storage.write_new("p/q/b.parquet", b"22")

    listed = storage.list_dir("p")
    assert [(i.path, i.is_dir) for i in listed] == [("p/a.parquet", False), ("p/q", True)]
    assert listed[0].size == 1


def test_overwrite_creates_then_replaces(storage: Storage) -> None:
    storage.overwrite(".hoodie/hoodie.properties", b"v=1\n")
    storage.overwrite(".hoodie/hoodie.properties", b"v=2\n")

    assert storage.read(".hoodie/hoodie.properties") == b"v=2\n"


def test_delete_reports_whether_it_deleted(storage: Storage) -> None:
    storage.write_new("p/a.parquet", b"1")

    assert storage.delete("p/a.parquet") is True
    assert storage.delete("p/a.parquet") is False
    assert storage.stat("p/a.parquet") is None


def test_delete_tree_counts_files_and_removes_everything(storage: Storage) -> None:
    for path in ["p/a", "p/q/b", "p/q/r/c", "other/d"]:
        storage.write_new(path, b"x")

    assert storage.delete_tree("p") == 3
    assert list(storage.walk("p")) == []
    assert paths(storage.walk()) == ["other/d"]
    assert storage.delete_tree("p") == 0


def test_remove_empty_folder_removes_only_folders_with_nothing_in_them(storage: Storage) -> None:
    for path in ["p/q/r/.keep", "other/d"]:
        storage.write_new(path, b"x")
    storage.delete("p/q/r/.keep")  # p/q/r is empty now (locally a folder, on S3 nothing)

    assert storage.remove_empty_folder("p") is True
    assert storage.stat("p") is None and paths(storage.walk()) == ["other/d"]
    assert storage.remove_empty_folder("p") is True  # gone already


def test_remove_empty_folder_never_deletes_a_file(storage: Storage) -> None:
    storage.write_new("p/q/landed.parquet", b"x")

    assert storage.remove_empty_folder("p") is False
    assert storage.read("p/q/landed.parquet") == b"x"


@pytest.mark.s3
def test_remove_empty_folder_on_s3_deletes_the_folder_markers_only(s3: tuple[S3Server, str]) -> None:
    server, bucket = s3
    for key in ["t/p/", "t/p/q/"]:  # `dir/` objects, as consoles and some tools create folders
        server.client().put_object(Bucket=bucket, Key=key, Body=b"")
    storage = storage_for(f"s3://{bucket}/t", options=server.options())
    storage.write_new("other/d", b"x")

    assert storage.remove_empty_folder("p") is True
    assert storage.stat("p") is None and paths(storage.walk()) == ["other/d"]
    server.client().put_object(Bucket=bucket, Key="t/p/q/", Body=b"")
    storage.write_new("p/q/landed.parquet", b"x")
    assert storage.remove_empty_folder("p") is False
    assert storage.read("p/q/landed.parquet") == b"x"


def test_equivalent_spellings_name_the_same_file(storage: Storage) -> None:
    storage.write_new("./a//b.commit", b"x")

    assert storage.read("a/b.commit") == b"x"
    assert paths(storage.walk("a/")) == ["a/b.commit"]


@pytest.fixture(params=["local", "s3"])
def offline_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """A storage whose S3 variant points at no server: what it refuses, it refuses without a request."""
    if request.param == "local":
        return LocalStorage(str(tmp_path))
    return storage_for(
        "s3://bucket/t", options={"endpoint_override": "http://127.0.0.1:9", "region": "us-east-1"}
    )


@pytest.mark.parametrize("bad", ["../outside", "a/../../outside", "/etc/passwd", "a/.."])
@pytest.mark.parametrize("action", ["write_new", "overwrite", "delete", "delete_tree", "remove_empty_folder", "read"])
def test_paths_escaping_the_root_are_refused(offline_storage: Storage, bad: str, action: str) -> None:
    storage = offline_storage
    calls: dict[str, Callable[[], object]] = {
        "write_new": lambda: storage.write_new(bad, b"x"),
        "overwrite": lambda: storage.overwrite(bad, b"x"),
        "delete": lambda: storage.delete(bad),
        "delete_tree": lambda: storage.delete_tree(bad),
        "remove_empty_folder": lambda: storage.remove_empty_folder(bad),
        "read": lambda: storage.read(bad),
    }
    with pytest.raises(RefusedError, match="relative to the table root"):
        calls[action]()


@pytest.mark.parametrize("action", ["delete", "delete_tree", "remove_empty_folder", "write_new", "overwrite"])
def test_the_root_itself_cannot_be_mutated(offline_storage: Storage, action: str) -> None:
    call = getattr(offline_storage, action)

    with pytest.raises(RefusedError, match="table root"):
        call("") if action.startswith(("delete", "remove")) else call("", b"x")


def test_storage_survives_a_pickle_round_trip(storage: Storage) -> None:
    storage.write_new("a/b", b"x")

    copy = pickle.loads(pickle.dumps(storage))

    assert copy == storage and copy.uri == storage.uri
    assert copy.read("a/b") == b"x"
    assert copy.delete("a/b") is True


# --- Local disk: atomicity and symlink safety ------------------------------------------------------


def test_concurrent_creators_exactly_one_wins(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path))
    barrier = threading.Barrier(8)
    outcomes: list[str] = []

    def create(i: int) -> None:
        barrier.wait()
        try:
            storage.write_new(".hoodie/20240101.clean.requested", f"writer {i}".encode())
            outcomes.append("won")
        except AlreadyExists:
            outcomes.append("lost")

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(outcomes) == ["lost"] * 7 + ["won"]
    assert os.listdir(tmp_path / ".hoodie") == ["20240101.clean.requested"]  # no temp files left


def test_local_writes_leave_no_temp_files(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path))
    storage.write_new("a", b"1")
    storage.overwrite("a", b"2")
    with pytest.raises(AlreadyExists):
        storage.write_new("a", b"3")

    assert os.listdir(tmp_path) == ["a"]


def test_local_root_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    assert LocalStorage("table").uri == str(tmp_path / "table")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the table root holding a file that must never be touched."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "precious").write_bytes(b"keep me")
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "table"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("action", ["write_new", "overwrite", "delete", "delete_tree"])
def test_mutations_through_a_symlinked_folder_that_leaves_the_root_are_refused(
    root: Path, outside: Path, action: str
) -> None:
    (root / "partition").symlink_to(outside, target_is_directory=True)
    storage = LocalStorage(str(root))
    call = getattr(storage, action)

    with pytest.raises(RefusedError, match="outside the table root"):
        call("partition/precious") if action.startswith("delete") else call("partition/precious", b"x")
    assert (outside / "precious").read_bytes() == b"keep me"


def test_deleting_a_symlink_that_points_outside_is_refused(root: Path, outside: Path) -> None:
    (root / "link.parquet").symlink_to(outside / "precious")
    storage = LocalStorage(str(root))

    with pytest.raises(RefusedError, match="outside the table root"):
        storage.delete("link.parquet")
    with pytest.raises(RefusedError, match="outside the table root"):
        storage.overwrite("link.parquet", b"x")
    assert (root / "link.parquet").is_symlink()
    assert (outside / "precious").read_bytes() == b"keep me"


def test_a_root_that_is_itself_a_symlink_is_fine(tmp_path: Path, root: Path) -> None:
    (tmp_path / "alias").symlink_to(root, target_is_directory=True)
    storage = LocalStorage(str(tmp_path / "alias"))

    storage.write_new("a/b", b"x")
    assert storage.delete_tree("a") == 1


def test_deleting_a_symlink_inside_the_root_removes_only_the_link(root: Path) -> None:
    (root / "real.parquet").write_bytes(b"data")
    (root / "link.parquet").symlink_to(root / "real.parquet")
    storage = LocalStorage(str(root))

    assert storage.delete("link.parquet") is True
    assert (root / "real.parquet").read_bytes() == b"data"


def test_delete_tree_refuses_before_deleting_anything_if_a_link_inside_leaves_the_root(
    root: Path, outside: Path
) -> None:
    (root / "p" / "q").mkdir(parents=True)
    (root / "p" / "a.parquet").write_bytes(b"x")
    (root / "p" / "q" / "escape").symlink_to(outside, target_is_directory=True)
    storage = LocalStorage(str(root))

    with pytest.raises(RefusedError, match="outside the table root"):
        storage.delete_tree("p")
    assert (root / "p" / "a.parquet").exists()
    assert (outside / "precious").read_bytes() == b"keep me"


def test_delete_tree_unlinks_inner_links_without_following_them(root: Path) -> None:
    (root / "keep").mkdir()
    (root / "keep" / "f").write_bytes(b"x")
    (root / "p").mkdir()
    (root / "p" / "dir_link").symlink_to(root / "keep", target_is_directory=True)
    (root / "p" / "file_link").symlink_to(root / "keep" / "f")
    storage = LocalStorage(str(root))

    assert storage.delete_tree("p") == 2
    assert not (root / "p").exists()
    assert (root / "keep" / "f").read_bytes() == b"x"


def test_walk_does_not_descend_into_linked_folders(root: Path) -> None:
    (root / "p").mkdir()
    (root / "p" / "f").write_bytes(b"x")
    (root / "loop").symlink_to(root, target_is_directory=True)

    assert paths(LocalStorage(str(root)).walk()) == ["p/f"]


def test_delete_of_a_folder_points_to_delete_tree(root: Path) -> None:
    (root / "p").mkdir()

    with pytest.raises(StorageError, match="is a directory"):
        LocalStorage(str(root)).delete("p")


# --- storage_for and S3 settings -------------------------------------------------------------------


def test_storage_for_local_paths_and_file_uris(tmp_path: Path) -> None:
    assert storage_for(str(tmp_path)) == LocalStorage(str(tmp_path))
    assert storage_for(f"file://{tmp_path}") == LocalStorage(str(tmp_path))
    assert storage_for(f"file://localhost{tmp_path}").uri == str(tmp_path)


@pytest.mark.parametrize("uri", ["s3://bucket/warehouse/orders", "s3a://bucket/warehouse/orders"])
def test_storage_for_object_store_uris(uri: str) -> None:
    storage = storage_for(uri, options={"region": "eu-west-1", "access_key": "k", "secret_key": "s"})

    assert isinstance(storage, ObjectStorage)
    assert (storage.uri, storage.bucket, storage.prefix) == (uri, "bucket", "warehouse/orders")


@pytest.mark.parametrize("uri", ["gs://bucket/t", "hdfs://nn/t", "file://otherhost/t", " "])
def test_storage_for_unsupported_uris(uri: str) -> None:
    with pytest.raises(
        StorageError,
        match=r"(supported: plain paths, file://, s3://, s3a://)|(only local files)|(path is empty)",
    ):
        storage_for(uri)


def test_object_store_uri_needs_a_bucket() -> None:
    with pytest.raises(StorageError, match="expected s3://bucket/prefix"):
        storage_for("s3:///prefix", options={"region": "us-east-1"})


def test_s3_options_fall_back_to_the_aws_environment() -> None:
    env = {
        "AWS_ENDPOINT_URL": "http://generic:1",
        "AWS_ENDPOINT_URL_S3": "http://s3-specific:2",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "env-key",
        "AWS_SECRET_ACCESS_KEY": "env-secret",
        "AWS_SESSION_TOKEN": "env-token",
    }

    resolved = S3Options.resolve({"region": "us-east-2"}, env)

    assert resolved == S3Options(
        "http://s3-specific:2", "us-east-2", None, "env-key", "env-secret", "env-token"
    )


def test_s3_credentials_are_taken_as_a_group() -> None:
    env = {
        "AWS_ACCESS_KEY_ID": "env-key",
        "AWS_SECRET_ACCESS_KEY": "env-secret",
        "AWS_SESSION_TOKEN": "env-token",
    }

    resolved = S3Options.resolve({"access_key": "k", "secret_key": "s"}, env)

    assert (resolved.access_key, resolved.secret_key, resolved.session_token) == ("k", "s", None)


def test_unknown_s3_option_is_an_error() -> None:
    with pytest.raises(
        StorageError, match=r"Unknown S3 storage option.*endpoint_url.*supported: endpoint_override"
    ):
        S3Options.resolve({"endpoint_url": "http://x"}, {})


def test_s3_secrets_stay_out_of_repr() -> None:
    storage = ObjectStorage.from_uri(
        "s3://b/t", options={"access_key": "AKIA-SECRET", "secret_key": "shh"}, env={}
    )

    assert "AKIA-SECRET" not in repr(storage) and "shh" not in repr(storage)


@pytest.mark.s3
def test_s3_endpoint_from_environment_reaches_the_server(
    s3: tuple[S3Server, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, bucket = s3
    for shadowing in ["AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"]:
        monkeypatch.delenv(shadowing, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret_key)
    monkeypatch.setenv("AWS_REGION", server.region)

    storage = storage_for(f"s3://{bucket}/t")
    storage.write_new("a", b"x")

    assert storage.read("a") == b"x"


@pytest.mark.s3
def test_upload_tree_copies_a_local_table_into_the_bucket(tmp_path: Path, s3: tuple[S3Server, str]) -> None:
    server, bucket = s3
    local = LocalStorage(str(tmp_path / "orders"))
    for path in [".hoodie/hoodie.properties", ".hoodie/20240101.commit", "region=eu/f1.parquet"]:
        local.write_new(path, path.encode())

    assert upload_tree(local.uri, bucket, "warehouse/orders", server) == 3

    remote = storage_for(f"s3://{bucket}/warehouse/orders", options=server.options())
    assert [(i.path, i.size) for i in remote.walk()] == [(i.path, i.size) for i in local.walk()]
    assert remote.read("region=eu/f1.parquet") == b"region=eu/f1.parquet"


@pytest.mark.s3
def test_s3_write_new_sees_objects_written_by_others(s3: tuple[S3Server, str]) -> None:
    server, bucket = s3
    server.client().put_object(Bucket=bucket, Key="t/.hoodie/20240101.commit", Body=b"theirs")
    storage = storage_for(f"s3://{bucket}/t", options=server.options())

    with pytest.raises(AlreadyExists, match=re.escape(f"s3://{bucket}/t/.hoodie/20240101.commit")):
        storage.write_new(".hoodie/20240101.commit", b"ours")
    assert storage.read(".hoodie/20240101.commit") == b"theirs"


@pytest.mark.s3
def test_s3_folder_markers_left_by_deletes_are_not_files(s3: tuple[S3Server, str]) -> None:
    server, bucket = s3
    storage = storage_for(f"s3://{bucket}/t", options=server.options())
    storage.write_new(".hoodie/.locks/runner.lock", b"x")
    storage.write_new("p/q/a.parquet", b"x")

    storage.delete(".hoodie/.locks/runner.lock")
    storage.delete_tree("p/q")

    assert list(storage.walk()) == []
    assert all(i.is_dir for i in storage.list_dir(""))


# --- Compare-and-swap (the lock file) and conditional creation, on both backends ------------------


def test_replace_if_replaces_only_the_expected_content(storage: Storage) -> None:
    storage.write_new(".hoodie/.locks/runner.lock", b"v1")

    assert storage.replace_if(".hoodie/.locks/runner.lock", b"other", b"v2") is False
    assert storage.read(".hoodie/.locks/runner.lock") == b"v1"
    assert storage.replace_if(".hoodie/.locks/runner.lock", b"v1", b"v2") is True
    assert storage.read(".hoodie/.locks/runner.lock") == b"v2"
    assert storage.replace_if(".hoodie/.locks/missing.lock", b"v1", b"v2") is False
    assert storage.stat(".hoodie/.locks/missing.lock") is None


def test_delete_if_deletes_only_the_expected_content(storage: Storage) -> None:
    storage.write_new(".hoodie/.locks/runner.lock", b"v1")

    assert storage.delete_if(".hoodie/.locks/runner.lock", b"other") is False
    assert storage.read(".hoodie/.locks/runner.lock") == b"v1"
    assert storage.delete_if(".hoodie/.locks/runner.lock", b"v1") is True
    assert storage.stat(".hoodie/.locks/runner.lock") is None
    assert storage.delete_if(".hoodie/.locks/runner.lock", b"v1") is False


def race(storage: Storage, attempt: Callable[[Storage, int], bool], contenders: int = 8) -> list[int]:
    """Run `attempt` from several threads at once; the indexes of those that succeeded."""
    barrier = threading.Barrier(contenders)
    won: list[int] = []

    def run(i: int) -> None:
        barrier.wait()
        if attempt(storage, i):
            won.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(contenders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won


def test_of_concurrent_creators_exactly_one_wins_on_every_store(storage: Storage) -> None:
    def create(s: Storage, i: int) -> bool:
        try:
            s.write_new(".hoodie/20240101.clean.requested", f"writer {i}".encode())
        except AlreadyExists:
            return False
        return True

    won = race(storage, create)

    assert len(won) == 1
    assert storage.read(".hoodie/20240101.clean.requested") == f"writer {won[0]}".encode()


def test_of_concurrent_swaps_from_one_version_exactly_one_wins(storage: Storage) -> None:
    storage.write_new(".hoodie/.locks/runner.lock", b"stale")

    won = race(storage, lambda s, i: s.replace_if(".hoodie/.locks/runner.lock", b"stale", f"r{i}".encode()))

    assert len(won) == 1
    assert storage.read(".hoodie/.locks/runner.lock") == f"r{won[0]}".encode()


@pytest.mark.s3
def test_s3_write_new_is_a_conditional_put(s3: tuple[S3Server, str]) -> None:
    server, bucket = s3
    storage = storage_for(f"s3://{bucket}/t", options=server.options())
    assert isinstance(storage, ObjectStorage)
    sent: list[dict[str, str]] = []
    storage._client().meta.events.register(
        "before-send.s3.PutObject", lambda request, **_: sent.append(dict(request.headers))
    )

    storage.write_new(".hoodie/20240101.commit", b"ours")

    assert len(sent) == 1 and sent[0].get("If-None-Match") == b"*"


# --- Path normalisation ----------------------------------------------------------------------------

def _segment_normalize(path: str) -> str:
    """The rule spelled out segment by segment, to compare `normalize`'s shortcut with."""
    segments = [s for s in path.split("/") if s not in ("", ".")]
    if path.startswith("/") or ".." in segments:
        raise RefusedError("escape")
    return "/".join(segments)


def test_normalize_shortcut_for_canonical_paths_agrees_with_the_segment_rule():
    """Every string over the characters that matter, up to 5 long: the same result or the same refusal."""
    import itertools

    alphabet = ["a", ".", "/", "b.parquet"]
    for length in range(0, 6):
        for parts in itertools.product(alphabet, repeat=length):
            path = "".join(parts)
            try:
                expected: str | None = _segment_normalize(path)
            except RefusedError:
                expected = None
            if expected is None:
                with pytest.raises(RefusedError):
                    normalize(path)
            else:
                assert normalize(path) == expected, path
