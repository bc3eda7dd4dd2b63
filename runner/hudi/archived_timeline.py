"""Completion times of archived instants, from the LSM timeline of timeline layout 2.

Table versions 8 and 9 archive instants into `.hoodie/<timeline>/<history>` (`hoodie.timeline.path`,
default `timeline`; `hoodie.timeline.history.path`, default `history`), laid out as Hudi's
`LSMTimeline` writes it: parquet files `<min>_<max>_<layer>.parquet` of `HoodieLSMTimelineInstant`
records (`instantTime`, `completionTime`, `action`, ...), a `manifest_<N>` JSON file per snapshot
version listing the valid files (`{"files": [{"fileName": ..., "fileLen": ...}]}`), and `_version_`
holding the latest version (else the greatest manifest number counts, as Hudi falls back to).

Only the planner's view asks, and only when a log file's delta commit is no longer on the active
timeline: Hudi's `CompletionTimeQueryView` reads the completion time here, and when it finds none
takes the log for its group's latest slice. A history that cannot be read finds nothing, so the
view takes that same cautious answer (`runner.hudi.view`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from runner.errors import CorruptMetadataError, StorageError
from runner.hudi.instant import InstantTime
from runner.hudi.json_text import NestedTooDeeply, load_json, too_large

if TYPE_CHECKING:
    from runner.storage import Storage

_VERSION_FILE = "_version_"
_MAX_MANIFEST_BYTES = 64 * 1024 * 1024  # one entry per history file: a few KiB in practice
_MANIFEST_RE = re.compile(r"manifest_(\d+)", re.ASCII)
_DATA_RE = re.compile(r"(\d+)_(\d+)_(\d+)\.parquet", re.ASCII)


def history_folder(timeline_folder: str, raw_properties: Mapping[str, str]) -> str:
    """The LSM timeline's folder below the base path (layout 2)."""
    return f"{timeline_folder}/{raw_properties.get('hoodie.timeline.history.path', 'history') or 'history'}"


def archived_completion_times(storage: Storage, folder: str,
                              wanted: Collection[InstantTime]) -> dict[InstantTime, InstantTime]:
    """The completion time of each of `wanted` that the LSM timeline in `folder` records.

    Never raises for a missing, partial or unreadable history: what cannot be read is not found.

    Raises:
        CorruptMetadataError: the latest manifest is larger than any manifest, or its JSON nested
            too deeply to read: no writer's crash leaves such a file, so it is named, not taken as
            an empty history.
    """
    if not wanted:
        return {}
    try:
        names = _snapshot_files(storage, folder)
    except (StorageError, OSError, ValueError):
        return {}
    low = min(wanted, key=lambda t: t.normalized).normalized
    high = max(wanted, key=lambda t: t.normalized).normalized
    want = {t.normalized: t for t in wanted}
    found: dict[InstantTime, InstantTime] = {}
    for name in names:
        match = _DATA_RE.fullmatch(name)
        if match is None:
            continue
        first, last = (InstantTime(v).normalized if _is_time(v) else v for v in match.group(1, 2))
        if last < low or first > high:  # the file's instants lie outside those asked for
            continue
        for instant, completion in _read_times(storage, f"{folder}/{name}"):
            asked = want.get(instant)
            if asked is not None and asked not in found:
                found[asked] = completion
    return found


def _snapshot_files(storage: Storage, folder: str) -> list[str]:
    """The data files of the latest snapshot version's manifest (none when there is no history)."""
    version: int | None = None
    try:
        version = int(storage.read(f"{folder}/{_VERSION_FILE}").decode("utf-8").strip())
    except (StorageError, ValueError, UnicodeDecodeError):
        versions = [int(m.group(1)) for f in storage.list_dir(folder)
                    if (m := _MANIFEST_RE.fullmatch(f.path.rsplit("/", 1)[-1])) is not None]
        version = max(versions, default=None)
    if version is None:
        return []
    path = f"{folder}/manifest_{version}"
    info = storage.stat(path)
    shown = f"{storage.uri.rstrip('/')}/{path}"
    refused = too_large(shown, info.size if info is not None else None, _MAX_MANIFEST_BYTES)
    if refused is not None:
        raise refused
    data = storage.read(path)
    try:
        manifest = load_json(data or b"{}", path=shown, expected="an LSM timeline manifest (JSON)")
    except NestedTooDeeply:
        raise
    except CorruptMetadataError as error:
        raise ValueError(error.message) from None  # partial or not JSON: an unreadable history, not found
    files = manifest.get("files") or [] if isinstance(manifest, dict) else []
    return [str(f["fileName"]) for f in files if isinstance(f, dict) and isinstance(f.get("fileName"), str)]


def _read_times(storage: Storage, path: str) -> list[tuple[str, InstantTime]]:
    """(normalized instant time, completion time) of every completed record of one history file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(storage.read(path)), columns=["instantTime", "completionTime"])
    except (StorageError, OSError, ValueError, KeyError, pa.ArrowException):
        return []
    pairs = []
    for instant, completion in zip(table.column("instantTime").to_pylist(),
                                   table.column("completionTime").to_pylist(), strict=True):
        if isinstance(instant, str) and _is_time(instant):
            # Hudi takes a record without a completion time as completed at its instant time.
            done = completion if isinstance(completion, str) and _is_time(completion) else instant
            pairs.append((InstantTime(instant).normalized, InstantTime(done)))
    return pairs


def _is_time(value: str) -> bool:
    try:
        InstantTime(value)
    except ValueError:
        return False
    return True
