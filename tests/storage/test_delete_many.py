"""`Storage.delete_many`: the cleaner's bulk delete, on local disk (thread pool, one safety check per
folder) and on the local S3 server (batched DeleteObjects, per-key results)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import runner.storage.local as storage_module
from runner.storage import DeleteResult, LocalStorage, Storage, storage_for
from runner.storage.s3 import MAX_KEYS_PER_DELETE, ObjectStorage, batch_outcomes
from tests.s3 import S3Server, seed_objects


def write(storage: Storage, names: list[str]) -> None:
    for name in names:
        storage.write_new(name, b"x")


# --- Both backends ----------------------------------------------------------------------------------


def test_deletes_exactly_the_given_files_and_answers_in_order(storage: Storage) -> None:
    write(storage, ["p=1/a.parquet", "p=1/b.parquet", "p=2/c.parquet", "p=2/keep.parquet"])
    asked = ["p=2/c.parquet", "p=1/a.parquet", "p=1/b.parquet"]

    results = storage.delete_many(asked, threads=4)

    assert results == [DeleteResult(p, True) for p in asked]
    assert [f.path for f in storage.walk()] == ["p=2/keep.parquet"]


@pytest.mark.parametrize("bad", ["../escape.parquet", "/abs.parquet", "p/../../x", ""])
def test_paths_that_leave_the_root_are_refused_per_file(storage: Storage, bad: str) -> None:
    write(storage, ["p/a.parquet"])

    results = storage.delete_many([bad, "p/a.parquet"])

    assert results[0].path == bad and results[0].deleted is False
    assert results[0].error is not None and "Refusing" in results[0].error
    assert results[1] == DeleteResult("p/a.parquet", True)


def test_an_empty_request_does_nothing(storage: Storage) -> None:
    write(storage, ["p/a.parquet"])

    assert storage.delete_many([]) == []
    assert [f.path for f in storage.walk()] == ["p/a.parquet"]


# --- Local disk ---------------------------------------------------------------------------------------


def test_local_missing_files_and_folders_count_as_already_gone(tmp_path: Path) -> None:
    storage = LocalStorage(str(tmp_path / "t"))
    write(storage, ["p/a.parquet"])

    results = storage.delete_many(["p/a.parquet", "p/gone.parquet", "nofolder/x.parquet", "p/a.parquet"])

    assert results == [
        DeleteResult("p/a.parquet", True),
        DeleteResult("p/gone.parquet", False),
        DeleteResult("nofolder/x.parquet", False),
        DeleteResult("p/a.parquet", False),
    ]


def test_local_many_folders_and_large_folders_on_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Small chunks, so one folder spreads over several pool tasks as a huge partition would.
    monkeypatch.setattr(storage_module, "FOLDER_CHUNK", 7)
    root = tmp_path / "t"
    names = [f"p={p}/f{i:03d}.parquet" for p in range(5) for i in range(40)]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")
    doomed = names[::2]

    results = LocalStorage(str(root)).delete_many(doomed, threads=6)

    assert results == [DeleteResult(p, True) for p in doomed]
    left = sorted(str(f.relative_to(root)) for f in root.rglob("*.parquet"))
    assert left == sorted(set(names) - set(doomed))


def test_local_tasks_go_round_robin_across_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    # The pool's threads should work in different folders at once (an unlink locks its folder), so
    # a folder's second chunk comes only after every folder's first; every file is in one task.
    monkeypatch.setattr(storage_module, "FOLDER_CHUNK", 2)
    by_folder = {f"p={p}": [(p * 10 + i, f"f{i}.parquet") for i in range(n)] for p, n in ((0, 5), (1, 2), (2, 3))}

    chunks = storage_module._interleaved_chunks(by_folder)

    assert [folder for folder, _ in chunks] == ["p=0", "p=1", "p=2", "p=0", "p=2", "p=0"]
    assert sorted(e for _, entries in chunks for e in entries) == sorted(e for v in by_folder.values() for e in v)
    assert all(len(entries) <= 2 for _, entries in chunks)


def test_local_each_folder_is_listed_once_however_many_chunks_share_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage_module, "FOLDER_CHUNK", 5)
    listed: list[int] = []
    real_listing = storage_module._symlink_names

    def counting(fd: int) -> frozenset[str]:
        listed.append(fd)
        return real_listing(fd)

    monkeypatch.setattr(storage_module, "_symlink_names", counting)
    root = tmp_path / "t"
    _delete_three_folders_in_chunks(root)
    assert len(listed) == 3  # 18 chunks of 5 files, 3 folders


def test_local_a_folder_that_links_out_of_the_root_is_refused_whole(tmp_path: Path) -> None:
    root, outside = tmp_path / "t", tmp_path / "outside"
    outside.mkdir()
    (outside / "a.parquet").write_bytes(b"keep me")
    (root / "ok").mkdir(parents=True)
    (root / "ok" / "b.parquet").write_bytes(b"x")
    (root / "p").symlink_to(outside, target_is_directory=True)

    results = LocalStorage(str(root)).delete_many(["p/a.parquet", "ok/b.parquet"])

    assert results[0].deleted is False and results[0].error is not None
    assert "outside the table root" in results[0].error and str(root / "p") in results[0].error
    assert results[1] == DeleteResult("ok/b.parquet", True)
    assert (outside / "a.parquet").read_bytes() == b"keep me"


def test_local_a_folder_linked_inside_the_root_is_fine(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.parquet").write_bytes(b"x")
    (root / "alias").symlink_to(root / "real", target_is_directory=True)

    assert LocalStorage(str(root)).delete_many(["alias/a.parquet"]) == [DeleteResult("alias/a.parquet", True)]
    assert not (root / "real" / "a.parquet").exists()


def test_local_file_symlinks_out_are_refused_and_links_inside_removed_without_their_target(tmp_path: Path) -> None:
    root, outside = tmp_path / "t", tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_bytes(b"keep me")
    (root / "p").mkdir(parents=True)
    (root / "p" / "real.parquet").write_bytes(b"data")
    (root / "p" / "in.parquet").symlink_to(root / "p" / "real.parquet")
    (root / "p" / "out.parquet").symlink_to(outside / "precious")

    results = LocalStorage(str(root)).delete_many(["p/out.parquet", "p/in.parquet"])

    assert results[0].deleted is False and results[0].error is not None
    assert "symlink" in results[0].error and "outside the table root" in results[0].error
    assert (root / "p" / "out.parquet").is_symlink()
    assert results[1] == DeleteResult("p/in.parquet", True)
    assert (root / "p" / "real.parquet").read_bytes() == b"data"
    assert (outside / "precious").read_bytes() == b"keep me"


def test_local_a_directory_is_reported_not_deleted(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "p" / "d.parquet").mkdir(parents=True)

    [result] = LocalStorage(str(root)).delete_many(["p/d.parquet"])

    assert result.deleted is False
    assert result.error is not None and str(root / "p" / "d.parquet") in result.error
    assert (root / "p" / "d.parquet").is_dir()


# --- S3 ---------------------------------------------------------------------------------------------


@pytest.fixture
def s3_storage(request: pytest.FixtureRequest) -> tuple[ObjectStorage, S3Server, str]:
    server: S3Server = request.getfixturevalue("s3_server")
    bucket: str = request.getfixturevalue("s3_bucket")
    storage = storage_for(f"s3://{bucket}/wh/t", options=server.options())
    assert isinstance(storage, ObjectStorage)
    return storage, server, bucket



def _delete_three_folders_in_chunks(root: Path) -> None:
    """Delete 3 folders of 30 files each with 4 threads, with `FOLDER_CHUNK` patched small by the
    caller so that each folder is cut into several tasks; every file must be gone."""
    names = [f"p={p}/f{i:02d}.parquet" for p in range(3) for i in range(30)]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")

    results = LocalStorage(str(root)).delete_many(names, threads=4)

    assert all(r.deleted for r in results) and not list(root.rglob("*.parquet"))

def _count_delete_requests(storage: ObjectStorage) -> dict[str, int]:
    """Count the HTTP requests the storage's boto3 client sends, by operation (a real event hook)."""
    counts: dict[str, int] = {}

    def count(model: Any, **_: Any) -> None:
        counts[model.name] = counts.get(model.name, 0) + 1

    storage.options.boto3_client().meta.events.register("before-call.s3", count)
    return counts


@pytest.mark.s3
def test_s3_batches_deletes_and_never_asks_first(s3_storage: tuple[ObjectStorage, S3Server, str]) -> None:
    storage, server, bucket = s3_storage
    client = server.client()
    keys = [f"p={i % 3}/f{i:05d}.parquet" for i in range(2 * MAX_KEYS_PER_DELETE + 500)]
    seed_objects(bucket, [f"wh/t/{key}" for key in [*keys, "p=0/keep.parquet"]])
    requests = _count_delete_requests(storage)

    results = storage.delete_many([*keys, "p=9/never-existed.parquet"], threads=3)

    assert all(r.deleted and r.error is None for r in results)
    assert requests == {"DeleteObjects": 3}  # 2,501 keys: three requests, no HEAD, no GET
    left = [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix="wh/")["Contents"]]
    assert left == ["wh/t/p=0/keep.parquet"]


@pytest.mark.s3
def test_s3_a_failed_request_is_reported_for_every_key_of_its_batch(s3_server: S3Server) -> None:
    storage = storage_for("s3://no-such-bucket-for-runner/t", options=s3_server.options())

    results = storage.delete_many(["p/a.parquet", "p/b.parquet"])

    assert [r.deleted for r in results] == [False, False]
    for result, key in zip(results, ["p/a.parquet", "p/b.parquet"], strict=True):
        assert result.error is not None
        assert f"s3://no-such-bucket-for-runner/t/{key}" in result.error and "NoSuchBucket" in result.error


def test_s3_per_key_errors_are_matched_to_their_paths() -> None:
    # moto reports per-key errors only for versioned deletes of locked objects, which the runner
    # never sends, so the mapping of S3's documented answer shape is checked on its own.
    answer = {"Errors": [{"Key": "t/p/b.parquet", "Code": "AccessDenied", "Message": "Access Denied"}]}

    outcomes = batch_outcomes("bkt", [(0, "t/p/a.parquet"), (1, "t/p/b.parquet")], answer)

    assert outcomes == [(0, None), (1, "Cannot delete s3://bkt/t/p/b.parquet: AccessDenied: Access Denied")]


@pytest.mark.s3
def test_s3_an_endpoint_without_a_scheme_uses_the_scheme_option(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    client.put_object(Bucket=s3_bucket, Key="t/p/a.parquet", Body=b"x")
    hostport = s3_server.endpoint_url.removeprefix("http://")
    storage = storage_for(f"s3://{s3_bucket}/t", options={**s3_server.options(), "endpoint_override": hostport,
                                                         "scheme": "http"})

    assert storage.delete_many(["p/a.parquet"]) == [DeleteResult("p/a.parquet", True)]
    assert "Contents" not in client.list_objects_v2(Bucket=s3_bucket, Prefix="t/")


def test_local_bulk_delete_runs_without_the_cyclic_collector(tmp_path: Path) -> None:
    """Thousands of results and none in a cycle: a collection would walk the whole heap while the
    pool's threads wait for the GIL, so none runs during the delete (one young collection may run
    as the block ends, the first after it), and the collector is back on afterwards."""
    import gc

    storage = LocalStorage(str(tmp_path))
    names = [f"p={i % 4}/f{i}.parquet" for i in range(3_000)]
    for name in names:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        assert gc.isenabled()
        results = storage.delete_many(names, threads=4)
        during = list(collections)
        gc.collect()
    finally:
        gc.callbacks.remove(count)
    assert all(r.deleted for r in results) and len(results) == len(names)
    assert len(during) <= 1, f"collections during the delete: {during}"
    assert gc.isenabled() and collections, "the collector did not run again afterwards"


def test_local_tasks_are_cut_so_the_pool_finishes_together(monkeypatch: pytest.MonkeyPatch) -> None:
    # 100 folders of 401 files on 32 threads: one task per folder left the last round to 4 threads.
    by_folder = {f"p={p}": [(p * 1000 + i, f"f{i}.parquet") for i in range(401)] for p in range(100)}

    chunks = storage_module._interleaved_chunks(by_folder, 32 * storage_module.TASKS_PER_THREAD)

    sizes = [len(entries) for _, entries in chunks]
    assert len(chunks) >= 32 * storage_module.TASKS_PER_THREAD
    assert max(sizes) - min(sizes) <= 1  # each folder cut into equal parts
    assert min(sizes) >= storage_module.MIN_CHUNK
    assert sorted(e for _, entries in chunks for e in entries) == sorted(e for v in by_folder.values() for e in v)
    # Never below MIN_CHUNK, however many tasks are asked for; small folders stay whole.
    tiny = storage_module._interleaved_chunks({"p": [(i, f"f{i}") for i in range(50)], "q": [(99, "g")]}, 1000)
    assert [len(entries) for _, entries in tiny] == [25, 1, 25]


def test_local_each_folder_is_proven_once_however_many_chunks_share_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage_module, "FOLDER_CHUNK", 5)
    proofs: list[str] = []
    real_proof = storage_module._folder_refusal

    def counting(fd: int, full: str, real_root: str) -> str | None:
        proofs.append(full)
        return real_proof(fd, full, real_root)

    monkeypatch.setattr(storage_module, "_folder_refusal", counting)
    root = tmp_path / "t"
    _delete_three_folders_in_chunks(root)
    assert sorted(proofs) == sorted(str(root / f"p={p}") for p in range(3))  # 18 chunks, 3 proofs


def test_local_a_folder_swapped_after_its_proof_is_proven_again(tmp_path: Path) -> None:
    # A later chunk that opens a different directory under the proven name (the folder was replaced
    # by a link out of the root) must not reuse the proof.
    root, outside = tmp_path / "t", tmp_path / "outside"
    (root / "p").mkdir(parents=True)
    outside.mkdir()
    proofs = storage_module._FolderProofs(["p"], str(root.resolve()))
    flags = os.O_RDONLY | os.O_DIRECTORY
    first = os.open(root / "p", flags)
    try:
        assert proofs.of("p", first, str(root / "p")) == (None, frozenset())
    finally:
        os.close(first)
    (root / "p").rmdir()
    (root / "p").symlink_to(outside, target_is_directory=True)
    second = os.open(root / "p", flags)
    try:
        refusal, _ = proofs.of("p", second, str(root / "p"))
    finally:
        os.close(second)
    assert refusal is not None and "outside the table root" in refusal
