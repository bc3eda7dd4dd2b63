"""`create_new` on the local S3 server: large files go up as a multipart upload completed with
`If-None-Match: *`, with one part in memory; small ones as one conditional put."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runner.errors import StorageError
from runner.storage import AlreadyExists
from runner.storage.s3 import ObjectStorage
from runner.storage.s3_stream import streamed_create
from tests.s3 import botocore_hooks

pytestmark = pytest.mark.s3

MIB = 1024 * 1024
PART = 5 * MIB  # S3's smallest part, which the local server enforces as S3 does


@contextmanager
def requests_seen(storage: ObjectStorage) -> Iterator[list[str]]:
    """The names of the S3 operations the storage's boto3 client sends inside the block."""
    seen: list[str] = []

    def record(model: Any, **_: Any) -> None:
        seen.append(model.name)

    with botocore_hooks(storage._client(), {"before-call.s3": record}):
        yield seen


def pending_uploads(s3: ObjectStorage) -> list[Any]:
    return list(s3._client().list_multipart_uploads(Bucket=s3.bucket).get("Uploads", []))


def write_in_chunks(out: Any, data: bytes, chunk: int = 1 * MIB) -> None:
    for start in range(0, len(data), chunk):
        out.write(data[start : start + chunk])


def test_a_large_file_is_uploaded_in_parts_and_published_whole(s3: ObjectStorage) -> None:
    data = os.urandom(2 * PART + 123)
    with requests_seen(s3) as seen, streamed_create(s3, "p/a.parquet", part_bytes=PART) as out:
        write_in_chunks(out, data)
        assert s3.stat("p/a.parquet") is None  # invisible until the upload completes
        assert out.tell() == len(data)

    assert s3.read("p/a.parquet") == data
    assert seen.count("UploadPart") == 3 and seen.count("CompleteMultipartUpload") == 1
    assert "PutObject" not in seen
    assert pending_uploads(s3) == []


def test_a_file_smaller_than_a_part_is_one_conditional_put(s3: ObjectStorage) -> None:
    with requests_seen(s3) as seen, s3.create_new("p/a.parquet") as out:
        out.write(b"PAR1rows")

    assert s3.read("p/a.parquet") == b"PAR1rows"
    assert "PutObject" in seen and "CreateMultipartUpload" not in seen


def test_parts_leave_as_they_fill_so_memory_stays_at_one_part(s3: ObjectStorage) -> None:
    chunk = os.urandom(MIB)
    with requests_seen(s3) as seen, streamed_create(s3, "p/big.parquet", part_bytes=PART) as out:
        for written in range(1, 41):
            out.write(chunk)
            # Every full part has been sent by the time the write returns: at most one part waits.
            assert seen.count("UploadPart") == written * MIB // PART

    info = s3.stat("p/big.parquet")
    assert info is not None and info.size == 40 * MIB
    assert seen.count("UploadPart") == 8  # 40 MiB is eight full parts and nothing left over


def test_an_existing_target_is_refused_before_anything_is_streamed(s3: ObjectStorage) -> None:
    s3.write_new("p/a.parquet", b"first")
    entered = False

    with pytest.raises(AlreadyExists), s3.create_new("p/a.parquet"):
        entered = True

    assert not entered
    assert s3.read("p/a.parquet") == b"first"


def test_a_rival_that_creates_the_target_during_the_upload_wins(s3: ObjectStorage) -> None:
    with pytest.raises(AlreadyExists), streamed_create(s3, "p/a.parquet", part_bytes=PART) as out:
        write_in_chunks(out, os.urandom(PART + 1))
        s3.write_new("p/a.parquet", b"rival")

    assert s3.read("p/a.parquet") == b"rival"
    assert pending_uploads(s3) == []  # our parts were aborted


def test_a_failing_writer_publishes_nothing_and_leaves_no_parts(s3: ObjectStorage) -> None:
    with pytest.raises(ValueError, match="bad row"), streamed_create(s3, "p/a.parquet", part_bytes=PART) as out:
        write_in_chunks(out, os.urandom(PART + 1))
        raise ValueError("bad row")

    assert s3.stat("p/a.parquet") is None
    assert pending_uploads(s3) == []


def test_a_part_that_cannot_be_sent_fails_with_a_storage_error_naming_the_file(s3: ObjectStorage) -> None:
    from botocore.exceptions import EndpointConnectionError

    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9")

    with botocore_hooks(s3._client(), {"before-call.s3.UploadPart": unreachable}), \
            pytest.raises(StorageError, match=r"Cannot upload part 1 of s3://.*/p/a\.parquet: Could not connect"), \
            streamed_create(s3, "p/a.parquet", part_bytes=PART) as out:
        write_in_chunks(out, os.urandom(PART + 1))

    assert s3.stat("p/a.parquet") is None
    assert pending_uploads(s3) == []


def test_a_completion_whose_answer_was_lost_is_reported_as_published(s3: ObjectStorage) -> None:
    seen: list[int] = []

    def lose_first_answer(attempts: int, **_: Any) -> int | None:
        seen.append(attempts)
        return 0 if attempts == 1 else None  # retry at once, once

    data = os.urandom(PART + 7)
    with botocore_hooks(s3._client(), {"needs-retry.s3.CompleteMultipartUpload": lose_first_answer}), \
            streamed_create(s3, "p/a.parquet", part_bytes=PART) as out:
        write_in_chunks(out, data)

    assert seen[:2] == [1, 2], "the completion was not retried"
    assert s3.read("p/a.parquet") == data
    assert pending_uploads(s3) == []


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


def test_a_completion_retried_into_no_such_upload_is_reported_as_published(s3: ObjectStorage) -> None:
    """Once S3 has completed an upload its id is spent: a retry of the completion can answer
    NoSuchUpload although the object is ours. The multipart ETag (MD5 of our parts) tells."""
    from botocore.awsrequest import AWSResponse

    sends: list[str] = []
    no_such_upload = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>NoSuchUpload</Code>"
                      b"<Message>The specified upload does not exist.</Message></Error>")

    def second_send_finds_the_upload_gone(request: Any, **_: Any) -> AWSResponse | None:
        sends.append(request.url)
        return AWSResponse(request.url, 404, {}, _Body(no_such_upload)) if len(sends) == 2 else None

    def lose_first_answer(attempts: int, **_: Any) -> int | None:
        return 0 if attempts == 1 else None

    hooks = {"before-send.s3.CompleteMultipartUpload": second_send_finds_the_upload_gone,
             "needs-retry.s3.CompleteMultipartUpload": lose_first_answer}
    data = os.urandom(PART + 11)
    with botocore_hooks(s3._client(), hooks), streamed_create(s3, "p/a.parquet", part_bytes=PART) as out:
        write_in_chunks(out, data)

    assert len(sends) == 2, "the completion was not retried into the spent upload id"
    assert s3.read("p/a.parquet") == data


def test_a_no_such_upload_for_an_upload_that_never_completed_is_an_error(s3: ObjectStorage) -> None:
    from botocore.awsrequest import AWSResponse

    gone = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>NoSuchUpload</Code>"
            b"<Message>The specified upload does not exist.</Message></Error>")

    def upload_gone(request: Any, **_: Any) -> AWSResponse:
        return AWSResponse(request.url, 404, {}, _Body(gone))

    with botocore_hooks(s3._client(), {"before-send.s3.CompleteMultipartUpload": upload_gone}), \
            pytest.raises(StorageError, match=r"Cannot complete the upload of s3://.*/p/a\.parquet: .*NoSuchUpload"), \
            streamed_create(s3, "p/a.parquet", part_bytes=PART) as out:
        write_in_chunks(out, os.urandom(PART + 11))

    assert s3.stat("p/a.parquet") is None


def test_a_parquet_writer_streams_into_it(s3: ObjectStorage) -> None:
    """What resize and the writer do: pyarrow writes straight into the upload."""
    table = pa.table({"k": [f"key-{i:08d}" for i in range(300_000)], "v": pa.array(range(300_000))})
    with streamed_create(s3, "p/a.parquet", part_bytes=PART) as out:
        with pq.ParquetWriter(out, table.schema, compression="none") as writer:
            for batch in table.to_batches(max_chunksize=50_000):
                writer.write_batch(batch)
        size = out.tell()

    assert size > PART  # really went up in parts
    assert pq.read_table(pa.BufferReader(s3.read("p/a.parquet"))).equals(table)
