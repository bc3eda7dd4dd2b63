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
- A put becomes visible only when complete, so readers never see a partial object and `overwrite`
  is atomic in that sense.
- Deleting the last object under a prefix makes pyarrow leave an empty `prefix/` marker object, as
  Hadoop's S3A does, so the "directory" keeps existing. Markers are listed as directories and
  never returned by `walk`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from runner.errors import StorageError
from runner.hudi.storage import AlreadyExists, FileInfo, check_fence, child, normalize, refuse_root

# S3's answers to a conditional request that lost: the condition failed, or a rival conditional
# write on the same key was in progress.
_LOST_CONDITION = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")
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
        for key, names in _ENV_FALLBACKS.items():
            if key not in given and key not in skip_env:
                found = next((env[n] for n in names if env.get(n)), None)
                if found:
                    given[key] = found
        return cls(**given)

    def filesystem(self) -> pafs.S3FileSystem:
        """A pyarrow S3 file system for these settings."""
        kwargs = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}
        return pafs.S3FileSystem(**kwargs)

    def client(self) -> Any:
        """A boto3 S3 client for the same settings (conditional requests, which pyarrow cannot send)."""
        import boto3  # only object-store tables need it; keeps `runner validate` light

        endpoint = self.endpoint_override
        if endpoint and "://" not in endpoint:
            endpoint = f"{self.scheme or 'https'}://{endpoint}"
        session = boto3.session.Session(
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            aws_session_token=self.session_token,
            region_name=self.region,
        )
        return session.client("s3", endpoint_url=endpoint or None)


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
                                                                         IfNoneMatch="*")):
            raise AlreadyExists(self._location(rel))

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
            "overwrite", rel, lambda c, k: c.put_object(Bucket=self.bucket, Key=k, Body=data, IfMatch=etag))

    def delete_if(self, path: str, expected: bytes) -> bool:
        rel = normalize(path)
        refuse_root(rel, "delete", self.uri)
        etag = self._etag_if_holds(rel, expected)
        return etag is not None and self._conditional(
            "delete", rel, lambda c, k: c.delete_object(Bucket=self.bucket, Key=k, IfMatch=etag))

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

    def _client(self) -> Any:
        if not self._boto:
            self._boto.append(self.options.client())
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
            if _error_code(e) in _MISSING:
                return None
            raise self._error("read", rel, e) from e
        return str(found["ETag"]) if body == expected else None

    def _conditional(self, action: str, rel: str, request: Any) -> bool:
        """Send one conditional request; False if S3 refused it because its condition failed."""
        try:
            request(self._client(), self._object_key(rel))
        except Exception as e:
            code = _error_code(e)
            if code in _LOST_CONDITION or (action != "write" and code in _MISSING):
                return False
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


def _error_code(error: Exception) -> str | None:
    """The S3 error code of a botocore `ClientError` (None for any other exception)."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return None if code is None else str(code)
