"""Fencing a resize's workers by attempt, so a worker of a dead attempt never publishes a file.

A resize interrupted by a crash is finished by the next apply under the *same* instant time, and
every file it writes is named with that time. A worker of the dead attempt may outlive its driver
(a Spark executor until it notices the driver is gone, a pool process until its group is done) and
publish its file after the next attempt has deleted the dead attempt's files: once the instant
completes, readers listing files would take that unreported file for a live file group, and its
rows would be read twice. The table lock fences only the process that holds it.

So each attempt writes a fresh token to `.hoodie/.locks/resize-<instant>.attempt` before it
deletes the files earlier attempts left, and its workers read it right before each publish: a
worker whose attempt is no longer the current one gives up, and its file is never published. A
worker that read its token just before a newer attempt wrote its own and publishes a moment later
is caught by that attempt's reconciliation, which runs after its whole rewrite.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from runner.errors import StepFailed
from runner.storage import Storage
from runner.storage.base import DEFAULT_DELETE_THREADS, DeleteResult, FileInfo


def token_path(instant: str) -> str:
    return f".hoodie/.locks/resize-{instant}.attempt"


def start_attempt(storage: Storage, instant: str) -> AttemptStorage:
    """Make a new attempt the current one for `instant`; its workers publish through the result."""
    attempt = uuid.uuid4().hex
    storage.overwrite(token_path(instant), attempt.encode())
    return AttemptStorage(storage, instant, attempt)


def end_attempts(storage: Storage, instant: str) -> None:
    """Remove the token once the instant is completed or rolled back: no worker may publish then."""
    storage.delete(token_path(instant))


@dataclass(frozen=True, slots=True)
class AttemptStorage:
    """The table's storage as one attempt's workers see it: `create_new` publishes only while the
    attempt is still the current one; every other operation is the table storage's own.

    Picklable like the storage it wraps, so Spark tasks and pool processes check it too.
    """

    inner: Storage
    instant: str
    attempt: str

    def check(self) -> None:
        """Raise unless this attempt is still the current one for its instant."""
        found = self.inner.read(token_path(self.instant)) if self.inner.stat(token_path(self.instant)) else b""
        if found.decode("utf-8", "replace") != self.attempt:
            raise StepFailed(
                f"resize {self.instant}: attempt {self.attempt} is no longer the current one "
                f"({token_path(self.instant)} holds {found.decode('utf-8', 'replace') or 'nothing'}); "
                "its file was not published",
                hint="nothing to do: a newer apply took this resize over.",
            )

    @contextlib.contextmanager
    def create_new(self, path: str) -> Iterator[BinaryIO]:
        with self.inner.create_new(path) as out:
            yield out
            self.check()  # inside the inner block: a refusal here removes the unpublished file

    @property
    def uri(self) -> str:
        return self.inner.uri

    def list_dir(self, path: str) -> list[FileInfo]:
        return self.inner.list_dir(path)

    def walk(self, path: str = "") -> Iterator[FileInfo]:
        return self.inner.walk(path)

    def through_link(self, path: str) -> bool:
        linked = getattr(self.inner, "through_link", None)
        return bool(linked is not None and linked(path))

    def links_out(self, paths: Iterable[str]) -> list[tuple[str, str]]:
        linked = getattr(self.inner, "links_out", None)
        return [] if linked is None else linked(paths)

    def read(self, path: str) -> bytes:
        return self.inner.read(path)

    def stat(self, path: str) -> FileInfo | None:
        return self.inner.stat(path)

    def write_new(self, path: str, data: bytes) -> None:
        self.inner.write_new(path, data)

    def open_input(self, path: str) -> BinaryIO:
        return self.inner.open_input(path)

    def overwrite(self, path: str, data: bytes) -> None:
        self.inner.overwrite(path, data)

    def replace_if(self, path: str, expected: bytes, data: bytes) -> bool:
        return self.inner.replace_if(path, expected, data)

    def delete_if(self, path: str, expected: bytes) -> bool:
        return self.inner.delete_if(path, expected)

    def delete(self, path: str) -> bool:
        return self.inner.delete(path)

    def delete_many(self, paths: Sequence[str], *, threads: int = DEFAULT_DELETE_THREADS) -> list[DeleteResult]:
        return self.inner.delete_many(paths, threads=threads)

    def delete_tree(self, path: str) -> int:
        return self.inner.delete_tree(path)

    def remove_empty_folder(self, path: str) -> bool:
        return self.inner.remove_empty_folder(path)
