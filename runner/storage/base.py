"""What every table store offers: the `Storage` protocol, its listing and delete results, and paths.

A `Storage` is rooted at a table's base path. Every path passed in or returned is a POSIX path
relative to that root (`.hoodie/timeline/20240101.commit`, `region=eu/abc_0-1-2_2024.parquet`), and
`""` is the root itself. Relative paths keep the Hudi model independent of where the table lives and
make it impossible for a caller to name a file outside the table by accident: absolute paths and `..`
segments are refused everywhere (`normalize`).

`write_new` is the timeline's atomicity rule: an instant file is created once, and a second creator
must fail (`AlreadyExists`) instead of replacing it. `create_new` is the same rule for a file too
large to hold in memory (a resize's output): the caller writes it as a stream, and it is published
whole or not at all. `replace_if` and `delete_if` are compare-and-swap
operations for the runner's lock file: they act only if the file still holds exactly the bytes the
caller last saw, so a lock holder can never overwrite or remove a lock someone else took over.
Storage objects are picklable so Spark tasks can receive one and delete files in parallel.

`delete_many` is the bulk path the cleaner uses: it reports one `DeleteResult` per path instead of
raising, so one bad file never hides what happened to the others.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple, Protocol

from runner.errors import RefusedError, StorageError

# Unlinks release the GIL and spend their time in the kernel, so a pool larger than the core count
# keeps the file system busy; 8 measured best on 2 vCPUs (bench/README.md, "clean").
DEFAULT_DELETE_THREADS = 8


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One entry of a listing.

    Args:
        path: root-relative POSIX path.
        size: bytes; 0 for directories.
        is_dir: True for a directory (on S3: a common key prefix or a `dir/` marker object).
        mtime_ms: last modification in epoch milliseconds; None where the store has none (S3 prefixes).
    """

    path: str
    size: int
    is_dir: bool
    mtime_ms: int | None


class DeleteResult(NamedTuple):
    """What `delete_many` did to one path.

    A named tuple rather than a frozen dataclass: a clean makes one per deleted file on the delete
    threads, and a frozen dataclass's constructor cost about 1.6 us against 0.3 us (measured on
    this machine, bench/README.md, "clean"), under the GIL the pool's threads share.

    Args:
        path: the root-relative path as given.
        deleted: True if it is gone now because of this call; False if it was already gone (a
            re-run after a crash) or could not be deleted (then `error` says why).
        error: None on success, else a message naming the file and the reason.
    """

    path: str
    deleted: bool
    error: str | None = None


class AlreadyExists(StorageError):
    """`write_new` found its target present: another writer created it first.

    Args:
        location: the full path or URI of the file that already exists.
    """

    def __init__(self, location: str) -> None:
        self.location = location
        super().__init__(f"Cannot create {location}: it already exists.")


class Storage(Protocol):
    """The file operations the runner needs, relative to one table's base path."""

    @property
    def uri(self) -> str:
        """The root: an absolute local path, or `s3://bucket/prefix` as given."""
        ...

    def list_dir(self, path: str) -> list[FileInfo]:
        """Direct children of the directory `path`, sorted by path; `[]` if it does not exist."""
        ...

    def walk(self, path: str = "") -> Iterator[FileInfo]:
        """Every file (not directory) below `path`, recursively, in path order."""
        ...

    def read(self, path: str) -> bytes:
        """The whole file. Raises `StorageError` naming the full path if it is missing."""
        ...

    def stat(self, path: str) -> FileInfo | None:
        """The file or directory at `path`, or None if nothing is there."""
        ...

    def write_new(self, path: str, data: bytes) -> None:
        """Create `path` with `data`, creating parents; `AlreadyExists` if it is present."""
        ...

    def create_new(self, path: str) -> AbstractContextManager[BinaryIO]:
        """Create `path` from what the caller writes to the yielded file, with `write_new`'s rule.

        The file is published only when the `with` block exits normally: `AlreadyExists` if `path`
        is present by then (it is never replaced), and nothing is published if the block raises.
        `LocalStorage` streams to a hidden temporary file beside the target
        (`.<name>.<hex>.tmp`, fsynced, then linked into place), so memory stays bounded and a crash
        leaves at most that temporary file. S3 uploads the stream in parts of a multipart upload
        completed with `If-None-Match: *`, so memory stays at one part and a crash leaves only
        invisible parts; a file smaller than a part is one conditional PUT.
        """
        ...

    def open_input(self, path: str) -> BinaryIO:
        """A seekable binary reader of `path`, for reading parts of a large file; the caller closes it.

        Raises `StorageError` naming the full path if it is missing.
        """
        ...

    def overwrite(self, path: str, data: bytes) -> None:
        """Create or replace `path` so readers see either the old or the new content, never a mix."""
        ...

    def replace_if(self, path: str, expected: bytes, data: bytes) -> bool:
        """Replace `path` with `data` only if it exists and holds exactly `expected`; True if replaced.

        Atomic against other `replace_if`/`delete_if` calls on the same file: of two callers that
        saw the same `expected`, at most one succeeds.
        """
        ...

    def delete_if(self, path: str, expected: bytes) -> bool:
        """Delete `path` only if it holds exactly `expected`; True if deleted (atomic as `replace_if`)."""
        ...

    def delete(self, path: str) -> bool:
        """Delete one file: True if it was deleted, False if it was already gone."""
        ...

    def delete_many(self, paths: Sequence[str], *, threads: int = DEFAULT_DELETE_THREADS) -> list[DeleteResult]:
        """Delete files in bulk, one result per path in the same order; never raises for one file.

        A missing file counts as already gone. On S3, where asking first would cost a request per
        key, every path the store accepted counts as deleted.
        """
        ...

    def delete_tree(self, path: str) -> int:
        """Delete `path` and everything below it; returns the number of files removed."""
        ...

    def remove_empty_folder(self, path: str) -> bool:
        """Remove the folder `path` and the empty folders below it, never a file: True if it is gone
        (or was never there), False if a file (or a link) is below it, which then stays with its folders.

        Unlike `delete_tree`, nothing written below `path` since the caller last listed it is lost:
        locally each folder goes with a non-recursive `rmdir`, which fails on a folder holding
        anything; on S3, where folders are only key prefixes, only the `dir/` marker objects go.
        """
        ...


def normalize(path: str) -> str:
    """Check a root-relative path and return it in canonical form (no `.` or empty segments).

    Raises:
        RefusedError: the path is absolute or has a `..` segment, so it could leave the table root.
    """
    if (path and ".." not in path and "//" not in path and "/./" not in path and path != "."
            and not path.startswith(("/", "./")) and not path.endswith(("/", "/."))):
        return path  # already canonical (the common case, once per file of a clean): no splitting
    segments = [s for s in path.split("/") if s not in ("", ".")]
    if path.startswith("/") or ".." in segments:
        raise RefusedError(
            f"Refusing path {path!r}: storage paths must be relative to the table root, "
            "without '..' segments.",
        )
    return "/".join(segments)


def child(parent: str, name: str) -> str:
    """The root-relative path of `name` inside the root-relative directory `parent`."""
    return f"{parent}/{name}" if parent else name


def admit_deletes(paths: Sequence[str], uri: str) -> tuple[list[DeleteResult | None], list[tuple[int, str]]]:
    """`delete_many`'s first step, the same on every storage: one result slot per path, filled for
    a path refused (outside the root, or the root itself), and the (index, canonical path) of every
    path admitted, in order, whose slots the deletes fill."""
    results: list[DeleteResult | None] = [None] * len(paths)
    admitted: list[tuple[int, str]] = []
    for index, path in enumerate(paths):
        try:
            rel = normalize(path)
            refuse_root(rel, "delete", uri)
        except RefusedError as error:
            results[index] = DeleteResult(path, False, error.message)
            continue
        admitted.append((index, rel))
    return results, admitted


def refuse_root(rel: str, action: str, uri: str) -> None:
    """Refuse to mutate the table root itself: deleting it would drop the whole table."""
    if not rel:
        raise RefusedError(f"Refusing to {action} the table root {uri}; only paths inside it.")
