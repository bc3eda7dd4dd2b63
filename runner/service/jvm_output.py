"""Sending the Spark JVM's own output to a log file instead of the terminal."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def jvm_output_to(log_path: str | None) -> Iterator[None]:
    """Send the output of a JVM started inside this block to `log_path` (None: leave it alone).

    The Spark driver JVM inherits this process's stderr when it starts and keeps it for its whole
    life, so pointing file descriptor 2 at a log file just for the start-up moves all of Spark's
    WARN and log4j lines there, while Python's own stderr is restored straight after.
    """
    if log_path is None:
        yield
        return
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(log, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)
