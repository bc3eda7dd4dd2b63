"""Fixtures shared by the storage-level tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.storage import Storage, storage_for
from runner.storage.s3 import ObjectStorage
from tests.s3 import S3Server


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """An empty table root, on local disk or in a fresh bucket of the local S3 server."""
    if request.param == "local":
        return storage_for(str(tmp_path / "table"))
    server: S3Server = request.getfixturevalue("s3_server")
    bucket: str = request.getfixturevalue("s3_bucket")
    return storage_for(f"s3://{bucket}/warehouse/table", options=server.options())


@pytest.fixture
def s3(s3_server: S3Server, s3_bucket: str) -> ObjectStorage:
    """An empty table root in a fresh bucket of the local S3 server, as the S3 class itself."""
    storage = storage_for(f"s3://{s3_bucket}/warehouse/table", options=s3_server.options())
    assert isinstance(storage, ObjectStorage)
    return storage
