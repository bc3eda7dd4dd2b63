"""Hudi's heartbeat for the writer's own commit, so a Hudi writer does not roll back a live write.

A Hudi writer with the LAZY failed-writes cleaning policy (Hudi's setting for several writers) rolls
back every pending commit whose heartbeat has expired (`HoodieHeartbeatClient.isHeartbeatExpired`),
and a commit with no heartbeat file counts as expired at once (its last beat is read as 0). So a
pending commit of ours with no heartbeat would have its files deleted under it while its tasks still
write them, and its commit would then name files that are gone. Hudi's writer (`start`,
`updateHeartbeat`, `stop`) creates `.hoodie/.heartbeat/<instant>`, recreates it every
`hoodie.client.heartbeat.interval_in_ms` (60 s) and deletes it when the commit ends; Hudi judges it
by its modification time only, with 2 tolerable misses. The writer does the same.

Its file holds `RUNNER_MARK` (Hudi's are empty; Hudi never reads the content), which tells the
writer's own rollback (`runner.writer.rollback`) that a fresh heartbeat is a runner write's, which
runs under the table's runner lock for its whole length: the next write, holding that lock, knows
the write that left it has died (killed before its `finally`), where a Hudi writer's fresh
heartbeat means a live writer.
"""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType

from runner.errors import StepFailed
from runner.storage import Storage

log = logging.getLogger(__name__)

FOLDER = ".hoodie/.heartbeat"
INTERVAL_S = 60.0  # hoodie.client.heartbeat.interval_in_ms
TOLERABLE_MISSES = 2  # hoodie.client.heartbeat.tolerable.misses
RUNNER_MARK = b"runner.write\n"


def heartbeat_path(instant: str) -> str:
    return f"{FOLDER}/{instant}"


def is_runners(storage: Storage, instant: str) -> bool:
    """Whether `instant`'s heartbeat file was written by the runner's writer."""
    path = heartbeat_path(instant)
    try:
        return storage.stat(path) is not None and storage.read(path) == RUNNER_MARK
    except Exception:  # gone meanwhile or unreadable: not known to be ours
        return False


class CommitHeartbeat:
    """The heartbeat of one commit: beats on entry and every `interval_s` until exit, when its file
    is deleted (whether the commit completed or failed: the writer is no longer writing it)."""

    def __init__(self, storage: Storage, instant: str, *, interval_s: float = INTERVAL_S) -> None:
        self.storage, self.instant, self.interval_s = storage, instant, interval_s
        self.beats = 0
        self._last_ok = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> CommitHeartbeat:
        self._beat()  # the first beat before anything of the commit is written, as Hudi's `start`
        self._thread = threading.Thread(target=self._run, name=f"runner-commit-heartbeat-{self.instant}",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self.storage.delete(heartbeat_path(self.instant))
        except Exception as failure:  # a completed commit stays completed: Hudi reads heartbeats of pending ones only
            log.warning("Could not delete the heartbeat of commit %s: %s", self.instant, failure)

    def check(self) -> None:
        """Raise if the heartbeat lapsed (a Hudi writer may have rolled this commit back meanwhile)
        or its file is gone (a Hudi rollback deletes it): the commit must not complete then."""
        lapsed = time.monotonic() - self._last_ok > self.interval_s * TOLERABLE_MISSES
        if lapsed or self.storage.stat(heartbeat_path(self.instant)) is None:
            raise StepFailed(
                f"The heartbeat of commit {self.instant} of {self.storage.uri} "
                f"{'lapsed' if lapsed else 'was deleted'} while it was written, so a Hudi writer may have "
                "rolled it back; it is not completed.",
                hint="write again: the failed commit is rolled back first.",
            )

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._beat()
            except Exception as error:  # retried next interval; `check` fails the commit if it lapses
                log.warning("Could not renew the heartbeat of commit %s: %s", self.instant, error)

    def _beat(self) -> None:
        self.storage.overwrite(heartbeat_path(self.instant), RUNNER_MARK)
        self._last_ok = time.monotonic()
        self.beats += 1
