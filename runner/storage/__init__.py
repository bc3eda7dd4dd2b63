"""Where a table's files live, and who may write them: storage over a local folder or an S3 prefix,
write fences, the "is this a Hudi table" guard and the runner's table lock.

This package knows nothing of Hudi's formats (it never imports `runner.hudi`); the Hudi model reads
and writes through the `Storage` protocol defined here. The map is in README.md beside this file.
"""

from runner.storage.base import DEFAULT_DELETE_THREADS, AlreadyExists, DeleteResult, FileInfo, Storage
from runner.storage.local import LocalStorage
from runner.storage.resolve import SUPPORTED_SCHEMES, storage_for

__all__ = [
    "DEFAULT_DELETE_THREADS",
    "SUPPORTED_SCHEMES",
    "AlreadyExists",
    "DeleteResult",
    "FileInfo",
    "LocalStorage",
    "Storage",
    "storage_for",
]
