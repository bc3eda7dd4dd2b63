"""Pytest plugin: a real S3-compatible server (moto in server mode) on 127.0.0.1.

Object-store tests talk HTTP to this server exactly as they would to S3, through pyarrow or boto3;
nothing is patched in-process. The server starts once per session, each test gets its own bucket,
and no `AWS_*` environment variable is set: tests pass `S3Server.options()` to `storage_for`.

The root `conftest.py` loads this module with `pytest_plugins = ["tests.s3"]`, so every test can ask
for `s3_server` and `s3_bucket` by name; importing them into a module would start a second server.

Caveat: moto keeps its buckets in process-global state, so a test that uses moto's in-process
`mock_aws` (which resets that state) would empty this server's buckets too.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer


@dataclass(frozen=True, slots=True)
class S3Server:
    """Where the local S3 server listens and the (arbitrary, accepted) credentials to use."""

    endpoint_url: str
    access_key: str = "runner-test-key"
    secret_key: str = "runner-test-secret"
    region: str = "us-east-1"

    def options(self) -> dict[str, str]:
        """Storage options for `runner.storage.storage_for(uri, options=...)`."""
        return {
            "endpoint_override": self.endpoint_url,
            "access_key": self.access_key,
            "secret_key": self.secret_key,
            "region": self.region,
        }

    def client(self) -> Any:
        """A boto3 S3 client for this server, with explicit settings so no environment leaks in."""
        return _client(self)

    def environment(self) -> dict[str, str]:
        """The AWS variables that point code given no storage options (`runner.write`, the
        declarations' `s3://` paths) at this server."""
        return {"AWS_ENDPOINT_URL_S3": self.endpoint_url, "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_REGION": self.region}


@functools.cache
def _client(server: S3Server) -> Any:
    # Building a boto3 client costs ~0.1 s; clients are thread-safe, so one per server is enough.
    return boto3.session.Session(
        aws_access_key_id=server.access_key,
        aws_secret_access_key=server.secret_key,
        region_name=server.region,
    ).client("s3", endpoint_url=server.endpoint_url)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """Start moto's S3-compatible server on a free port of 127.0.0.1 for the whole session."""
    # werkzeug logs every request at INFO; keep test output readable.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield S3Server(endpoint_url=f"http://{host}:{port}")
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> Iterator[str]:
    """A fresh, empty bucket for one test; emptied and removed afterwards."""
    name = f"runner-test-{uuid.uuid4().hex[:16]}"
    client = s3_server.client()
    client.create_bucket(Bucket=name)
    try:
        yield name
    finally:
        _remove_bucket(client, name)


def upload_tree(local_dir: str | os.PathLike[str], bucket: str, prefix: str, server: S3Server) -> int:
    """Copy every file under `local_dir` to `s3://bucket/prefix/<relative path>`.

    Typical use: build a Hudi table locally (or unzip a fixture), upload it, then read it through
    `storage_for(f"s3://{bucket}/{prefix}", options=server.options())`.

    Returns:
        The number of objects uploaded.
    """
    root = Path(local_dir)
    client = server.client()
    count = 0
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        key = "/".join(part for part in (prefix.strip("/"), file.relative_to(root).as_posix()) if part)
        client.put_object(Bucket=bucket, Key=key, Body=file.read_bytes())
        count += 1
    return count


def seed_objects(bucket: str, keys: list[str], body: bytes = b"x") -> None:
    """Store one small object at each key of `bucket`, straight into the server's object store.

    For tests that need thousands of objects only as material (to fill several DeleteObjects
    batches): a PUT costs about 10 ms of CPU between botocore and moto, all in this process and
    under one GIL, so 2,500 of them were 23 s of the suite (CI run 7) and threads did not make them
    cheaper (measured: the same CPU time). The server is in this process, so its S3 backend takes
    them directly; what the test then does still goes over HTTP. This relies on moto's backend API
    (`s3_backends`, `put_object`), which is why moto is pinned to one major release.
    """
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for key in keys:
        backend.put_object(bucket, key, body)


def _remove_bucket(client: Any, bucket: str) -> None:
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys})
    client.delete_bucket(Bucket=bucket)


@contextlib.contextmanager
def botocore_hooks(client: Any, hooks: dict[str, Any]) -> Iterator[None]:
    """Register `{event: handler}` on a boto3 client's event emitter for the block.

    The emitter is shared by clients of one session, so every hook gets its own unique id and is
    unregistered on the way out, even when the block raises."""
    events = client.meta.events
    ids = {event: f"tests-s3-{uuid.uuid4().hex}" for event in hooks}
    for event, handler in hooks.items():
        events.register(event, handler, unique_id=ids[event])
    try:
        yield
    finally:
        for event, unique_id in ids.items():
            events.unregister(event, unique_id=unique_id)
