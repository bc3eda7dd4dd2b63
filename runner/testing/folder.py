"""The folder of one synthetic Hudi table: its clock, its timeline files and its partitions.

Every file is created once and never rewritten (`O_EXCL`), the rule Hudi's timeline relies on.
Instant times come from a deterministic clock; on timeline layout 2 a completed instant's file
name also carries its completion time, half a clock step after the requested time unless given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timedelta

from runner.hudi.files import write_token
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.testing import layout


class TableFiles:
    """Creates the files of one table below `path`.

    Args:
        path: the table's absolute base path.
        version: table version; 6 uses timeline layout 1 (`.hoodie/`), 8 layout 2 (`.hoodie/timeline/`).
        start: the first instant's wall-clock time.
        step: the gap between an instant and the next when no time is given.
    """

    def __init__(self, path: str, *, version: int, start: datetime, step: timedelta) -> None:
        self.path = path
        self.layout = 1 if version == 6 else 2
        self.timeline = ".hoodie" if self.layout == 1 else ".hoodie/timeline"
        self._start, self._step = start, step
        self._clock: datetime | None = None
        self._partitions: set[str] = set()
        self.operations = 0
        self._files = 0

    def create(self, properties: Mapping[str, str]) -> None:
        """Create `.hoodie/` with its timeline folders and `hoodie.properties`.

        Raises:
            FileExistsError: `path` already holds a table.
        """
        if os.path.exists(os.path.join(self.path, ".hoodie")):
            raise FileExistsError(f"{self.path} already holds a Hudi table (.hoodie exists)")
        os.makedirs(os.path.join(self.path, self.timeline))
        archive = "archived" if self.layout == 1 else "timeline/history"
        os.makedirs(os.path.join(self.path, ".hoodie", archive))
        text = layout.properties_text(properties, comment="Written by runner.testing.tables")
        self.put(".hoodie/hoodie.properties", text)

    def put(self, relative: str, payload: bytes) -> None:
        """Create a file below the base path; fails if it exists."""
        fd = os.open(os.path.join(self.path, relative), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, payload)
        finally:
            os.close(fd)

    def tick(self, at: datetime | None = None) -> InstantTime:
        """The next instant time: `at`, or one step after the previous instant (`start` at first).

        Raises:
            ValueError: `at` is not after the previous instant; Hudi instant times strictly increase.
        """
        when = at if at is not None else (self._start if self._clock is None else self._clock + self._step)
        if self._clock is not None and when <= self._clock:
            raise ValueError(f"instant times must increase: {when} is not after {self._clock}")
        self._clock = when
        self.operations += 1
        return InstantTime.from_datetime(when)

    def instant(
        self,
        t: InstantTime,
        action: Action,
        state: State,
        payload: bytes = b"",
        *,
        completed: InstantTime | None = None,
    ) -> None:
        """Write one timeline file; layout 2 names a completed instant `<t>_<completion>.<action>`."""
        done = None
        if state is State.COMPLETED and self.layout == 2:
            done = completed or t.plus_millis(max(1, int(self._step.total_seconds() * 500)))
        self.put(f"{self.timeline}/{Instant(t, action, state, done).file_name}", payload)

    def ensure_partition(self, partition: str, t: InstantTime) -> None:
        """Create the partition folder and its `.hoodie_partition_metadata` on the first write to it,
        even when that write later fails, as Hudi's write handles do."""
        if partition in self._partitions:
            return
        os.makedirs(os.path.join(self.path, partition), exist_ok=True)
        name = f"{partition}/.hoodie_partition_metadata" if partition else ".hoodie_partition_metadata"
        self.put(name, layout.partition_metadata(partition, t))
        self._partitions.add(partition)

    def next_token(self, task: int) -> str:
        """A write token for the `task`-th file of the current operation, unique in the table."""
        self._files += 1
        return write_token(task, self.operations, self._files)
