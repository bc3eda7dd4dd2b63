"""The binary-copy variant of a resize task (`file_sizing.strategy: binary_copy`).

A group whose inputs qualify becomes one file of the inputs' row groups, copied without decoding
(`runner.hudi.parquet_copy`); one that does not returns the reason, and the task rewrites it the
normal way. The copy streams into `Storage.create_new`, input by input, as a rewrite does: on local
storage a hidden temporary file is linked to its name only once complete, so a crash leaves only
that temporary file (the next apply deletes it), and a group found not to qualify part way (a
chunk whose pages do not match its metadata) publishes nothing. A task holds the inputs' footers,
one input's bytes and the record-key column's chunks, not the group (on S3 `create_new` streams
a multipart upload in bounded parts).
"""

from __future__ import annotations

import os
import time

from runner.execute.resize_job import GroupRewrite, RewrittenFile, _newest_first
from runner.failpoints import failpoint
from runner.hudi.files import BaseFile, relative_path
from runner.hudi.instant import InstantTime
from runner.hudi.parquet_copy import NotCopyable, Source, copy_into
from runner.storage import Storage

BINARY_COPY = "binary_copy"
# Read with an input's size: a footer without Hudi's bloom filter fits (one with it, ~0.4 MB, is
# read on its own).
_TAIL_BYTES = 64 * 1024
REWRITE = "rewrite"


def copy_group(storage: Storage, group: GroupRewrite, instant: str, token: str) -> RewrittenFile | str:
    """Create the group's new base file by binary copy, or say why the group does not qualify.

    The inputs go in the order a rewrite puts their rows in (newest file first), so both
    strategies write the same rows in the same order; on a table without meta fields both keep the
    inputs' `_hoodie_file_name`, so the copy takes its chunks as they are.
    """
    started = time.monotonic()
    inputs = _newest_first(group.inputs)
    name = BaseFile(group.file_id, token, InstantTime(instant), "parquet").name
    path = relative_path(group.partition, name)
    sources = [_source(storage, p) for p in inputs]
    try:
        with storage.create_new(path) as out:
            copied = copy_into(sources, out, file_name=name if group.meta_fields else None,
                               after_input=lambda: failpoint("mid_rewrite"))
    except NotCopyable as why:
        return str(why)
    return RewrittenFile(
        partition=group.partition,
        file_id=group.file_id,
        path=path,
        records=copied.records,
        size=copied.size,
        input_files=len(inputs),
        input_bytes=sum(s.size for s in sources),
        create_ms=int((time.monotonic() - started) * 1000),
        strategy=BINARY_COPY,
    )


def _source(storage: Storage, path: str) -> Source:
    """The input as `copy_into` reads it. Its last bytes are read with its size (the footer's
    length and, for a small footer, the footer itself); other ranges open the file again, so no
    more than one input is open at a time however many a group has."""
    with storage.open_input(path) as f:
        size = f.seek(0, os.SEEK_END)
        tail_start = max(0, size - _TAIL_BYTES)
        f.seek(tail_start)
        tail = f.read()

    def read(start: int, length: int) -> bytes:
        if start >= tail_start:
            return tail[start - tail_start:start - tail_start + length]
        with storage.open_input(path) as f:
            f.seek(start)
            return f.read(length)

    return Source(path, size, read)
