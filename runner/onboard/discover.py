"""Find Hudi tables below the paths `runner import` is given, and read what each says about itself.

A folder holding `.hoodie/` is a table: the search stops there (its partitions are not searched, and
a table nested inside it would be refused by `validate` anyway). Hidden folders (`.hoodie` among
them) are never entered. The search goes at most `max_depth` folders down from each path, so that
pointing it at a whole bucket costs a bounded number of listings.

Everything goes through `Storage`, so local folders and `s3://` prefixes are searched alike.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass

from runner.errors import CorruptMetadataError, RunnerError, StorageError, TableError
from runner.hudi.instant import Action, State
from runner.hudi.metadata import decode_clean_plan
from runner.hudi.properties import TableConfig
from runner.hudi.state import read_timeline
from runner.onboard import DEFAULT_MAX_DEPTH
from runner.storage import storage_for


@dataclass(frozen=True, slots=True)
class Search:
    """What one path given to `runner import` holds.

    Args:
        given: the path as the user wrote it.
        location: the path resolved: an absolute local path or a URI.
        tables: base paths of the tables found, in listing order (the path itself when it is one).
        folders: folders listed while searching.
        too_deep: folders left unsearched because they lie deeper than `max_depth`.
        unreadable: folders that could not be listed, each with why (the search went on without them).
        unreadable_folders: those folders, in the same order.
        not_searched: kernel file systems (/proc, /sys, ...) reached and left alone, each with its mount point.
    """

    given: str
    location: str
    tables: tuple[str, ...]
    folders: int
    too_deep: int
    unreadable: tuple[StorageError, ...] = ()
    unreadable_folders: tuple[str, ...] = ()
    not_searched: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CleanEvidence:
    """The cleaning policy the table's writers used last, and the file that says so."""

    policy: str
    file: str


@dataclass(frozen=True, slots=True)
class TableFacts:
    """What a declaration can be filled from: hoodie.properties and the timeline's latest clean.

    Args:
        location: the table's base path (absolute local path or URI).
        config: the parsed hoodie.properties.
        clean: the latest completed clean's policy, None when the timeline has no completed clean.
        notes: what could not be read but did not stop the import (a clean plan that failed to decode).
    """

    location: str
    config: TableConfig
    clean: CleanEvidence | None
    notes: tuple[str, ...] = ()


def search(given: str, location: str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Search:
    """Every table at or below `location`, at most `max_depth` folders down.

    Raises:
        StorageError: `location` does not exist or is a file.
    """
    storage = storage_for(location)
    root = storage.stat("")
    if root is None:
        raise StorageError(f"{given}: not found (looked for {location}); nothing was imported from it")
    _refuse_inside_a_table(given, location, root.is_dir)
    if not root.is_dir:
        raise StorageError(f"{given}: expected a Hudi table or a folder holding tables, found a file ({location})")
    tables: list[str] = []
    unreadable: list[StorageError] = []
    unreadable_folders: list[str] = []
    not_searched: list[tuple[str, str]] = []
    seen = _Seen(location)
    folders = too_deep = 0
    pending = [("", 0)]
    while pending:
        folder, depth = pending.pop()
        kernel = seen.kernel_file_system(folder)
        if kernel is not None:
            not_searched.append((_join(location, folder), kernel))
            continue
        if seen.again(folder):  # a link back up, or a second name of a folder already searched
            continue
        try:
            entries = storage.list_dir(folder)
        except StorageError as error:  # one folder the user may not read must not hide the rest
            unreadable.append(error)
            unreadable_folders.append(_join(location, folder))
            continue
        folders += 1
        if any(e.is_dir and posixpath.basename(e.path) == ".hoodie" for e in entries):
            tables.append(_join(location, folder))
            continue
        below = [e.path for e in entries if e.is_dir and not posixpath.basename(e.path).startswith(".")]
        if depth >= max_depth:
            too_deep += len(below)
            continue
        # Depth first, in name order: a stack takes the reversed listing.
        pending += [(path, depth + 1) for path in reversed(below)]
    return Search(given, location, tuple(tables), folders, too_deep, tuple(unreadable), tuple(unreadable_folders),
                  tuple(not_searched))


# File systems the kernel makes up: no table is kept there, and /proc alone holds a link to / and to
# every process's working folder (`runner import /` went round them for minutes).
_KERNEL_FILE_SYSTEMS = frozenset({"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "securityfs",
                                  "debugfs", "tracefs", "pstore", "bpf", "configfs", "fusectl", "mqueue",
                                  "hugetlbfs", "binfmt_misc", "autofs", "efivarfs", "nsfs", "rpc_pipefs"})


class _Seen:
    """Local folders already searched, by device and inode (links followed, so a folder reached by
    a second name or a link back up is searched once), and the kernel's own file systems, by device.
    URIs have no links: every folder is new."""

    def __init__(self, location: str) -> None:
        self.local = "://" not in location
        self.location = location
        self.visited: set[tuple[int, int]] = set()
        self.kernel: dict[int, str] = _kernel_devices() if self.local else {}

    def _stat(self, folder: str) -> os.stat_result | None:
        try:
            return os.stat(_join(self.location, folder))
        except OSError:  # the listing that follows says why
            return None

    def kernel_file_system(self, folder: str) -> str | None:
        if not self.kernel:
            return None
        info = self._stat(folder)
        return None if info is None else self.kernel.get(info.st_dev)

    def again(self, folder: str) -> bool:
        if not self.local:
            return False
        info = self._stat(folder)
        if info is None:
            return False
        key = (info.st_dev, info.st_ino)
        if key in self.visited:
            return True
        self.visited.add(key)
        return False


def _kernel_devices() -> dict[int, str]:
    """Device number to mount point of each kernel file system mounted here (none off Linux)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as handle:
            mounts = [line.split()[1:3] for line in handle if len(line.split()) >= 3]
    except OSError:
        return {}
    devices: dict[int, str] = {}
    for point, kind in mounts:
        if kind in _KERNEL_FILE_SYSTEMS:
            point = point.replace("\\040", " ")
            try:
                devices.setdefault(os.stat(point).st_dev, point)
            except OSError:
                continue
    return devices


def _refuse_inside_a_table(given: str, location: str, is_dir: bool) -> None:
    """Refuse a path below a table's base path (a partition, .hoodie, a data file), naming the table.

    Raises:
        StorageError: a folder above `location` holds .hoodie/hoodie.properties.
    """
    parts = location.rstrip("/").split("/")
    lowest = 3 if "://" in location else 1  # never above a bucket: `s3://bucket` is parts[:3]
    for end in range(len(parts) - 1, lowest - 1, -1):
        table = "/".join(parts[:end]) or "/"
        below = parts[end:]
        try:
            holds = storage_for(table).stat(".hoodie/hoodie.properties") is not None
        except (RunnerError, OSError):
            continue
        if holds:
            raise StorageError(f"{given}: is inside the Hudi table {table} ({_what(below, is_dir)}); import the "
                               "table itself", hint=f"run `runner import {table}`.")


def _what(below: list[str], is_dir: bool) -> str:
    if below[0] == ".hoodie":
        return "its timeline folder .hoodie" if len(below) == 1 else "a file of its timeline folder .hoodie" \
            if not is_dir else "a folder of its timeline folder .hoodie"
    if is_dir:
        return "a partition folder"
    return "a data file" if below[-1].endswith((".parquet", ".orc", ".hfile")) or ".log." in below[-1] else "a file"


def read_facts(location: str) -> TableFacts:
    """hoodie.properties and the latest completed clean's policy of the table at `location`.

    Raises:
        RunnerError: hoodie.properties is missing, unreadable, malformed or of an unsupported
            table version; the message names the table.
    """
    storage = storage_for(location)
    try:
        config, timeline, folder = read_timeline(storage)
    except TableError as error:
        raise _named(error, location) from None
    cleans = timeline.completed(Action.CLEAN)
    if not cleans:
        return TableFacts(location, config, None)
    latest = cleans[-1]
    requested = timeline.file_for(latest.time, Action.CLEAN, State.REQUESTED)
    if requested is None:
        note = (f"the latest completed clean {latest.time} has no clean.requested plan on the timeline, so its "
                "policy is unknown")
        return TableFacts(location, config, None, (note,))
    file = f"{folder}/{requested.file_name}"
    try:
        plan = decode_clean_plan(storage.read(file), path=file, base_path=storage.uri)
    except (CorruptMetadataError, StorageError) as error:
        return TableFacts(location, config, None, (f"{file} could not be read ({error.message}), so the "
                                                   "policy of the latest clean is unknown",))
    return TableFacts(location, config, CleanEvidence(plan.policy, file))


def _named(error: TableError, location: str) -> RunnerError:
    """The error with the table named: hoodie.properties problems name the file relative to the table."""
    if error.message.startswith(".hoodie/"):
        return type(error)(f"{location}/{error.message}", path=location, hint=error.hint)
    if location in error.message:
        return error
    return type(error)(f"{location}: {error.message}", path=location, hint=error.hint)


def _join(location: str, relative: str) -> str:
    return f"{location.rstrip('/')}/{relative}" if relative else location
