"""The runner's table lock: at most one runner applies a plan to a table at a time.

The lock is a small JSON file, `.hoodie/.locks/runner.lock`, created with `Storage.write_new`, so on
local disk two runners cannot both create it. It excludes other *runners* only: Hudi writers do not
know about it, which is why plans re-check their requirements before the first write.

A runner that dies leaves its lock behind. A lock is *stale*, and is taken over with a warning, when
it is older than `stale_after_s`, or when it was taken on this host by a process that no longer
exists. A lock from another host is only ever judged by its age: its pid means nothing here.

On S3, `write_new` is check-then-put, so two runners starting in the same instant could both
believe they created the lock. Each acquisition therefore reads the lock back and gives up if it
holds someone else's `run_id`; this narrows the window to a few milliseconds but cannot close it.
The same small window exists when two runners take over one stale lock simultaneously.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from types import TracebackType

from runner.errors import LockError, StorageError
from runner.hudi.storage import AlreadyExists, Storage

LOCK_PATH = ".hoodie/.locks/runner.lock"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who holds a table lock, as recorded in the lock file.

    Args:
        owner: who started the run (a user or service name), for humans.
        host: the host name of the holding process.
        pid: the holding process id on `host`.
        acquired_at: when the lock was taken (timezone-aware, UTC).
        run_id: unique per acquisition; the only field used to decide whether a lock is ours.
    """

    owner: str
    host: str
    pid: int
    acquired_at: datetime
    run_id: str

    def to_json_bytes(self) -> bytes:
        fields = asdict(self) | {"acquired_at": self.acquired_at.isoformat(timespec="seconds")}
        return json.dumps(fields, indent=2).encode() + b"\n"

    @classmethod
    def from_json_bytes(cls, data: bytes) -> LockHolder:
        """Parse a lock file. Raises `ValueError` (or `KeyError`/`TypeError`) if it is not one."""
        raw = json.loads(data)
        acquired = datetime.fromisoformat(raw["acquired_at"])
        return cls(
            owner=str(raw["owner"]),
            host=str(raw["host"]),
            pid=int(raw["pid"]),
            acquired_at=acquired if acquired.tzinfo else acquired.replace(tzinfo=UTC),
            run_id=str(raw["run_id"]),
        )

    def describe(self) -> str:
        run = f", run {self.run_id}" if self.run_id else ""
        since = self.acquired_at.isoformat(timespec="seconds")
        return f"{self.owner} (host {self.host}, pid {self.pid}{run}) since {since}"


class TableLock:
    """Context manager holding the runner lock of one table for the duration of `apply`.

    Args:
        storage: the table's storage.
        owner: recorded in the lock for whoever finds it.
        stale_after_s: a lock older than this is taken over whatever its host or pid.
        run_id: identifies this acquisition (defaults to a fresh UUID); pass the plan's run id so
            the lock file and the run report can be matched.

    Raises:
        LockError: on entry, if a live lock is held by someone else.
    """

    def __init__(
        self, storage: Storage, *, owner: str, stale_after_s: float = 3600, run_id: str | None = None
    ) -> None:
        self.storage = storage
        self.owner = owner
        self.stale_after_s = stale_after_s
        self.run_id = run_id or uuid.uuid4().hex
        self.taken_over: LockHolder | None = None
        """The stale lock this acquisition replaced, if any."""

    @property
    def location(self) -> str:
        return f"{self.storage.uri.rstrip('/')}/{LOCK_PATH}"

    def __enter__(self) -> TableLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.release()
        except StorageError:
            if exc is None:
                raise
            # Keep the error that aborted the run; a leftover lock only delays the next run.
            log.warning("Could not release the lock %s after a failed run.", self.location, exc_info=True)

    def acquire(self) -> LockHolder | None:
        """Take the lock, replacing a stale one. Returns the stale holder replaced, if any.

        Raises:
            LockError: another runner holds a live lock, or won a race for it.
        """
        mine = LockHolder(self.owner, socket.gethostname(), os.getpid(), _now(), self.run_id)
        for _ in range(3):
            try:
                self.storage.write_new(LOCK_PATH, mine.to_json_bytes())
            except AlreadyExists:
                self._clear_if_stale()
                continue
            self._confirm_ours()
            return self.taken_over
        raise LockError(
            f"Could not take the lock {self.location}: other runners keep taking it.",
            hint="retry later.",
        )

    def release(self) -> bool:
        """Delete the lock file if it is still ours. Returns False if it was gone or someone else's."""
        current = self._read()
        if current is None or current.run_id != self.run_id:
            log.warning("Not releasing %s: it is no longer held by run %s.", self.location, self.run_id)
            return False
        return self.storage.delete(LOCK_PATH)

    def _clear_if_stale(self) -> None:
        """Delete the existing lock if it is stale and unchanged; raise `LockError` if it is live."""
        current = self._read()
        if current is None:
            return  # released between our attempt and this read: just try again
        if not self._is_stale(current):
            raise self._held_by(current)
        again = self._read()
        if again is not None and again.run_id == current.run_id:
            self.storage.delete(LOCK_PATH)
            self.taken_over = current
            log.warning("Took over the stale lock %s held by %s.", self.location, current.describe())

    def _confirm_ours(self) -> None:
        """Read the lock back: on S3 a rival's put may have replaced ours (see the module docstring)."""
        current = self._read()
        if current is None:
            raise LockError(f"The lock {self.location} disappeared right after it was taken.", hint="retry.")
        if current.run_id != self.run_id:
            raise self._held_by(current)

    def _is_stale(self, holder: LockHolder) -> bool:
        age_s = (_now() - holder.acquired_at).total_seconds()
        if age_s > self.stale_after_s:
            return True
        return holder.host == socket.gethostname() and not pid_alive(holder.pid)

    def _read(self) -> LockHolder | None:
        """The current holder, or None if there is no lock file.

        A lock file that cannot be parsed (hand-edited, or written by another tool) is reported as an
        unknown holder dated by the file's modification time, so it too becomes stale with age.
        """
        try:
            data = self.storage.read(LOCK_PATH)
        except StorageError:
            if self.storage.stat(LOCK_PATH) is None:
                return None
            raise
        try:
            return LockHolder.from_json_bytes(data)
        except (ValueError, KeyError, TypeError):
            return self._unreadable_holder()

    def _unreadable_holder(self) -> LockHolder:
        info = self.storage.stat(LOCK_PATH)
        mtime = info.mtime_ms if info and info.mtime_ms is not None else None
        since = _now() if mtime is None else datetime.fromtimestamp(mtime / 1000, tz=UTC)
        return LockHolder("<unreadable lock file>", "<unknown>", 0, since, "")

    def _held_by(self, holder: LockHolder) -> LockError:
        return LockError(
            f"Table {self.storage.uri} is locked by another runner: {holder.describe()}.",
            hint=f"wait for it to finish, or delete {self.location} if you are sure no runner is running.",
        )


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (signal 0 checks without signalling).

    A pid can be reused after its process exits, so "alive" may be a different program; that only
    makes the lock look live for longer, never the reverse.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    return True


def _now() -> datetime:
    return datetime.now(UTC)
