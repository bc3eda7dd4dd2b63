"""The runner's table lock: at most one runner applies a plan to a table at a time.

The lock is a small JSON file, `.hoodie/.locks/runner.lock`, taken only in a folder that is already a
Hudi table (`runner.storage.guard`). It excludes other *runners* only: Hudi writers do not know about
it, which is why plans re-check their requirements before the first write.

Creation is exclusive on every store (`Storage.write_new`: a hard link locally, a conditional put
with `If-None-Match: *` on S3), so two runners can never both create it.

Heartbeat. Like Hudi's writers (`HoodieHeartbeatClient`), the holder proves it is alive by renewing
the lock every `heartbeat_interval_s` from a background thread: it rewrites the file with a new
`heartbeat_at`. A lock is *stale*, and is taken over with a warning, when its last heartbeat is
older than `stale_after_s` (Hudi: interval × tolerable misses, 60 s × 2 by default), or when it was
taken on this host, in this pid namespace of this boot (`process_namespace`), by a process that no
longer exists. A long run is never taken over while its holder is alive, however long it takes; a
lock from another host, or from another process table on this one (a container sharing the host's
network and so its host name), is judged by its heartbeat only (its pid means nothing here).
Hosts' clocks must agree to well within `stale_after_s`, as Hudi's heartbeats also assume.

Every change to an existing lock file is a compare-and-swap (`Storage.replace_if`/`delete_if`): a
renewal, a takeover and a release act only if the file still holds the exact bytes last seen, so
exactly one of two rivals wins and a holder can never overwrite a lock someone else took over. A
holder that finds its lock gone or someone else's stops renewing and *fences* the table: every
further write through any `Storage` of that table in this process raises `LockError` before it
touches anything. A holder that could not renew for half of `stale_after_s` (a stalled process, a
store that keeps failing) renews synchronously before its next write, and stops if that fails.
Files written by Spark executors in other processes are not fenced; they belong to an instant that
the fenced driver can no longer complete, and Hudi's rollback removes them.

Deleting a live lock file by hand is outside that guarantee: a plain delete can fall between a
renewal's compare and its swap, and the holder then writes its lock back. Stop the holder instead;
its lock goes stale within `stale_after_s` and the next runner takes it over.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from types import TracebackType

from runner.errors import LockError, StorageError
from runner.storage.base import AlreadyExists, Storage
from runner.storage.fence import fence
from runner.storage.guard import require_table

LOCK_PATH = ".hoodie/.locks/runner.lock"
HEARTBEAT_INTERVAL_S = 15.0
STALE_AFTER_S = 120.0

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
        heartbeat_at: the holder's last renewal; staleness is judged by it. Lock files written
            before heartbeats existed have none, and are judged by `acquired_at`.
        pid_namespace: the holder's process table (`process_namespace`); its pid means something
            only to a runner with the same one. Empty in lock files written before it was recorded.
    """

    owner: str
    host: str
    pid: int
    acquired_at: datetime
    run_id: str
    heartbeat_at: datetime | None = None
    pid_namespace: str = ""

    @property
    def last_sign_of_life(self) -> datetime:
        return self.heartbeat_at or self.acquired_at

    def to_json_bytes(self) -> bytes:
        beat = self.last_sign_of_life
        fields = asdict(self) | {
            "acquired_at": self.acquired_at.isoformat(timespec="seconds"),
            "heartbeat_at": beat.isoformat(timespec="milliseconds"),
        }
        return json.dumps(fields, indent=2).encode() + b"\n"

    @classmethod
    def from_json_bytes(cls, data: bytes) -> LockHolder:
        """Parse a lock file. Raises `ValueError` (or `KeyError`/`TypeError`) if it is not one."""
        raw = json.loads(data)
        beat = raw.get("heartbeat_at")
        return cls(
            owner=str(raw["owner"]),
            host=str(raw["host"]),
            pid=int(raw["pid"]),
            acquired_at=_aware(datetime.fromisoformat(raw["acquired_at"])),
            run_id=str(raw["run_id"]),
            heartbeat_at=None if beat is None else _aware(datetime.fromisoformat(beat)),
            pid_namespace=str(raw.get("pid_namespace", "")),
        )

    def describe(self) -> str:
        run = f", run {self.run_id}" if self.run_id else ""
        since = self.acquired_at.isoformat(timespec="seconds")
        beat = (
            "" if self.heartbeat_at is None else f", last heartbeat {self.heartbeat_at.isoformat(timespec='seconds')}"
        )
        return f"{self.owner} (host {self.host}, pid {self.pid}{run}) since {since}{beat}"


class TableLock:
    """Context manager holding the runner lock of one table for the duration of `apply` or a write.

    Args:
        storage: the table's storage; the folder must already be a Hudi table.
        owner: recorded in the lock for whoever finds it.
        stale_after_s: a lock whose last heartbeat is older than this is taken over.
        heartbeat_interval_s: how often the holder renews its heartbeat; must be well below
            `stale_after_s` so that missed renewals are tolerated.
        run_id: identifies this acquisition (defaults to a fresh UUID); pass the plan's run id so
            the lock file and the run report can be matched.

    Raises:
        NotAHudiTableError: on entry, if the folder is not a Hudi table (nothing is written).
        LockError: on entry, if a live lock is held by someone else; on any later write to the
            table, and on exit, if the lock was lost while held.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        owner: str,
        stale_after_s: float = STALE_AFTER_S,
        heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S,
        run_id: str | None = None,
    ) -> None:
        if not 0 < heartbeat_interval_s < stale_after_s:
            raise ValueError("heartbeat_interval_s must be positive and below stale_after_s")
        self.storage = storage
        self.owner = owner
        self.stale_after_s = stale_after_s
        self.heartbeat_interval_s = heartbeat_interval_s
        self.run_id = run_id or uuid.uuid4().hex
        self.taken_over: LockHolder | None = None
        """The stale lock this acquisition replaced, if any."""
        self._mine: LockHolder | None = None
        self._written = b""  # the exact bytes of our last write: the compare-and-swap token
        self._renewed_at = 0.0  # time.monotonic() of the last successful write
        self._lost: str | None = None
        self._renewing = threading.Lock()  # one renewal at a time (heartbeat thread or fence)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fence: contextlib.ExitStack | None = None

    @property
    def location(self) -> str:
        return f"{self.storage.uri.rstrip('/')}/{LOCK_PATH}"

    @property
    def lost(self) -> str | None:
        """Why the lock was lost while held, or None while it is ours."""
        return self._lost

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
        if exc is None and self._lost is not None:
            raise self._lost_error()

    def acquire(self) -> LockHolder | None:
        """Take the lock, replacing a stale one, and start the heartbeat. Returns the holder replaced.

        Raises:
            NotAHudiTableError: the folder is not a Hudi table; nothing was written.
            LockError: another runner holds a live lock, or won a race for it.
        """
        require_table(self.storage, "take the runner lock on")
        now = _now()
        mine = LockHolder(self.owner, socket.gethostname(), os.getpid(), now, self.run_id, now,
                          pid_namespace=process_namespace())
        data = mine.to_json_bytes()
        for _ in range(3):
            try:
                self.storage.write_new(LOCK_PATH, data)
            except AlreadyExists:
                if not self._take_over_if_stale(data):
                    continue
            self._start(mine, data)
            return self.taken_over
        raise LockError(
            f"Could not take the lock {self.location}: other runners keep taking it.",
            hint="retry later.",
        )

    def release(self) -> bool:
        """Stop the heartbeat and delete the lock file if it is still ours.

        Returns False if it was gone or someone else's (then it is left alone).
        """
        self._stop_heartbeat()
        with self._renewing:  # no renewal may run between our last write and the delete
            written, self._written, self._mine = self._written, b"", None
        if not written:
            return False
        if self.storage.delete_if(LOCK_PATH, written):
            return True
        log.warning("Not releasing %s: it is no longer held by run %s.", self.location, self.run_id)
        return False

    def check(self) -> None:
        """Raise `LockError` if the lock was lost; renew first if the heartbeat is overdue.

        Runs before every write to the table (the storage fence), in whatever thread writes.
        """
        if self._lost is None and time.monotonic() - self._renewed_at > self.stale_after_s / 2:
            self._renew()
        if self._lost is not None:
            raise self._lost_error()

    def _start(self, mine: LockHolder, data: bytes) -> None:
        self._mine, self._written, self._renewed_at = mine, data, time.monotonic()
        self._lost = None
        self._stop.clear()
        self._fence = contextlib.ExitStack()
        self._fence.enter_context(fence(self.storage.uri, self.check))
        self._thread = threading.Thread(target=self._beat, name=f"runner-lock-heartbeat-{self.run_id}", daemon=True)
        self._thread.start()

    def _stop_heartbeat(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None
        if self._fence is not None:
            self._fence.close()
            self._fence = None

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_interval_s):
            if not self._renew():
                return

    def _renew(self) -> bool:
        """Rewrite our lock with a new heartbeat, only if it still holds our last write.

        Returns False once the lock is lost (and records why); a failed write is retried at the next
        beat until the heartbeat is overdue by `stale_after_s`, when someone may have taken over.
        """
        with self._renewing:
            if self._lost is not None or self._mine is None:
                return self._lost is None  # lost, or released: nothing to renew
            beat = replace(self._mine, heartbeat_at=_now())
            data = beat.to_json_bytes()
            try:
                renewed = self.storage.replace_if(LOCK_PATH, self._written, data)
            except StorageError as error:
                overdue = time.monotonic() - self._renewed_at
                if overdue <= self.stale_after_s / 2:
                    log.warning("Could not renew the lock %s (will retry): %s", self.location, error)
                    return True
                self._lose(f"its heartbeat could not be renewed for {overdue:.0f} s ({error})")
                return False
            if not renewed:
                self._lose(self._why_not_ours())
                return False
            self._mine, self._written, self._renewed_at = beat, data, time.monotonic()
            return True

    def _lose(self, why: str) -> None:
        self._lost = why
        log.error("Lost the lock %s: %s. Stopping all writes to the table.", self.location, why)

    def _why_not_ours(self) -> str:
        try:
            current = self._read()
        except StorageError as error:
            return f"it could not be read back ({error})"
        if current is None:
            return "the lock file was deleted"
        return f"it is now held by {current[0].describe()}"

    def _lost_error(self) -> LockError:
        return LockError(
            f"Run {self.run_id} lost the lock {self.location} while working: {self._lost}. "
            "It stopped before writing anything more.",
            hint="check who else works on the table; the next run finishes or rolls back what this one left pending.",
        )

    def _take_over_if_stale(self, mine: bytes) -> bool:
        """Replace the existing lock with ours if it is stale. False: it changed, try again.

        Raises:
            LockError: the lock is live.
        """
        found = self._read()
        if found is None:
            return False  # released between our attempt and this read
        holder, raw = found
        if not self._is_stale(holder):
            raise self._held_by(holder)
        if not self.storage.replace_if(LOCK_PATH, raw, mine):
            return False  # renewed or taken by someone else meanwhile
        self.taken_over = holder
        log.warning("Took over the stale lock %s held by %s.", self.location, holder.describe())
        return True

    def _is_stale(self, holder: LockHolder) -> bool:
        silent_s = (_now() - holder.last_sign_of_life).total_seconds()
        if silent_s > self.stale_after_s:
            return True
        # A pid is evidence only within the holder's own process table: a host name alone is shared
        # by containers on the host's network, each with its own pids.
        here = process_namespace()
        same_table = holder.host == socket.gethostname() and holder.pid_namespace == here and bool(here)
        return same_table and not pid_alive(holder.pid)

    def _read(self) -> tuple[LockHolder, bytes] | None:
        """The current holder and the file's exact bytes, or None if there is no lock file.

        A lock file that cannot be parsed (hand-edited, or written by another tool) is reported as an
        unknown holder dated by the file's modification time, so it too becomes stale with age.
        """
        data = self._read_bytes()
        if data is None:
            return None
        try:
            return LockHolder.from_json_bytes(data), data
        except (ValueError, KeyError, TypeError):
            return self._unreadable_holder(), data

    def _read_bytes(self, attempts: int = 3) -> bytes | None:
        """The lock file's bytes, or None if there is none.

        A read that fails while the file exists may have met a rival's takeover half way (deleted
        when read, re-created when checked): it is read again, and an error stands only if it
        persists.
        """
        attempt = 1
        while True:
            try:
                return self.storage.read(LOCK_PATH)
            except StorageError:
                if self.storage.stat(LOCK_PATH) is None:
                    return None
                if attempt == attempts:
                    raise
                attempt += 1

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


def process_namespace() -> str:
    """This process's pid namespace and boot (`pid:[4026531836]@<boot id>` on Linux): processes that
    share a host name (containers on the host's network) may each have their own process table, and
    a pid is only evidence to a process that shares both. Empty where the system does not say."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            return f"{namespace}@{boot.read().strip()}"
    except OSError:
        return ""


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


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _now() -> datetime:
    return datetime.now(UTC)
