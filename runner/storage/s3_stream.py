"""`create_new` on S3 with bounded memory: a multipart upload completed with `If-None-Match: *`.

S3 creates an object from one request, so a file streamed by its writer (a resize's or the writer's
new base file) would otherwise have to be held whole in memory for one conditional PUT. Since 2024
S3 accepts `If-None-Match: *` on CompleteMultipartUpload too: the parts are uploaded as the writer
produces them, invisible to every reader, and the object appears only when the upload completes,
and only if nothing holds its key by then. A file smaller than one part is sent as one conditional
PUT, exactly as `write_new` sends it. (This is part of `s3.ObjectStorage`, in its own module; it
uses that class's request helpers.)

If the block raises, the upload is aborted and nothing is published. If the process dies, the
parts of an unfinished upload stay in the bucket, invisible, until S3's
`AbortIncompleteMultipartUpload` lifecycle rule (recommended in the README) removes them.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from runner.storage.base import AlreadyExists
from runner.storage.fence import check_fence

if TYPE_CHECKING:
    from runner.storage.s3 import ObjectStorage

# S3's smallest part (but the last) is 5 MiB and an upload holds at most 10,000 parts. 16 MiB parts
# keep a task's buffer small while allowing objects of 160 GB, far above any Hudi base file.
PART_BYTES = 16 * 1024 * 1024


class _PartStream(io.RawIOBase):
    """A write-only stream that hands each full part of `part_bytes` to `on_part` as it fills."""

    def __init__(self, part_bytes: int, on_part: Callable[[bytes], None]) -> None:
        super().__init__()
        self._part_bytes = part_bytes
        self._on_part = on_part
        self._pending = bytearray()
        self._written = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._pending += view
        self._written += len(view)
        while len(self._pending) >= self._part_bytes:
            part = bytes(self._pending[: self._part_bytes])
            del self._pending[: self._part_bytes]
            self._on_part(part)
        return len(view)

    def tell(self) -> int:
        return self._written

    def rest(self) -> bytes:
        """What is left after the last full part (possibly everything, for a small file)."""
        return bytes(self._pending)


class _Upload:
    """One multipart upload, started by its first part."""

    def __init__(self, storage: ObjectStorage, rel: str) -> None:
        self._storage = storage
        self._rel = rel
        self._key = storage._object_key(rel)
        self._client = storage._client()
        self._id: str | None = None
        self._parts: list[dict[str, Any]] = []
        self._digests: list[bytes] = []

    @property
    def started(self) -> bool:
        return self._id is not None

    def add(self, part: bytes) -> None:
        """Send one part (starting the upload with the first).

        Raises:
            StorageError: S3 refused or never answered (after boto3's retries).
        """
        bucket = self._storage.bucket
        number = len(self._parts) + 1
        try:
            if self._id is None:
                self._id = str(self._client.create_multipart_upload(Bucket=bucket, Key=self._key)["UploadId"])
            answer = self._client.upload_part(Bucket=bucket, Key=self._key, UploadId=self._id,
                                              PartNumber=number, Body=part)
        except Exception as e:
            raise self._storage._error(f"upload part {number} of", self._rel, e) from e
        self._parts.append({"PartNumber": number, "ETag": answer["ETag"]})
        self._digests.append(hashlib.md5(part, usedforsecurity=False).digest())

    def complete(self) -> bool:
        """Publish the object unless its key is taken; False if it was.

        Whatever S3 answers, an object whose ETag is this upload's (the MD5 of exactly our parts)
        was published by us: a retried completion may trip over the first attempt's success with a
        412 or, once the upload id is spent, a `NoSuchUpload`.

        Raises:
            StorageError: S3 failed the completion for another reason.
        """
        from runner.storage.s3 import LOST_CONDITION, error_code  # s3 imports this module

        try:
            self._client.complete_multipart_upload(Bucket=self._storage.bucket, Key=self._key, UploadId=self._id,
                                                   MultipartUpload={"Parts": self._parts}, IfNoneMatch="*")
        except Exception as e:
            if self._published():
                return True
            if error_code(e) in LOST_CONDITION:
                return False
            raise self._storage._error("complete the upload of", self._rel, e) from e
        return True

    def abort(self) -> None:
        if self._id is not None:
            try:
                self._client.abort_multipart_upload(Bucket=self._storage.bucket, Key=self._key, UploadId=self._id)
            except Exception:  # best effort: S3's lifecycle rule removes what an abort leaves
                pass

    def _published(self) -> bool:
        """Whether the object now is this upload: S3 names a multipart object by the MD5 of its
        parts' MD5s and their count."""
        expected = f'"{hashlib.md5(b"".join(self._digests), usedforsecurity=False).hexdigest()}-{len(self._parts)}"'
        try:
            head = self._client.head_object(Bucket=self._storage.bucket, Key=self._key)
        except Exception:  # unknown counts as not ours, so the caller fails safe
            return False
        return str(head.get("ETag")) == expected


@contextmanager
def streamed_create(storage: ObjectStorage, rel: str, *, part_bytes: int = PART_BYTES) -> Iterator[BinaryIO]:
    """`Storage.create_new` for S3: see the module docstring."""
    check_fence(storage.uri)
    if storage.stat(rel) is not None:
        raise AlreadyExists(storage._location(rel))
    upload = _Upload(storage, rel)
    stream = _PartStream(part_bytes, upload.add)
    try:
        yield cast(BinaryIO, stream)
        if not upload.started:
            storage.write_new(rel, stream.rest())
            return
        if stream.rest():
            upload.add(stream.rest())
        check_fence(storage.uri)
        if not upload.complete():
            raise AlreadyExists(storage._location(rel))
    except BaseException:
        upload.abort()
        raise
