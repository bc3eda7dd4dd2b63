"""Small helpers shared by the bench scripts: timing, fresh table copies, Markdown tables.

Scripts run as `python bench/bench_x.py`, which puts this folder on `sys.path`, so `import _common`
works without packaging.
"""

from __future__ import annotations

import functools
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def timed(action: Callable[[], T]) -> tuple[float, T]:
    """Wall-clock seconds of one call (`time.perf_counter`), and what it returned."""
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def fresh_copy(source: Path, dest: Path, *, hardlink: bool = False) -> Path:
    """A fresh copy of a table folder at `dest` (replacing what is there).

    The default is a real copy (`cp -r`, holes kept sparse) followed by `os.sync()`, so the files
    are on disk like any table's old files: deleting a file the kernel has not written back yet
    frees no disk blocks, and on this machine's ext4 (mounted with `discard`) that made unlinking
    about 10x cheaper than unlinking synced files.

    `hardlink=True` (`cp -al`) takes a second or two even for 500,000 files: new directories,
    every file hard-linked, which is safe for Hudi tables because they only ever create and delete
    files. Deleting a hard link only drops a link count (about 18x cheaper than a synced
    file here), which isolates the CPU cost of whatever deletes the files.
    """
    remove_tree(dest)
    flags = ["-al"] if hardlink else ["-r", "--sparse=always"]
    subprocess.run(["cp", *flags, str(source), str(dest)], check=True)
    os.sync()
    return dest


def remove_tree(path: Path) -> None:
    """`rm -rf`, several times faster than `shutil.rmtree` on folders of many thousand files."""
    if path.exists():
        subprocess.run(["rm", "-rf", str(path)], check=True)
    assert not path.exists()


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str = "") -> str:
    """A GitHub Markdown table; `align` holds one `l` or `r` per column (default: first left, rest right)."""
    align = align or "l" + "r" * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _children(pid: int) -> list[int]:
    # A child is listed under the thread that forked it: the JVM starts Spark's Python workers from
    # its own threads, so every thread's list is needed, not only the main thread's.
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as listing:
                found.extend(int(child) for child in listing.read().split())
        except OSError:
            continue
    return found


def tree_rss_bytes(root: int | None = None) -> int:
    """Resident memory of a process and all its descendants (Linux `/proc`), in bytes.

    Spark work runs in a JVM and Python workers that are children of this process, so the RSS of
    this process alone (or `ru_maxrss`) would miss most of a Spark job's memory.
    """
    page = os.sysconf("SC_PAGE_SIZE")
    pending, total = [root or os.getpid()], 0
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * page
        except OSError:
            continue  # the process ended between listing and reading
        pending.extend(_children(pid))
    return total


class PeakRss:
    """Samples `tree_rss_bytes()` every `interval` seconds while in the `with` block.

    `peak` is the high-water mark of the whole process tree, `start` the tree's RSS on entry, so
    `peak - start` is what the measured step added on top of what was already resident. Sampling
    misses spikes shorter than the interval; 20 ms is far below a multi-second rewrite.
    """

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.start = self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, tree_rss_bytes())

    def __enter__(self) -> PeakRss:
        self.start = self.peak = tree_rss_bytes()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, tree_rss_bytes())

    @property
    def added(self) -> int:
        return self.peak - self.start


__all__ = ["PeakRss", "fresh_copy", "markdown_table", "median", "remove_tree", "timed", "tree_rss_bytes"]


def empty_unlink_floor(work: Path, files: int) -> tuple[float, float]:
    """(wall, CPU) seconds of a bare `os.unlink` loop over `files` empty, synced files made in
    `work/floor`: the metadata-table benches' baseline (`bench_mdt.py`, `bench_mdt_clean.py`)."""
    folder = work / "floor"
    folder.mkdir()
    paths = [str(folder / f"f{i:08d}") for i in range(files)]
    for path in paths:
        with open(path, "wb"):
            pass
    os.sync()
    wall, cpu = time.perf_counter(), time.process_time()
    for path in paths:
        os.unlink(path)
    taken = time.perf_counter() - wall, time.process_time() - cpu
    folder.rmdir()
    return taken


def thread_clock() -> tuple[float, float]:
    """This thread's on-CPU and run-queue seconds so far (Linux schedstat): its wall time beyond
    both is time it was blocked, on the GIL among others, whatever else the machine runs."""
    with open("/proc/thread-self/schedstat") as f:
        on_cpu, waiting, _ = f.read().split()
    return int(on_cpu) / 1e9, int(waiting) / 1e9


def numpy_base64_head(data: bytes) -> bytes | None:
    """The resize4 round's Base64 decoder of a long bloom-filter value, kept as the baseline of the
    benches that measured it (the runner decodes with pybase64 since the resize5 round): all but
    the last quantum of `data` decoded by a table of the 12 bits of every pair of characters, numpy
    releasing the GIL in each step; None when a pair holds anything but alphabet characters."""
    import numpy as np

    pairs = _base64_pair_values()[np.frombuffer(data, "<u2", count=(len(data) - 4) // 2)]
    if int(pairs.max()) > 0xFFF:
        return None
    words = np.left_shift(pairs[0::2], 20, dtype=np.uint32)
    words |= np.left_shift(pairs[1::2], 8, dtype=np.uint32)
    head: bytes = words.astype(">u4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    return head


@functools.cache
def _base64_pair_values() -> Any:
    """The 12 bits each pair of Base64 characters stands for, indexed by the pair read as a
    little-endian 16-bit number; 0xFFFF for a pair with a character outside the alphabet."""
    import numpy as np

    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    six = np.full(256, 64, np.uint32)
    six[np.frombuffer(alphabet, np.uint8)] = np.arange(64, dtype=np.uint32)
    pair = np.arange(1 << 16, dtype=np.uint32)
    first, second = six[pair & 0xFF], six[pair >> 8]
    return np.where((first < 64) & (second < 64), first << 6 | second, 0xFFFF).astype(np.uint16)
