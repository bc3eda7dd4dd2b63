"""From a table's base path (a local path, `file://` or `s3://` URI) to the `Storage` that serves it."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from runner.errors import StorageError
from runner.storage.base import Storage
from runner.storage.local import LocalStorage

SUPPORTED_SCHEMES = ("file", "s3", "s3a")


def storage_for(uri: str, *, options: Mapping[str, str] | None = None) -> Storage:
    """The storage for a table base path.

    Args:
        uri: a local path, a `file://` URI, or `s3://bucket/prefix` (`s3a://` is accepted, as Spark
            configurations usually spell it).
        options: object-store settings (see `runner.storage.s3.S3Options`); ignored for local
            paths so one project-wide setting can cover tables in both places.

    Raises:
        StorageError: the path is empty or its scheme is not one of `SUPPORTED_SCHEMES`.
    """
    if not uri.strip():
        raise StorageError("The table path is empty; expected a local path or s3://bucket/prefix.")
    scheme = urlsplit(uri).scheme.lower() if "://" in uri else ""
    if scheme == "":
        return LocalStorage(uri)
    if scheme == "file":
        return LocalStorage(_file_uri_path(uri))
    if scheme in ("s3", "s3a"):
        from runner.storage.s3 import ObjectStorage  # pyarrow is imported only when needed

        return ObjectStorage.from_uri(uri, options=options)
    raise StorageError(
        f"Unsupported storage scheme {scheme!r} in {uri}; supported: plain paths, "
        + ", ".join(f"{s}://" for s in SUPPORTED_SCHEMES)
        + ".",
    )


def _file_uri_path(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise StorageError(f"Unsupported file URI {uri}: only local files (file:///path) are supported.")
    return unquote(parts.path)
