"""Helper processes that end with the driver that started them.

A killed driver (SIGKILL, out of memory) cannot stop its helpers, and a helper blocked on work or
on a pipe the driver shared with others may never see it go. So each helper watches the driver
itself, on a daemon thread, and exits the moment the driver is gone: nobody would use its work.
"""

from __future__ import annotations

import os
import select
import threading
import time


def exit_with(driver: int) -> None:
    """Watch `driver` on a daemon thread of this process; `os._exit(1)` once it has exited."""
    threading.Thread(target=_exit_with, args=(driver,), name="driver-watch", daemon=True).start()


def _exit_with(driver: int) -> None:
    try:
        handle = os.pidfd_open(driver)  # readable once the driver has exited, whatever reuses its pid
    except (AttributeError, OSError):  # gone already, or not Linux 5.3 or later: poll the pid
        while _alive(driver):
            time.sleep(0.5)
    else:
        select.select([handle], [], [])
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # there, under another user: not ours, so ours is gone
        return False
    return True
