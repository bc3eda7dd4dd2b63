"""Writes instants the way Hudi does: requested → inflight → completed, each a new file.

Every file is created with `write_new`, so an instant file, once present, is never rewritten: a
crash between two steps leaves the earlier files only, which is how Hudi recognises a pending
operation (and how the next apply knows to finish it). On S3 that is a conditional put, so of two
writers of one instant exactly one succeeds.

Each write first proves the folder is still a Hudi table (`hoodie.properties` readable): a timeline
file must never be the first thing created in a plain or missing folder.
"""

from __future__ import annotations

from datetime import UTC, datetime

from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.timeline import Timeline
from runner.storage import Storage
from runner.storage.guard import require_table


def new_instant_time(timeline: Timeline, *, clock: datetime, table_timezone: str) -> InstantTime:
    """A fresh instant time from the clock, in the table's timeline timezone, strictly greater than
    every requested and completion time already on the timeline (Hudi's monotonic generator)."""
    aware = clock if clock.tzinfo else clock.replace(tzinfo=UTC)
    zone = UTC if table_timezone.upper() == "UTC" else None
    candidate = InstantTime.from_datetime(aware.astimezone(zone).replace(tzinfo=None))
    latest = timeline.latest_time
    if latest is not None and candidate <= latest:
        candidate = InstantTime(latest.normalized[:17]).plus_millis(1)
    return candidate


class TimelineWriter:
    """Creates instant files in one table's timeline folder."""

    def __init__(self, storage: Storage, folder: str, layout: int) -> None:
        self.storage = storage
        self.folder = folder
        self.layout = layout

    def path(self, instant: Instant) -> str:
        return f"{self.folder}/{instant.file_name}"

    def requested(self, time: InstantTime, action: Action, data: bytes) -> Instant:
        return self._write(Instant(time, action, State.REQUESTED), data)

    def inflight(self, time: InstantTime, action: Action, data: bytes = b"") -> Instant:
        return self._write(Instant(time, action, State.INFLIGHT), data)

    def complete(self, pending: Instant, data: bytes, *, completion: InstantTime | None) -> Instant:
        """Write the completed file; layout 2 names it with its completion time."""
        done = pending.with_state(State.COMPLETED, completion if self.layout >= 2 else None)
        return self._write(done, data)

    def _write(self, instant: Instant, data: bytes) -> Instant:
        require_table(self.storage, f"write {instant.file_name} into")
        self.storage.write_new(self.path(instant), data)
        return instant
