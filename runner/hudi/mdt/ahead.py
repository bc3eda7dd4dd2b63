"""A clean's index tombstones encoded in a process of their own while the clean's deletes run.

The deletes are many threads calling `unlink`, and each takes the GIL back after every call. The
encoding (numpy layout, HFile framing, CRC32C, gzip) holds the GIL for seconds in total when it
runs on a thread of the same process, and the deletes queue behind it. In a child process it
shares no GIL with them, only the machine's cores.

The child is a fresh interpreter (`python -m runner.hudi.mdt.ahead <driver pid>`), never a fork:
the driver may hold a py4j gateway and threads. It reads one pickled `EncodeJob` on stdin (the
plan's file names, the MDT partitions' file groups, the record schema: all it needs, so it reads
no storage) and writes the pickled log contents on stdout; it writes no file. It exits as soon as
the driver is gone (`runner.orphans`), so a killed apply leaves no encoder behind.

The driver decides whether to use the result: `CleanMaintenance` takes it only for the clean's
own files, and `write_mdt_commit` only while the partition's file groups are those it was cut for.
A child that fails or dies is not an error: the driver encodes after the deletes, as without it.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from runner.hudi.mdt.actions import clean_commit
from runner.hudi.mdt.writer import EncodedLogs, encode_groups
from runner.hudi.metadata import CleanMetadata, CleanPartitionMetadata
from runner.orphans import exit_with

log = logging.getLogger(__name__)

# data partition -> names of the files a clean deletes there
Names = Mapping[str, tuple[str, ...]]
# The folder that holds the `runner` package, for a child started with another working directory.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


@dataclass(frozen=True, slots=True)
class EncodeJob:
    """Everything the tombstones' log files depend on; `groups`: MDT partition -> its file-group ids
    in shard order (they decide which log file each record goes to)."""

    instant: str
    names: Names
    groups: Mapping[str, tuple[str, ...]]
    stats_columns: tuple[str, ...]
    schema: str
    version: int  # the MDT's table version: key layout, HFile layout, checksums
    legacy_keys: bool
    created_ms: int


def tombstones(job: EncodeJob) -> dict[str, Mapping[str, bytes]]:
    """The index partitions' records of the clean (`clean_commit` of a clean listing `job.names`)."""
    clean = CleanMetadata(job.instant, 0, 0, "", "", {
        p: CleanPartitionMetadata(p, "", files, files, ()) for p, files in job.names.items()
    }, {}, 2)
    commit = clean_commit(job.instant, clean, mdt_partitions=tuple(job.groups), stats_columns=job.stats_columns,
                          schema=job.schema, legacy_keys=job.legacy_keys)
    return {p: r for p, r in commit.records.items() if p in job.groups}


def encode(job: EncodeJob) -> dict[str, EncodedLogs]:
    """The log files `write_mdt_commit` would write for the job's tombstones (pure)."""
    return {p: encode_groups(r, job.groups[p], job.instant, job.schema, job.created_ms, job.version)
            for p, r in tombstones(job).items()}


class Encoder:
    """One job running in a child process; `result()` waits for its logs, None if it failed."""

    def __init__(self, job: EncodeJob) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.job = job
        self._stopped = False
        # Orders `stop` against the child's start, so that a child started after `stop` cannot be missed.
        self._lock = threading.Lock()
        self._future: Future[dict[str, EncodedLogs] | None] = _WAITERS.submit(self._run)

    def result(self) -> dict[str, EncodedLogs] | None:
        return self._future.result()

    def stop(self) -> None:
        """End the child now (its work is not wanted); `result()` is then None."""
        with self._lock:
            self._stopped = True
            if self.process is not None and self.process.poll() is None:
                self.process.kill()

    def stopped(self) -> bool:
        return self._stopped

    def _run(self) -> dict[str, EncodedLogs] | None:
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, environment.get("PYTHONPATH")) if p)
        try:
            with self._lock:
                if self._stopped:
                    return None
                # -P: `-m` would import from the working directory first, which may hold another
                # checkout of the runner than the driver's.
                self.process = subprocess.Popen(
                    [sys.executable, "-P", "-m", __name__, str(os.getpid())],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment,
                )
            # This thread only waits on the pipes (no GIL held): the child does the work.
            out, err = self.process.communicate(pickle.dumps(self.job, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as error:
            log.info("the index tombstones were not encoded ahead (the encoder did not start: %s)", error)
            return None
        if self.stopped():  # killed, or done too late to be wanted
            return None
        if self.process.returncode != 0:
            log.info("the index tombstones were not encoded ahead (the encoder exited with %s%s); "
                     "they are encoded after the deletes", self.process.returncode,
                     f": {err.decode(errors='replace').strip().splitlines()[-1]}" if err.strip() else "")
            return None
        logs: dict[str, EncodedLogs] = pickle.loads(out)
        return logs


class ThreadEncoder(Encoder):
    """The same job on a thread of this process: for a small clean (`maintain.CHILD_FROM`), whose
    encoding takes less than a child interpreter's start-up. `stop` only discards its result: the
    encoding, pure CPU of at most about a second at that size, runs to its end."""

    def _run(self) -> dict[str, EncodedLogs] | None:
        if self._stopped:
            return None
        try:
            return encode(self.job)
        except Exception as error:  # the hook encodes again after the deletes, and raises it there
            log.info("the index tombstones were not encoded ahead: %s", error)
            return None


# Waits on each encoder's pipes; one clean's encoding at a time is enough.
_WAITERS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mdt-ahead")


def _main(argv: list[str]) -> int:
    exit_with(int(argv[1]))
    job: EncodeJob = pickle.load(sys.stdin.buffer)
    logs = encode(job)
    pickle.dump(logs, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
