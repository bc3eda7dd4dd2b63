"""Table storage on the local file system: `LocalStorage`.

`write_new` creates through a hard link from a temporary file, so of two creators exactly one wins;
`create_new` does the same for a file streamed to that temporary file, in bounded memory;
`overwrite` renames a fsynced temporary file over the target, so readers see the old or the new
bytes, never a mix. No mutation follows a symlink out of the root. `delete_many` proves each folder
safe once and unlinks on a thread pool.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from stat import S_ISDIR, S_ISLNK
from typing import BinaryIO

from runner.allocation import bulk_allocation
from runner.errors import RefusedError, StorageError
from runner.storage.base import (
    AlreadyExists,
    DeleteResult,
    FileInfo,
    admit_deletes,
    child,
    normalize,
    refuse_root,
)
from runner.storage.fence import check_fence

# Files of one folder handled by one pool task, at most: large enough that the per-task work (an
# open and an `fstat`; the folder's full proof, a `realpath` and a listing of its symlinks, is made
# once per folder and shared by its tasks) stays small; small enough that a single huge partition
# still spreads over the pool.
FOLDER_CHUNK = 512

# Tasks per pool thread that `delete_many` aims for, by cutting folders into smaller chunks (never
# below `MIN_CHUNK` files): with about one task per thread, the last round of tasks ran on a few
# threads while the others idled (100 folders of 401 files on 32 threads: four rounds, the last
# with 4 tasks, so up to 4/3.125 of the balanced time by arithmetic; the wall-time gain is not yet
# measured on a quiet machine, bench/README.md, "clean: the CPU round").
TASKS_PER_THREAD = 8
MIN_CHUNK = 32

# Threads of `delete_many` on a local disk. An unlink spends its time in the kernel (directory
# entry, inode, journal; the GIL is released), and more threads let the file system overlap that
# work across folders even on 2 cores. Measured on this machine's ext4 (bench/README.md, "clean",
# clean-fast round; a loaded machine): bare unlink threads 0.27x the single-thread floor at 8,
# 0.13x at 16, 0.11x at 32, 0.12x at 64; `delete_many` 0.22x at 8 and 0.12x at 32. A later
# interleaved comparison of a whole apply at 8 and 32, while the disk itself was the bottleneck,
# tied. Never slower, so 32; bounded, since each thread holds an open folder and a stack and 64
# gained nothing.
LOCAL_DELETE_THREADS = 32

# Threads that `stat` a large folder's files beside the listing thread during a walk (planning
# stats every file of the table for its size: about 3.5 us of kernel time each, most of a listing's
# cost), and the folder size from which it is worth handing out parts. Off: on this project's
# 2-core machine the extra thread made `plan_one` slower, not faster (50,100 files, 6 interleaved
# runs on a quiet machine: wall 0.80 s against 0.74 s, CPU 0.86 s against 0.74 s; bench/README.md,
# "clean: the CPU round"). Turn it on only where a measurement on more cores shows a gain.
STAT_THREADS = 0
STAT_PARALLEL_FROM = 128


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

    def through_link(self, path: str) -> bool:
        """Whether `path`, or a folder on the way to it below the root, is a symbolic link: what
        `walk` never enters. Listing one such folder on its own (`list_dir` follows links) must
        not show more of the table than the whole-table walk does."""
        rel = normalize(path)
        parts = rel.split("/") if rel else []
        return any(os.path.islink(self._full("/".join(parts[:i]))) for i in range(1, len(parts) + 1))

    def links_out(self, paths: Iterable[str]) -> list[tuple[str, str]]:
        """Those of `paths` (files) that are symbolic links leading out of the table, each with
        where it leads, in the order given: what every mutation here refuses. One listing per
        folder tells which names are links (from the entry types alone); only those are resolved."""
        real_root = os.path.realpath(self.root)
        links: dict[str, frozenset[str]] = {}
        found = []
        for path in paths:
            folder, _, name = normalize(path).rpartition("/")
            named = links.get(folder)
            if named is None:
                try:
                    with os.scandir(self._full(folder)) as entries:
                        named = links[folder] = frozenset(e.name for e in entries if e.is_symlink())
                except (FileNotFoundError, NotADirectoryError):
                    named = links[folder] = frozenset()
            if name in named:
                real = os.path.realpath(os.path.join(self._full(folder), name))
                if os.path.commonpath([real, real_root]) != real_root:
                    found.append((path, real))
        return found

    def walk(self, path: str = "") -> Iterator[FileInfo]:
        for folder, files in self._walk_folders_stats(path):
            prefix = f"{folder}/" if folder else ""
            for name, st in files:
                yield FileInfo(prefix + name, st.st_size, False, st.st_mtime_ns // 1_000_000)

    def walk_folders(self, path: str = "") -> Iterator[tuple[str, list[tuple[str, int]]]]:
        """`walk` a folder at a time: each folder holding files, as its root-relative path and its
        files' `(name, size)`, in `walk`'s order. A whole-table listing (planning a clean) needs no
        more, and builds no per-file `FileInfo` or path string."""
        for folder, files in self._walk_folders_stats(path):
            yield folder, [(name, st.st_size) for name, st in files]

    def _walk_folders_stats(self, path: str = "") -> Iterator[tuple[str, list[tuple[str, os.stat_result]]]]:
        """Each folder below `path` that holds files, with each file's name and `stat`, in `walk`'s order."""
        rel = normalize(path)
        top = self._full(rel)
        try:
            fd = os.open(top, _DIRECTORY_FLAGS)  # the top itself may be a link, as `os.walk` allows
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as e:
            raise _os_error("list", top, e) from e
        with ThreadPoolExecutor(max_workers=max(1, STAT_THREADS), thread_name_prefix="stat") as pool:
            yield from _walk_open_folder(fd, top, rel, pool)

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
        exclusive but could leave such a truncated file behind.) Empty bytes cannot be cut short,
        so an empty file is created under its final name with `O_EXCL`.
        """
        check_fence(self.root)
        full = self._checked(path, "create")
        parent = self._make_parents(full)
        if not data:
            # An empty file (a marker, a requested instant) is whole the moment it exists, so the
            # final name is created exclusively in place: no temp file, no link, no file fsync.
            _create_empty(full)
        else:
            temp = _write_temp(parent, os.path.basename(full), data)
            try:
                _link_new(temp, full)
            finally:
                _remove_quietly(temp)
        _fsync_dir(parent)

    @contextlib.contextmanager
    def create_new(self, path: str) -> Iterator[BinaryIO]:
        """Stream a new file to a hidden temp file beside it, then publish it as `write_new` does.

        The caller's writes go straight to `.<name>.<hex>.tmp` (the leftover name `write_new`'s
        crashes leave too), so memory does not grow with the file. On a normal exit the temp file
        is fsynced and hard-linked to the final name, which fails if the name exists: an existing
        file is never overwritten. An existing target is refused up front as well, before any work
        is streamed. The fence is checked again before publishing, since a stream can outlast the
        lock. If the block raises, the temp file is removed and nothing is published; if the
        process dies, only the temp file remains.
        """
        check_fence(self.root)
        full = self._checked(path, "create")
        if os.path.lexists(full):
            raise AlreadyExists(full)
        parent = self._make_parents(full)
        temp = _temp_path(parent, os.path.basename(full))
        try:
            try:
                out = open(temp, "xb")
            except OSError as e:
                raise _os_error("write", temp, e) from e
            with out:
                yield out
                out.flush()
                _fsync_file(out, temp)
            check_fence(self.root)
            _link_new(temp, full)
        finally:
            _remove_quietly(temp)
        _fsync_dir(parent)

    def open_input(self, path: str) -> BinaryIO:
        full = self._full(normalize(path))
        try:
            return open(full, "rb")
        except OSError as e:
            raise _os_error("read", full, e) from e

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

    @property
    def delete_threads(self) -> int:
        """The threads `delete_many` uses unless told otherwise (the run report names the count)."""
        return LOCAL_DELETE_THREADS

    def delete_many(self, paths: Sequence[str], *, threads: int = LOCAL_DELETE_THREADS) -> list[DeleteResult]:
        """Delete files on a thread pool, proving each folder safe once rather than each file.

        Per folder: open it, resolve its real path, refuse the whole folder unless that lies inside
        the real root, and check the opened directory is the one resolved (so a folder swapped for a
        symlink in between is caught). Then every file is unlinked relative to that open directory,
        so no path is resolved again. Files that are themselves symlinks (the folder listing says
        which, without extra system calls) are refused if they point out of the root, as `delete`
        does.
        """
        check_fence(self.root)
        # A result and a few small objects per file, none in a cycle: without the cyclic collector,
        # which would otherwise walk the whole heap (the clean plan included) while the pool's
        # threads wait for the GIL (see runner.allocation).
        with bulk_allocation():
            return self._delete_many(paths, threads)

    def _delete_many(self, paths: Sequence[str], threads: int) -> list[DeleteResult]:
        # Each slot is filled exactly once: here for a refused path, else by the pool task that owns
        # the path's folder chunk (list item assignment is atomic, so tasks need no lock).
        results, admitted = admit_deletes(paths, self.root)
        by_folder: dict[str, list[tuple[int, str]]] = {}
        for index, rel in admitted:
            folder, _, name = rel.rpartition("/")
            entries = by_folder.get(folder)
            if entries is None:
                entries = by_folder[folder] = []
            entries.append((index, name))
        chunks = _interleaved_chunks(by_folder, threads * TASKS_PER_THREAD if threads > 1 else 0)
        proofs = _FolderProofs(by_folder, os.path.realpath(self.root))

        def run(chunk: tuple[str, list[tuple[int, str]]]) -> None:
            self._delete_in_folder(*chunk, proofs, paths, results)

        workers = max(1, min(threads, len(chunks)))
        if workers == 1:
            for chunk in chunks:
                run(chunk)
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="delete") as pool:
                for _ in pool.map(run, chunks):  # re-raises a task's unexpected error here
                    pass
        return [r for r in results if r is not None]

    def _delete_in_folder(
        self, folder: str, entries: list[tuple[int, str]], proofs: _FolderProofs,
        paths: Sequence[str], results: list[DeleteResult | None],
    ) -> None:
        """Unlink one chunk of a folder's files, writing each outcome into `results` at its index."""
        full = self._full(folder)
        try:
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except (FileNotFoundError, NotADirectoryError):
            for index, _ in entries:  # the folder and its files are gone
                results[index] = DeleteResult(paths[index], False)
            return
        except OSError as e:
            message = _os_error("open the folder", full, e).message
            for index, _ in entries:
                results[index] = DeleteResult(paths[index], False, message)
            return
        try:
            refusal, linked = proofs.of(folder, fd, full)
            if refusal is not None:
                for index, _ in entries:
                    results[index] = DeleteResult(paths[index], False, refusal)
                return
            unlink = os.unlink
            for index, name in entries:
                if linked and name in linked:
                    results[index] = _unlink_link(fd, full, proofs.real_root, paths[index], name)
                    continue
                # The common case inline (a plain file): one system call, relative to the open folder.
                try:
                    unlink(name, dir_fd=fd)
                except FileNotFoundError:
                    results[index] = DeleteResult(paths[index], False)
                except OSError as e:  # the full path only now: it is needed for the message alone
                    results[index] = DeleteResult(
                        paths[index], False, _os_error("delete", os.path.join(full, name), e).message)
                else:
                    results[index] = DeleteResult(paths[index], True)
        finally:
            os.close(fd)

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

    def remove_empty_folder(self, path: str) -> bool:
        """Bottom-up, each folder with a non-recursive `rmdir`: one that holds a file, a link or
        anything created meanwhile is left (and so are the folders above it)."""
        check_fence(self.root)
        full = self._checked(path, "delete the folder")
        if not os.path.lexists(full):
            return True
        if os.path.islink(full) or not os.path.isdir(full):
            return False
        for dirpath, dirnames, filenames in os.walk(full, topdown=False, onerror=_walk_error(full)):
            if filenames or any(os.path.islink(os.path.join(dirpath, name)) for name in dirnames):
                return False
            try:
                os.rmdir(dirpath)
            except FileNotFoundError:
                continue
            except OSError as e:
                if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    return False  # something landed since the walk listed it
                raise _os_error("delete the folder", dirpath, e) from e
        return True

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


def _interleaved_chunks(
    by_folder: dict[str, list[tuple[int, str]]], target_tasks: int = 0,
) -> list[tuple[str, list[tuple[int, str]]]]:
    """Each folder's files in tasks of at most `FOLDER_CHUNK`, ordered round-robin across folders,
    so that the threads of the pool work in different folders at once rather than queue on one
    folder's lock in the kernel (an unlink locks its directory).

    `target_tasks`: cut folders smaller (down to `MIN_CHUNK` files) until there are about this many
    tasks, so the pool's threads finish together; a folder is cut into equal parts.
    """
    limit = FOLDER_CHUNK
    if target_tasks > 0:
        total = sum(len(entries) for entries in by_folder.values())
        limit = max(MIN_CHUNK, min(FOLDER_CHUNK, -(-total // target_tasks)))
    per_folder = []
    for folder, entries in by_folder.items():
        parts = -(-len(entries) // limit)
        size = -(-len(entries) // parts)
        per_folder.append([(folder, entries[start:start + size]) for start in range(0, len(entries), size)])
    return [chunk for row in itertools.zip_longest(*per_folder) for chunk in row if chunk is not None]


class _FolderProofs:
    """Each folder's safety proof and its symlinks, made once per folder of one `delete_many`
    however many pool tasks share it (listing a huge folder once per chunk would make the work
    quadratic, and a `realpath` per chunk costs more than the chunk's unlinks).

    A later task of the same folder opens it again and checks, with one `fstat`, that it opened the
    very directory that was proven (same device and inode); anything else is proven afresh.
    """

    def __init__(self, folders: Iterable[str], real_root: str) -> None:
        self.real_root = real_root
        self._locks = {folder: threading.Lock() for folder in folders}
        self._proven: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}

    def of(self, folder: str, fd: int, full: str) -> tuple[str | None, frozenset[str]]:
        """Why the open folder `fd` may not be mutated (None if it may), and its symlinks' names."""
        with self._locks[folder]:
            opened = os.fstat(fd)
            identity = (opened.st_dev, opened.st_ino)
            proven = self._proven.get(folder)
            if proven is not None and proven[0] == identity:
                return None, proven[1]
            refusal = _folder_refusal(fd, full, self.real_root)
            if refusal is not None:
                return refusal, frozenset()
            links = _symlink_names(fd)
            self._proven[folder] = (identity, links)
            return None, links


def _folder_refusal(fd: int, full: str, real_root: str) -> str | None:
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

def _unlink_link(fd: int, folder: str, real_root: str, path: str, name: str) -> DeleteResult:
    """Unlink a file that is itself a symlink, unless it points out of the root (as `delete`)."""
    target = os.path.join(folder, name)
    real = os.path.realpath(target)
    if os.path.commonpath([real, real_root]) != real_root:
        return DeleteResult(path, False, f"Refusing to delete {target}: it is a symlink to {real}, "
                                         f"outside the table root {real_root}.")
    try:
        os.unlink(name, dir_fd=fd)  # removes the symlink itself, never its target
    except FileNotFoundError:
        return DeleteResult(path, False)
    except OSError as e:
        return DeleteResult(path, False, _os_error("delete", target, e).message)
    return DeleteResult(path, True)


_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


def _walk_open_folder(
    fd: int, full: str, rel: str, pool: ThreadPoolExecutor,
) -> Iterator[tuple[str, list[tuple[str, os.stat_result]]]]:
    """The folders below the open folder `fd` (closed here) that hold files, each with its files'
    names and `stat`s: its own files first, names sorted.

    The order and the rules are those of the `os.walk` it replaces: symlinks to files are followed
    (their target's size), broken links and files that vanish are left out, and linked folders are
    never entered (the loop or the escape a listing must not make). Each folder is listed once and
    its files are stat-ed relative to the open folder, so no path is built or resolved per file;
    a subfolder is opened with `O_NOFOLLOW` relative to its parent, so one swapped for a link in
    between is skipped rather than followed.
    """
    try:
        try:
            names, folders = _scan(fd)
        except OSError as e:
            raise _os_error("list", full, e) from e
        files = _stat_folder(fd, full, names, pool)
        if files:
            yield rel, files
        prefix = f"{rel}/" if rel else ""
        for name in folders:
            try:
                sub = os.open(name, _DIRECTORY_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link_now(fd, name):
                    continue  # became a link since the listing: not entered, as any link
                raise _os_error("list", os.path.join(full, name), e) from e
            yield from _walk_open_folder(sub, os.path.join(full, name), prefix + name, pool)
    finally:
        os.close(fd)


def _stat_folder(fd: int, full: str, names: list[str], pool: ThreadPoolExecutor) -> list[tuple[str, os.stat_result]]:
    """`_stat_files` of a folder, a large one in `STAT_THREADS + 1` parts at once (this thread does
    one): a `stat` spends most of its time in the kernel with the GIL released, so the parts overlap
    on the machine's cores. Every part is finished before this returns, while `fd` is still open."""
    if len(names) < STAT_PARALLEL_FROM or STAT_THREADS == 0:
        return _stat_files(fd, full, names)
    size = -(-len(names) // (STAT_THREADS + 1))
    parts = [pool.submit(_stat_files, fd, full, names[start:start + size])
             for start in range(size, len(names), size)]
    try:
        files = _stat_files(fd, full, names[:size])
        for part in parts:  # in order, so the names stay sorted; a part's error is raised here
            files += part.result()
    finally:
        wait(parts)  # even after an error: no part may outlive the caller's `fd`
    return files


def _stat_files(fd: int, full: str, names: list[str]) -> list[tuple[str, os.stat_result]]:
    """`(name, stat)` of the open folder's files among `names`, following links to files; names that
    vanished, broken links and links to folders are left out."""
    files = []
    stat = os.stat
    for name in names:
        try:
            st = stat(name, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            raise _os_error("stat", os.path.join(full, name), e) from e
        if not S_ISDIR(st.st_mode):
            files.append((name, st))
    return files


def _scan(fd: int) -> tuple[list[str], list[str]]:
    """The open folder's non-folder names and its real (not linked) subfolders, each sorted.

    The entry types come from the listing itself; only a link (or a file system that gives no
    types) costs a `stat` to tell a linked folder from a linked file.
    """
    files: list[str] = []
    folders: list[str] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                files.append(entry.name)
            elif not _is_link(entry):
                folders.append(entry.name)
    files.sort()
    folders.sort()
    return files, folders


def _is_link_now(fd: int, name: str) -> bool:
    """`name` in the open folder is a symlink (Linux refuses to open one as a folder with either
    ELOOP or ENOTDIR, which a folder replaced by a plain file also gives)."""
    try:
        return S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:  # as `os.walk`: an entry that cannot be examined is entered, and fails there
        return False


def _symlink_names(fd: int) -> frozenset[str]:
    """Names in the open folder that are symlinks; the listing's entry types make this one pass."""
    with os.scandir(fd) as entries:
        return frozenset(e.name for e in entries if e.is_symlink())


def _write_temp(directory: str, name: str, data: bytes) -> str:
    """Write `data` durably to a new hidden temp file next to `name` and return its path.

    The name is hidden and ends in `.tmp`, which matches no timeline file-name pattern, so a
    leftover from a crash cannot be mistaken for an instant.
    """
    temp = _temp_path(directory, name)
    try:
        with open(temp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        _remove_quietly(temp)
        raise _os_error("write", temp, e) from e
    return temp


def _create_empty(full: str) -> None:
    """Create `full` as an empty file; refuse an existing name (a link, dangling or not, included)."""
    try:
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except FileExistsError as e:
        raise AlreadyExists(full) from e
    except OSError as e:
        raise _os_error("create", full, e) from e
    os.close(fd)


def _temp_path(directory: str, name: str) -> str:
    """A fresh hidden name beside `name`; the `.tmp` suffix matches no Hudi file-name pattern."""
    return os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")


def _fsync_file(f: BinaryIO, location: str) -> None:
    try:
        os.fsync(f.fileno())
    except OSError as e:
        raise _os_error("write", location, e) from e


def _link_new(temp: str, full: str) -> None:
    """Give the finished temp file its final name; `link` refuses an existing name, so it never
    replaces a file and of two racing creators exactly one wins."""
    try:
        os.link(temp, full)
    except FileExistsError as e:
        raise AlreadyExists(full) from e
    except OSError as e:
        raise _os_error("create", full, e) from e


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
