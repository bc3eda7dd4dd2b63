"""Where a table's files live: one small interface over a local folder or an S3 prefix.

A `Storage` is rooted at a table's base path. Every path passed in or returned is a POSIX path
relative to that root (`.hoodie/timeline/20240101.commit`, `region=eu/abc_0-1-2_2024.parquet`), and
`""` is the root itself. Relative paths keep the Hudi model independent of where the table lives and
make it impossible for a caller to name a file outside the table by accident: absolute paths and `..`
segments are refused everywhere, and `LocalStorage` also refuses to mutate anything a symlink leads
out of the root.

`write_new` is the timeline's atomicity rule: an instant file is created once, and a second creator
must fail (`AlreadyExists`) instead of replacing it. `replace_if` and `delete_if` are compare-and-swap
operations for the runner's lock file: they act only if the file still holds exactly the bytes the
caller last saw, so a lock holder can never overwrite or remove a lock someone else took over.
Storage objects are picklable so Spark tasks can receive one and delete files in parallel.

Write fences: while a process holds a table's lock, `fence` registers a check that every mutating
call on that table (`write_new`, `overwrite`, `delete`, `delete_tree`) runs first, in any thread of
the process. The lock uses it to stop all writing the moment it finds it has lost the lock.

`delete_many` is the bulk path the cleaner uses: it reports one `DeleteResult` per path instead of
raising, so one bad file never hides what happened to the others. Locally it proves each folder
safe once and unlinks on a thread pool; on S3 it sends batched DeleteObjects requests.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from stat import S_ISDIR
from typing import Protocol
from urllib.parse import unquote, urlsplit

from runner.errors import RefusedError, StorageError

SUPPORTED_SCHEMES = ("file", "s3", "s3a")

# Unlinks release the GIL and spend their time in the kernel, so a pool larger than the core count
# keeps the file system busy; 8 measured best on 2 vCPUs (bench/README.md, "clean").
DEFAULT_DELETE_THREADS = 8
# Files of one folder handled by one pool task: large enough that the per-folder safety check is
# negligible, small enough that a single huge partition still spreads over the pool.
FOLDER_CHUNK = 2000


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


@dataclass(frozen=True, slots=True)
class DeleteResult:
    """What `delete_many` did to one path.

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


_fences: dict[str, Callable[[], None]] = {}
_fences_guard = threading.Lock()


@functools.lru_cache(maxsize=256)
def fence_key(uri: str) -> str:
    """One key per table root however it is spelled (`s3a://` or `s3://`, a symlinked local path).

    Cached: it runs before every delete of a clean while the lock is held.
    """
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return os.path.realpath(uri)
    return f"{'s3' if scheme.lower() == 's3a' else scheme.lower()}://{rest.rstrip('/')}"


@contextlib.contextmanager
def fence(uri: str, check: Callable[[], None]) -> Iterator[None]:
    """Run `check` before every mutation of the table rooted at `uri`, in this process, until exit.

    `check` raises to forbid the write. Only one fence per table root: a second is a programming
    error (one process holds a table's lock once).
    """
    key = fence_key(uri)
    with _fences_guard:
        if key in _fences:
            raise RuntimeError(f"a write fence is already registered for {uri}")
        _fences[key] = check
    try:
        yield
    finally:
        with _fences_guard:
            _fences.pop(key, None)


def check_fence(uri: str) -> None:
    """Run the fence registered for the table at `uri`, if any (see `fence`)."""
    if not _fences:
        return  # the common case, and always so in Spark executors: no lookup cost per file
    with _fences_guard:
        check = _fences.get(fence_key(uri))
    if check is not None:
        check()


def normalize(path: str) -> str:
    """Check a root-relative path and return it in canonical form (no `.` or empty segments).

    Raises:
        RefusedError: the path is absolute or has a `..` segment, so it could leave the table root.
    """
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


def refuse_root(rel: str, action: str, uri: str) -> None:
    """Refuse to mutate the table root itself: deleting it would drop the whole table."""
    if not rel:
        raise RefusedError(f"Refusing to {action} the table root {uri}; only paths inside it.")


def storage_for(uri: str, *, options: Mapping[str, str] | None = None) -> Storage:
    """The storage for a table base path.

    Args:
        uri: a local path, a `file://` URI, or `s3://bucket/prefix` (`s3a://` is accepted, as Spark
            configurations usually spell it).
        options: object-store settings (see `runner.hudi.storage_s3.S3Options`); ignored for local
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
        from runner.hudi.storage_s3 import ObjectStorage  # pyarrow is imported only when needed

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


@dataclass(frozen=True, slots=True)
class LocalStorage:
    """A table on the local file system, rooted at `root` (made absolute on construction).

    Mutations never follow a symlink out of the root: each one resolves the real path of the
    target's parent and of the target itself and refuses (`RefusedError`) unless both lie inside the
    real root. Reads and listings follow symlinks, but `walk` does not descend into linked
    directories (that is how a listing loops forever or wanders out of the table).
    """

    root: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", os.path.abspath(self.root))

    @property
    def uri(self) -> str:
        return self.root

    def list_dir(self, path: str) -> list[FileInfo]:
        rel = normalize(path)
        try:
            with os.scandir(self._full(rel)) as entries:
                names = [e.name for e in entries]
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise _os_error("list", self._full(rel), e) from e
        infos = (self.stat(child(rel, name)) for name in sorted(names))
        return [info for info in infos if info is not None]

    def walk(self, path: str = "") -> Iterator[FileInfo]:
        top = self._full(normalize(path))
        # Every `dirpath` starts with the root and a separator, so slicing gives the relative folder
        # (`os.path.relpath` per file was a third of a full listing's time).
        skip = len(os.path.join(self.root, ""))
        for dirpath, dirnames, filenames in os.walk(top, onerror=_walk_error(top)):
            dirnames.sort()
            folder = dirpath[skip:].replace(os.sep, "/")
            for name in sorted(filenames):
                info = self._stat_full(os.path.join(dirpath, name), child(folder, name))
                if info is not None and not info.is_dir:
                    yield info

    def read(self, path: str) -> bytes:
        full = self._full(normalize(path))
        try:
            with open(full, "rb") as f:
                return f.read()
        except OSError as e:
            raise _os_error("read", full, e) from e

    def stat(self, path: str) -> FileInfo | None:
        rel = normalize(path)
        return self._stat_full(self._full(rel), rel)

    def _stat_full(self, full: str, rel: str) -> FileInfo | None:
        try:
            st = os.stat(full)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            raise _os_error("stat", full, e) from e
        is_dir = S_ISDIR(st.st_mode)
        return FileInfo(rel, 0 if is_dir else st.st_size, is_dir, st.st_mtime_ns // 1_000_000)

    def write_new(self, path: str, data: bytes) -> None:
        """Create the file atomically: no reader or rival creator ever sees a partial file.

        The bytes go to a hidden temp file in the same directory, which is then hard-linked to the
        final name. `link` fails if the name exists, so of two concurrent creators exactly one wins,
        and a crash leaves at most a `.<name>.<hex>.tmp` file, never a truncated instant that Hudi
        would later read as complete. (Opening the final name with `O_EXCL` would be just as
        exclusive but could leave such a truncated file behind.)
        """
        check_fence(self.root)
        full = self._checked(path, "create")
        parent = self._make_parents(full)
        temp = _write_temp(parent, os.path.basename(full), data)
        try:
            os.link(temp, full)
        except FileExistsError as e:
            raise AlreadyExists(full) from e
        except OSError as e:
            raise _os_error("create", full, e) from e
        finally:
            _remove_quietly(temp)
        _fsync_dir(parent)

    def overwrite(self, path: str, data: bytes) -> None:
        """Replace the file atomically (temp file + rename), so a crash leaves the old or new content."""
        check_fence(self.root)
        full = self._checked(path, "overwrite")
        parent = self._make_parents(full)
        self._replace(full, parent, data)

    def replace_if(self, path: str, expected: bytes, data: bytes) -> bool:
        """Compare and replace under an exclusive `flock` of the file's folder.

        Every `replace_if` and `delete_if` in that folder takes the same lock, so the read, the
        comparison and the atomic rename happen with no rival in between, across processes.
        """
        full = self._checked(path, "overwrite")
        parent = os.path.dirname(full)
        with _folder_lock(parent) as locked:
            if not locked or _read_or_none(full) != expected:
                return False
            self._replace(full, parent, data)
        return True

    def delete_if(self, path: str, expected: bytes) -> bool:
        full = self._checked(path, "delete")
        with _folder_lock(os.path.dirname(full)) as locked:
            if not locked or _read_or_none(full) != expected:
                return False
            try:
                os.unlink(full)
            except OSError as e:
                raise _os_error("delete", full, e) from e
        return True

    def delete(self, path: str) -> bool:
        check_fence(self.root)
        full = self._checked(path, "delete")
        try:
            os.unlink(full)  # removes a symlink itself, never its target
        except FileNotFoundError:
            return False
        except OSError as e:
            raise _os_error("delete", full, e) from e
        return True

    def delete_many(self, paths: Sequence[str], *, threads: int = DEFAULT_DELETE_THREADS) -> list[DeleteResult]:
        """Delete files on a thread pool, proving each folder safe once rather than each file.

        Per folder: open it, resolve its real path, refuse the whole folder unless that lies inside
        the real root, and check the opened directory is the one resolved (so a folder swapped for a
        symlink in between is caught). Then every file is unlinked relative to that open directory,
        so no path is resolved again. Files that are themselves symlinks (the folder listing says
        which, without extra system calls) are refused if they point out of the root, as `delete`
        does.
        """
        check_fence(self.root)
        results: list[DeleteResult | None] = [None] * len(paths)
        by_folder: dict[str, list[tuple[int, str]]] = {}
        for index, path in enumerate(paths):
            try:
                rel = normalize(path)
                refuse_root(rel, "delete", self.root)
            except RefusedError as error:
                results[index] = DeleteResult(path, False, error.message)
                continue
            folder, _, name = rel.rpartition("/")
            by_folder.setdefault(folder, []).append((index, name))
        chunks = [
            (folder, entries[start:start + FOLDER_CHUNK])
            for folder, entries in by_folder.items()
            for start in range(0, len(entries), FOLDER_CHUNK)
        ]
        real_root = os.path.realpath(self.root)
        links = _FolderLinks(by_folder)

        def run(chunk: tuple[str, list[tuple[int, str]]]) -> list[tuple[int, bool, str | None]]:
            return self._delete_in_folder(real_root, *chunk, links)

        workers = max(1, min(threads, len(chunks)))
        if workers == 1:
            done = [run(chunk) for chunk in chunks]
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="delete") as pool:
                done = list(pool.map(run, chunks))
        for outcomes in done:
            for index, deleted, error in outcomes:
                results[index] = DeleteResult(paths[index], deleted, error)
        return [r for r in results if r is not None]

    def _delete_in_folder(
        self, real_root: str, folder: str, entries: list[tuple[int, str]], links: _FolderLinks
    ) -> list[tuple[int, bool, str | None]]:
        full = self._full(folder)
        try:
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except (FileNotFoundError, NotADirectoryError):
            return [(index, False, None) for index, _ in entries]  # the folder and its files are gone
        except OSError as e:
            message = _os_error("open the folder", full, e).message
            return [(index, False, message) for index, _ in entries]
        try:
            refusal = self._folder_refusal(fd, full, real_root)
            if refusal is not None:
                return [(index, False, refusal) for index, _ in entries]
            linked = links.of(folder, fd)
            return [self._unlink_at(fd, full, real_root, index, name, name in linked) for index, name in entries]
        finally:
            os.close(fd)

    def _folder_refusal(self, fd: int, full: str, real_root: str) -> str | None:
        """Why the open folder `fd` may not be mutated, or None if it lies inside the real root."""
        real = os.path.realpath(full)
        if os.path.commonpath([real, real_root]) != real_root:
            return (f"Refusing to delete in {full}: it resolves through a symlink to {real}, "
                    f"outside the table root {real_root}.")
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(real))
        except OSError:
            same = False
        if not same:
            return f"Refusing to delete in {full}: the folder changed while it was being checked."
        return None

    def _unlink_at(
        self, fd: int, folder: str, real_root: str, index: int, name: str, is_link: bool
    ) -> tuple[int, bool, str | None]:
        target = os.path.join(folder, name)
        if is_link:
            real = os.path.realpath(target)
            if os.path.commonpath([real, real_root]) != real_root:
                return (index, False, f"Refusing to delete {target}: it is a symlink to {real}, "
                                      f"outside the table root {real_root}.")
        try:
            os.unlink(name, dir_fd=fd)  # removes a symlink itself, never its target
        except FileNotFoundError:
            return (index, False, None)
        except OSError as e:
            return (index, False, _os_error("delete", target, e).message)
        return (index, True, None)

    def delete_tree(self, path: str) -> int:
        """Delete a directory tree (or a single file); returns the number of files and links removed.

        Symlinks inside the tree are removed as links, never followed. If any of them points outside
        the root the whole call is refused before anything is deleted.
        """
        check_fence(self.root)
        full = self._checked(path, "delete")
        if os.path.islink(full) or not os.path.isdir(full):
            return int(self.delete(path))
        self._refuse_escaping_links(full)
        removed = 0
        for dirpath, dirnames, filenames in os.walk(full, topdown=False, onerror=_walk_error(full)):
            removed += _empty_dir(dirpath, dirnames, filenames)
        _rmdir(full)
        return removed

    def _full(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else self.root

    def _checked(self, path: str, action: str) -> str:
        """The absolute target of a mutation, after proving neither it nor its parent leaves the root."""
        rel = normalize(path)
        refuse_root(rel, action, self.root)
        full = self._full(rel)
        real_root = os.path.realpath(self.root)
        for probe in (os.path.dirname(full), full):
            self._refuse_outside(probe, real_root, action, full)
        return full

    def _refuse_outside(self, probe: str, real_root: str, action: str, full: str) -> None:
        real = os.path.realpath(probe)
        if os.path.commonpath([real, real_root]) != real_root:
            raise RefusedError(
                f"Refusing to {action} {full}: {probe} resolves through a symlink to {real}, "
                f"outside the table root {real_root}.",
                hint="remove or fix the symlink; the runner only changes files inside the table.",
            )

    def _refuse_escaping_links(self, top: str) -> None:
        real_root = os.path.realpath(self.root)
        for dirpath, dirnames, filenames in os.walk(top):
            for name in dirnames + filenames:
                link = os.path.join(dirpath, name)
                if os.path.islink(link):
                    self._refuse_outside(link, real_root, "delete", link)

    def _replace(self, full: str, parent: str, data: bytes) -> None:
        temp = _write_temp(parent, os.path.basename(full), data)
        try:
            os.replace(temp, full)
        except OSError as e:
            _remove_quietly(temp)
            raise _os_error("overwrite", full, e) from e
        _fsync_dir(parent)

    def _make_parents(self, full: str) -> str:
        parent = os.path.dirname(full)
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as e:
            raise _os_error("create the folder", parent, e) from e
        return parent


class _FolderLinks:
    """The symlinks in each folder of one `delete_many`, listed once per folder however many pool
    tasks share it (listing a huge folder once per chunk would make the work quadratic)."""

    def __init__(self, folders: Iterable[str]) -> None:
        self._locks = {folder: threading.Lock() for folder in folders}
        self._found: dict[str, frozenset[str]] = {}

    def of(self, folder: str, fd: int) -> frozenset[str]:
        with self._locks[folder]:
            found = self._found.get(folder)
            if found is None:
                found = self._found[folder] = _symlink_names(fd)
            return found


def _symlink_names(fd: int) -> frozenset[str]:
    """Names in the open folder that are symlinks; the listing's entry types make this one pass."""
    with os.scandir(fd) as entries:
        return frozenset(e.name for e in entries if e.is_symlink())


def _write_temp(directory: str, name: str, data: bytes) -> str:
    """Write `data` durably to a new hidden temp file next to `name` and return its path.

    The name is hidden and ends in `.tmp`, which matches no timeline file-name pattern, so a
    leftover from a crash cannot be mistaken for an instant.
    """
    temp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        _remove_quietly(temp)
        raise _os_error("write", temp, e) from e
    return temp


@contextlib.contextmanager
def _folder_lock(directory: str) -> Iterator[bool]:
    """Hold an exclusive `flock` on a folder; yields False (nothing to lock) if it does not exist.

    The lock is per open file description, so two threads of one process exclude each other too,
    and it is released when the descriptor closes, even if the process dies.
    """
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (FileNotFoundError, NotADirectoryError):
        yield False
        return
    except OSError as e:
        raise _os_error("open the folder", directory, e) from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield True
    finally:
        os.close(fd)


def _read_or_none(full: str) -> bytes | None:
    try:
        with open(full, "rb") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise _os_error("read", full, e) from e


def _fsync_dir(directory: str) -> None:
    # A new or renamed directory entry survives a power loss only once the directory is synced.
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _empty_dir(directory: str, dirnames: list[str], filenames: list[str]) -> int:
    """Remove the entries of one directory whose subdirectories are already empty (bottom-up walk).

    `os.walk` lists a symlink to a directory among `dirnames`; it is unlinked like a file.
    """
    links = [name for name in dirnames if os.path.islink(os.path.join(directory, name))]
    for name in filenames + links:
        target = os.path.join(directory, name)
        try:
            os.unlink(target)
        except OSError as e:
            raise _os_error("delete", target, e) from e
    for name in set(dirnames) - set(links):
        _rmdir(os.path.join(directory, name))
    return len(filenames) + len(links)


def _rmdir(directory: str) -> None:
    try:
        os.rmdir(directory)
    except OSError as e:
        raise _os_error("delete the folder", directory, e) from e


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _walk_error(top: str) -> Callable[[OSError], None]:
    """An `os.walk` error handler: a missing top means "nothing to list", anything else must fail.

    `os.walk` ignores errors by default, which would turn an unreadable partition into a silently
    incomplete listing and a wrong plan.
    """

    def handle(error: OSError) -> None:
        if isinstance(error, (FileNotFoundError, NotADirectoryError)) and error.filename == top:
            return
        raise _os_error("list", str(error.filename), error) from error

    return handle


def _os_error(action: str, location: str, error: OSError) -> StorageError:
    reasons = {
        FileNotFoundError: "no such file or directory",
        IsADirectoryError: "it is a directory",
        NotADirectoryError: "a parent is not a directory",
        PermissionError: "permission denied",
    }
    reason = reasons.get(type(error), error.strerror or str(error))
    return StorageError(f"Cannot {action} {location}: {reason}.")
