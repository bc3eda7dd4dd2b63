"""Named crash points for recovery tests: `RUNNER_FAILPOINT=<name>` kills the process there;
`RUNNER_FAILPOINT=<name>:sigint` sends the process a SIGINT there instead, as Ctrl-C at that moment
would (the interrupt tests).

The process exits with `os._exit`, skipping every `finally` and context manager, as a SIGKILL
would: the lock stays behind and files written so far stay as they are. One module for apply,
resize and the writer; it imports nothing of the runner, so any layer may call it.
"""

from __future__ import annotations

import os
import signal

ENV = "RUNNER_FAILPOINT"
EXIT_CODE = 97

POINTS = (
    # apply (runner.execute)
    "after_lock",
    "after_pending_finished",
    "after_clean_requested",
    "after_clean_inflight",
    "after_delete",
    "after_mdt_requested",
    "after_mdt_inflight",
    "after_mdt_logs",
    "after_metadata_table_commit",
    "after_clean_completed",
    "after_replace_requested",
    "after_rewrite",
    "mid_rewrite",  # inside a resize task, after each row group of the new file is written
    "after_resize_metadata_table_commit",
    # rolling a resize back (`ResizeRunner.roll_back`): after its MDT deltacommit is undone, after its files went
    "after_resize_rollback_mdt",
    "after_resize_rollback_files",
    # the writer (runner.writer.write)
    "after_inflight",
    "after_files",
    "mid_file",  # inside a write task or driver thread, after each row group of a base file is written
)


def failpoint(name: str) -> None:
    assert name in POINTS, name
    chosen = os.environ.get(ENV)
    if chosen == name:
        os._exit(EXIT_CODE)
    if chosen == f"{name}:sigint":
        os.kill(os.getpid(), signal.SIGINT)  # to the process, as a terminal sends it: the main thread takes it
