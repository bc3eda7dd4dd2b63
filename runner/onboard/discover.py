"""Find Hudi tables below the paths `runner import` is given, and read what each says about itself.

A folder holding `.hoodie/` is a table: the search stops there (its partitions are not searched, and
a table nested inside it would be refused by `validate` anyway). Hidden folders (`.hoodie` among
them) are never entered. The search goes at most `max_depth` folders down from each path, so that
pointing it at a whole bucket costs a bounded number of listings.

Everything goes through `Storage`, so local folders and `s3://` prefixes are searched alike.
"""

from __future__ import annotations

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
    """

    given: str
    location: str
    tables: tuple[str, ...]
    folders: int
    too_deep: int
    unreadable: tuple[StorageError, ...] = ()


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
    if not root.is_dir:
        raise StorageError(f"{given}: expected a Hudi table or a folder holding tables, found a file ({location})")
    tables: list[str] = []
    unreadable: list[StorageError] = []
    folders = too_deep = 0
    pending = [("", 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            entries = storage.list_dir(folder)
        except StorageError as error:  # one folder the user may not read must not hide the rest
            unreadable.append(error)
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
    return Search(given, location, tuple(tables), folders, too_deep, tuple(unreadable))


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
