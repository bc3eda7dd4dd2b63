"""The binary-copy variant of a resize task (`file_sizing.strategy: binary_copy`).

A group whose inputs qualify becomes one file of the inputs' row groups, copied without decoding
(`runner.hudi.parquet_copy`); one that does not returns the reason, and the task rewrites it the
normal way. Either way the file is created with `Storage.write_new`, as a rewrite is, so crash
safety is the same: a file of a pending instant is invisible and the next apply deletes it.
"""

from __future__ import annotations

import time

from runner.execute.resize_job import GroupRewrite, RewrittenFile, _newest_first
from runner.hudi.files import BaseFile, relative_path
from runner.hudi.instant import InstantTime
from runner.hudi.parquet_copy import NotCopyable, binary_copy
from runner.storage import Storage

BINARY_COPY = "binary_copy"
REWRITE = "rewrite"


def copy_group(storage: Storage, group: GroupRewrite, instant: str, token: str) -> RewrittenFile | str:
    """Create the group's new base file by binary copy, or say why the group does not qualify.

    The inputs go in the order a rewrite puts their rows in (newest file first), so both
    strategies write the same rows in the same order.
    """
    started = time.monotonic()
    inputs = _newest_first(group.inputs)
    raw = [(path, storage.read(path)) for path in inputs]
    name = BaseFile(group.file_id, token, InstantTime(instant), "parquet").name
    try:
        copied = binary_copy(raw, file_name=name)
    except NotCopyable as why:
        return str(why)
    path = relative_path(group.partition, name)
    storage.write_new(path, copied.data)
    return RewrittenFile(
        partition=group.partition,
        file_id=group.file_id,
        path=path,
        records=copied.records,
        size=len(copied.data),
        input_files=len(inputs),
        input_bytes=sum(len(data) for _, data in raw),
        create_ms=int((time.monotonic() - started) * 1000),
        strategy=BINARY_COPY,
    )
