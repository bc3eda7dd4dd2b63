"""Table storage on S3 and S3-compatible stores, through `pyarrow.fs.S3FileSystem`.

S3 has no directories and no rename; the semantics of `Storage` map onto it as follows:

- A "directory" is a key prefix. Listing a missing prefix gives `[]`, as locally.
- `write_new` is a conditional put (`If-None-Match: *`), so S3 itself guarantees that of two
  creators of one key exactly one succeeds; the loser gets 412 (or 409 while the winner's put is
  still in progress) and raises `AlreadyExists`. pyarrow's file system cannot send that header, so
  conditional requests go through boto3. The store must honour conditional requests, as AWS S3
  does (If-None-Match puts since 2024, If-Match puts and deletes since); an S3-compatible store
  that ignores the headers silently loses this guarantee, so check yours before relying on it.
- `replace_if` and `delete_if` read the object, compare its bytes and then put or delete with
  `If-Match: <ETag read>`, so the change happens only if nobody wrote the object in between.
- boto3 retries a request whose answer was lost (a dropped connection, a 5xx). If the first
  attempt of a conditional request took effect, its retry fails its own condition (412, or 404 for
  a delete). Such a failure after a retry is checked against the object: if it now holds the bytes
  we sent (or, for a delete, is gone), the request is reported as done, so a blip on the network
  never leaves a lock or an instant file of ours behind as if someone else had written it.
- A put becomes visible only when complete, so readers never see a partial object and `overwrite`
  is atomic in that sense.
- `create_new` streams a large file as a multipart upload whose completion carries the same
  `If-None-Match: *` (S3 has honoured it there since 2024): parts are invisible until the upload
  completes, and a writer's memory stays at one part (see `s3_stream`).
- Deleting the last object under a prefix makes pyarrow leave an empty `prefix/` marker object, as
  Hadoop's S3A does, so the "directory" keeps existing. Markers are listed as directories and
  never returned by `walk`.
- `delete_many` goes through boto3 rather than pyarrow: pyarrow has no bulk delete of named keys.
  It sends DeleteObjects requests of up to 1,000 keys (S3's limit) in quiet mode, a few at a time,
  and never asks first whether a key exists: deleting a missing key succeeds, and it is already
  gone. S3 reports failures per key (`Errors`), and so does `delete_many`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from typing import Any, BinaryIO, cast
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from runner.errors import StorageError
from runner.storage.base import (
    DEFAULT_DELETE_THREADS,
    AlreadyExists,
    DeleteResult,
    FileInfo,
    admit_deletes,
    child,
    normalize,
    refuse_root,
)
from runner.storage.fence import check_fence
from runner.storage.s3_stream import streamed_create

# S3's DeleteObjects accepts at most 1,000 keys per request.
MAX_KEYS_PER_DELETE = 1000
# S3's answers to a conditional request that lost: the condition failed, or a rival conditional
# write on the same key was in progress.
LOST_CONDITION = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")
_MISSING = ("NoSuchKey", "404", "NotFound")

_ENV_FALLBACKS = {
    "endpoint_override": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "access_key": ("AWS_ACCESS_KEY_ID",),
    "secret_key": ("AWS_SECRET_ACCESS_KEY",),
    "session_token": ("AWS_SESSION_TOKEN",),
}
_CREDENTIALS = ("access_key", "secret_key", "session_token")


@dataclass(frozen=True, slots=True)
class S3Options:
    """Connection settings, resolved once so a pickled storage behaves the same on every executor.

    Each field comes from the storage `options` key of the same name, else from the standard AWS
    environment variable (`AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL`, `AWS_REGION`/`AWS_DEFAULT_REGION`,
    `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), else is left to pyarrow,
    which then uses the AWS default chain (`~/.aws`, instance profile). Credentials are taken as a
    group: if `options` names any of them, none is read from the environment, so a key from one
    identity is never paired with a token from another. Resolved credentials travel inside the
    pickled storage; they never appear in its `repr`.

    Args:
        endpoint_override: `host:port` or a full URL such as `http://127.0.0.1:9000`.
        region: the bucket's region.
        scheme: `https` (default) or `http`, for an endpoint given without a URL scheme.
    """

    endpoint_override: str | None = None
    region: str | None = None
    scheme: str | None = None
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(cls, options: Mapping[str, str] | None, env: Mapping[str, str]) -> S3Options:
        """Merge explicit `options` with the environment `env`.

        Raises:
            StorageError: an option key is not one of the fields above (most likely a typo).
        """
        given = dict(options or {})
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise StorageError(
                f"Unknown S3 storage option(s) {', '.join(unknown)}; supported: {', '.join(known)}."
            )
        skip_env = set(_CREDENTIALS) if given.keys() & set(_CREDENTIALS) else set()
        origin = {key: f"option {key}" for key in given}
        for key, names in _ENV_FALLBACKS.items():
            if key not in given and key not in skip_env:
                found = next((n for n in names if env.get(n)), None)
                if found:
                    given[key], origin[key] = env[found], found
        if given.get("endpoint_override"):
            _check_endpoint(given["endpoint_override"], origin["endpoint_override"])
        return cls(**given)

    def boto3_client(self) -> Any:
        """A boto3 S3 client for these settings (shared: boto3 clients are thread-safe)."""
        return _boto3_client(self)

    def filesystem(self) -> pafs.S3FileSystem:
        """A pyarrow S3 file system for these settings."""
        kwargs = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}
        return pafs.S3FileSystem(**kwargs)


def _check_endpoint(endpoint: str, origin: str) -> None:
    """Refuse an endpoint no client can reach before one tries: pyarrow reads a stray space as a bad
    DNS label and `ftp://host` as a host named `ftp`, and neither message names the variable."""
    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    try:
        parts.port  # noqa: B018 -- raises ValueError for a port that is no number
    except ValueError:
        parts = parts._replace(netloc="")
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or any(c.isspace() for c in endpoint):
        fix = f"correct {origin} in the environment, or unset it to use AWS's own endpoint." \
            if origin.startswith("AWS_") else f"correct the storage {origin}."
        raise StorageError(f"the S3 endpoint {origin} is {endpoint!r}: expected host:port or an http(s) URL such as "
                           "http://127.0.0.1:9000", hint=fix)


@dataclass(frozen=True, slots=True)
class ObjectStorage:
    """A table under `s3://bucket/prefix` (or `s3a://`). See the module docstring for semantics."""

    uri: str
    options: S3Options
    bucket: str = field(init=False)
    prefix: str = field(init=False)
    _fs: pafs.S3FileSystem = field(init=False, repr=False, compare=False)
    _boto: list[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.uri)
        if parts.scheme.lower() not in ("s3", "s3a") or not parts.netloc or parts.query or parts.fragment:
            raise StorageError(f"Invalid object-store URI {self.uri}: expected s3://bucket/prefix.")
        object.__setattr__(self, "bucket", parts.netloc)
        object.__setattr__(self, "prefix", normalize(parts.path.lstrip("/")))
        object.__setattr__(self, "_fs", self.options.filesystem())
        object.__setattr__(self, "_boto", [])  # built on first use: most tasks never need it

    @classmethod
    def from_uri(
        cls, uri: str, *, options: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None
    ) -> ObjectStorage:
        """The storage for `uri`, with `options` resolved against `env` (default: `os.environ`)."""
        return cls(uri, S3Options.resolve(options, os.environ if env is None else env))

    def __reduce__(self) -> tuple[type[ObjectStorage], tuple[str, S3Options]]:
        # The pyarrow file system holds a native client; rebuild it from the settings after unpickling.
        return (ObjectStorage, (self.uri, self.options))

    def list_dir(self, path: str) -> list[FileInfo]:
        rel = normalize(path)
        selector = pafs.FileSelector(self._key(rel), recursive=False, allow_not_found=True)
        return sorted((self._info(i) for i in self._list(selector, rel)), key=lambda i: i.path)

    def walk(self, path: str = "") -> Iterator[FileInfo]:
        rel = normalize(path)
        selector = pafs.FileSelector(self._key(rel), recursive=True, allow_not_found=True)
        infos = (self._info(i) for i in self._list(selector, rel) if i.type == pafs.FileType.File)
        yield from sorted(infos, key=lambda i: i.path)

    def read(self, path: str) -> bytes:
        rel = normalize(path)
        try:
            with self._fs.open_input_stream(self._key(rel)) as f:
                return bytes(f.read())
        except FileNotFoundError as e:
            raise StorageError(f"Cannot read {self._location(rel)}: no such file.") from e
        except OSError as e:
            raise self._error("read", rel, e) from e

    def stat(self, path: str) -> FileInfo | None:
        rel = normalize(path)
        info = self._get_info(rel)
        return None if info.type == pafs.FileType.NotFound else self._info(info)

    def write_new(self, path: str, data: bytes) -> None:
        """Create `path` unless it exists, with a conditional put (`If-None-Match: *`)."""
        check_fence(self.uri)
        rel = normalize(path)
        refuse_root(rel, "create", self.uri)
        if not self._conditional("write", rel, lambda c, k: c.put_object(Bucket=self.bucket, Key=k, Body=data,
                                                                         IfNoneMatch="*"),
                                 took_effect=lambda: self._holds(rel, data)):
            raise AlreadyExists(self._location(rel))

    def create_new(self, path: str) -> AbstractContextManager[BinaryIO]:
        """Streamed in parts of `s3_stream.PART_BYTES` through a multipart upload completed with
        `If-None-Match: *`, so memory stays bounded; a smaller file is one conditional put."""
        rel = normalize(path)
        refuse_root(rel, "create", self.uri)
        return streamed_create(self, rel)

    def open_input(self, path: str) -> BinaryIO:
        """A seekable reader that fetches byte ranges on demand (the Parquet footer, column chunks)."""
        rel = normalize(path)
        try:
            return cast(BinaryIO, self._fs.open_input_file(self._key(rel)))
        except FileNotFoundError as e:
            raise StorageError(f"Cannot read {self._location(rel)}: no such file.") from e
        except OSError as e:
            raise self._error("read", rel, e) from e

    def overwrite(self, path: str, data: bytes) -> None:
        check_fence(self.uri)
        rel = normalize(path)
        refuse_root(rel, "overwrite", self.uri)
        self._put(rel, data)

    def replace_if(self, path: str, expected: bytes, data: bytes) -> bool:
        rel = normalize(path)
        refuse_root(rel, "overwrite", self.uri)
        etag = self._etag_if_holds(rel, expected)
        return etag is not None and self._conditional(
            "overwrite", rel, lambda c, k: c.put_object(Bucket=self.bucket, Key=k, Body=data, IfMatch=etag),
            took_effect=lambda: self._holds(rel, data))

    def delete_if(self, path: str, expected: bytes) -> bool:
        rel = normalize(path)
        refuse_root(rel, "delete", self.uri)
        etag = self._etag_if_holds(rel, expected)
        return etag is not None and self._conditional(
            "delete", rel, lambda c, k: c.delete_object(Bucket=self.bucket, Key=k, IfMatch=etag),
            took_effect=lambda: self.stat(rel) is None)

    def delete(self, path: str) -> bool:
        check_fence(self.uri)
        rel = normalize(path)
        refuse_root(rel, "delete", self.uri)
        kind = self._get_info(rel).type
        if kind == pafs.FileType.NotFound:
            return False
        if kind == pafs.FileType.Directory:
            raise StorageError(f"Cannot delete {self._location(rel)}: it is a directory; use delete_tree.")
        try:
            self._fs.delete_file(self._key(rel))
        except OSError as e:
            raise self._error("delete", rel, e) from e
        return True

    def delete_tree(self, path: str) -> int:
        """Delete every object under `path` in batched requests; returns how many files were listed.

        Objects written under the prefix while this runs may be deleted without being counted.
        """
        check_fence(self.uri)
        rel = normalize(path)
        refuse_root(rel, "delete", self.uri)
        kind = self._get_info(rel).type
        if kind != pafs.FileType.Directory:
            return int(self.delete(rel))
        count = sum(1 for _ in self.walk(rel))
        try:
            self._fs.delete_dir(self._key(rel))
        except OSError as e:
            raise self._error("delete", rel, e) from e
        return count

    def remove_empty_folder(self, path: str) -> bool:
        """A prefix holding no object but `dir/` markers: those markers are deleted, each by its exact
        key (never the prefix: an object written under it meanwhile stays)."""
        check_fence(self.uri)
        rel = normalize(path)
        refuse_root(rel, "delete", self.uri)
        selector = pafs.FileSelector(self._key(rel), recursive=True, allow_not_found=True)
        found = self._list(selector, rel)
        if any(i.type != pafs.FileType.Directory for i in found):
            return False
        markers = [f"{self._object_key(r)}/" for r in [rel, *(self._relative(i.path) for i in found)]]
        client = self._client()
        for start in range(0, len(markers), MAX_KEYS_PER_DELETE):
            batch = list(enumerate(markers[start:start + MAX_KEYS_PER_DELETE]))
            failed = [reason for _, reason in self._delete_batch(client, batch) if reason]
            if failed:
                raise StorageError(failed[0])
        return True

    def delete_many(self, paths: Sequence[str], *, threads: int = DEFAULT_DELETE_THREADS) -> list[DeleteResult]:
        """Delete objects with batched DeleteObjects requests; one result per path, in order."""
        check_fence(self.uri)
        results, admitted = admit_deletes(paths, self.uri)
        keyed = [(index, self._object_key(rel)) for index, rel in admitted]
        batches = [keyed[i:i + MAX_KEYS_PER_DELETE] for i in range(0, len(keyed), MAX_KEYS_PER_DELETE)]
        client = self.options.boto3_client()
        workers = max(1, min(threads, len(batches)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="s3-delete") as pool:
            for outcomes in pool.map(lambda batch: self._delete_batch(client, batch), batches):
                for index, failure in outcomes:
                    results[index] = DeleteResult(paths[index], failure is None, failure)
        return [r for r in results if r is not None]

    def _delete_batch(self, client: Any, batch: list[tuple[int, str]]) -> list[tuple[int, str | None]]:
        """One DeleteObjects request; quiet mode, so the answer lists only the keys that failed."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            answer = client.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": key} for _, key in batch], "Quiet": True},
            )
        except (BotoCoreError, ClientError) as error:
            reason = f"the DeleteObjects request failed: {error}"
            return [(index, f"Cannot delete s3://{self.bucket}/{key}: {reason}") for index, key in batch]
        return batch_outcomes(self.bucket, batch, answer)

    def _client(self) -> Any:
        if not self._boto:
            self._boto.append(self.options.boto3_client())
        return self._boto[0]

    def _object_key(self, rel: str) -> str:
        """The S3 key (without the bucket) of a root-relative path."""
        return "/".join(p for p in (self.prefix, rel) if p)

    def _etag_if_holds(self, rel: str, expected: bytes) -> str | None:
        """The object's ETag if it exists and holds exactly `expected`, else None."""
        try:
            found = self._client().get_object(Bucket=self.bucket, Key=self._object_key(rel))
            body = found["Body"].read()
        except Exception as e:
            if error_code(e) in _MISSING:
                return None
            raise self._error("read", rel, e) from e
        return str(found["ETag"]) if body == expected else None

    def _holds(self, rel: str, data: bytes) -> bool:
        return self._etag_if_holds(rel, data) is not None

    def _conditional(self, action: str, rel: str, request: Any, *, took_effect: Callable[[], bool]) -> bool:
        """Send one conditional request; False if S3 refused it because its condition failed.

        A refusal that came after boto3 retried may be the retry tripping over the first attempt's
        own success; `took_effect` then tells whether the object is in the state we asked for.
        """
        try:
            request(self._client(), self._object_key(rel))
        except Exception as e:
            code = error_code(e)
            if code in LOST_CONDITION or (action != "write" and code in _MISSING):
                return _retried(e) and took_effect()
            raise self._error(action, rel, e) from e
        return True

    def _key(self, rel: str) -> str:
        return "/".join(p for p in (self.bucket, self.prefix, rel) if p)

    def _location(self, rel: str) -> str:
        return child(self.uri.rstrip("/"), rel) if rel else self.uri

    def _relative(self, key: str) -> str:
        base = self._key("")
        return key[len(base) + 1 :] if key.startswith(base + "/") else ""

    def _info(self, info: pafs.FileInfo) -> FileInfo:
        is_dir = info.type == pafs.FileType.Directory
        mtime = info.mtime_ns
        return FileInfo(
            self._relative(info.path),
            0 if is_dir else int(info.size or 0),
            is_dir,
            None if mtime is None else mtime // 1_000_000,
        )

    def _list(self, selector: pafs.FileSelector, rel: str) -> list[pafs.FileInfo]:
        try:
            return list(self._fs.get_file_info(selector))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise self._error("list", rel, e) from e

    def _get_info(self, rel: str) -> pafs.FileInfo:
        try:
            return self._fs.get_file_info(self._key(rel))
        except OSError as e:
            raise self._error("stat", rel, e) from e

    def _put(self, rel: str, data: bytes) -> None:
        try:
            with self._fs.open_output_stream(self._key(rel)) as f:
                f.write(data)
        except OSError as e:
            raise self._error("write", rel, e) from e

    def _error(self, action: str, rel: str, error: Exception) -> StorageError:
        return StorageError(f"Cannot {action} {self._location(rel)}: {error}")


def batch_outcomes(
    bucket: str, batch: list[tuple[int, str]], answer: Mapping[str, Any]
) -> list[tuple[int, str | None]]:
    """Per key of a quiet DeleteObjects request: None if deleted, else the store's reason.

    Quiet mode lists only failures (`Errors`: `Key`, `Code`, `Message`); every other key was deleted.
    """
    failed = {
        str(e.get("Key", "")): f"{e.get('Code', 'Error')}: {e.get('Message', 'no message')}"
        for e in answer.get("Errors", ())
    }
    return [
        (index, f"Cannot delete s3://{bucket}/{key}: {failed[key]}" if key in failed else None) for index, key in batch
    ]


@functools.lru_cache(maxsize=16)
def _boto3_client(options: S3Options) -> Any:
    # Creating a client costs about 0.1 s; one per distinct setting serves every thread and table.
    import boto3
    from botocore.config import Config

    endpoint = options.endpoint_override
    if endpoint and "://" not in endpoint:
        endpoint = f"{options.scheme or 'https'}://{endpoint}"
    session = boto3.session.Session(
        aws_access_key_id=options.access_key,
        aws_secret_access_key=options.secret_key,
        aws_session_token=options.session_token,
        region_name=options.region,
    )
    # One connection per pool thread, so parallel batches never wait for a free connection.
    config = Config(max_pool_connections=max(10, DEFAULT_DELETE_THREADS), retries={"mode": "standard"})
    return session.client("s3", endpoint_url=endpoint, config=config)


def _retried(error: Exception) -> bool:
    """Whether botocore sent the request more than once before this error came back."""
    response = getattr(error, "response", None)
    metadata = response.get("ResponseMetadata", {}) if isinstance(response, dict) else {}
    return bool(metadata.get("RetryAttempts"))


def error_code(error: Exception) -> str | None:
    """The S3 error code of a botocore `ClientError` (None for any other exception)."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return None if code is None else str(code)
