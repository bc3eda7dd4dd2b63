"""Data files, file slices and file groups.

A base file is `<fileId>_<writeToken>_<instant>.<ext>`, written by the commit, compaction or
clustering at `<instant>`. A log file is `.<fileId>_<instant>.log.<version>_<writeToken>`: in table
version 6 `<instant>` is the base instant of the slice the log belongs to; in versions 8 and 9 it is
the delta commit's own requested time, and the slice is found through completion times.

A file group is `(partition, fileId)`; its slices are keyed by base instant, newest first.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from runner.allocation import quick_init
from runner.hudi.instant import InstantTime

BASE_FORMATS = ("parquet", "orc", "hfile", "lance")

_BASE_RE = re.compile(
    r"(?P<file_id>[^_/]+)_(?P<token>\d+-\d+-\d+)_(?P<time>\d{14}|\d{17,})\.(?P<ext>"
    + "|".join(BASE_FORMATS)
    + r")",
    re.ASCII,  # Hudi's file-name patterns take the digits 0-9 only (see runner.hudi.instant._TIME_RE)
)
_LOG_RE = re.compile(
    r"\.(?P<file_id>[^_/]+)_(?P<time>\d{14}|\d{17,})\.(?P<ext>log|archive)\.(?P<version>\d+)"
    r"(?:_(?P<token>\d+-\d+-\d+))?(?P<cdc>\.cdc)?",
    re.ASCII,
)


def _unnamed(pattern: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


# Exactly the names `is_data_file_name` accepts, as one pattern without groups (to match many names
# at once); built from the two above so the rules cannot drift apart.
DATA_FILE_PATTERN = f"{_unnamed(_BASE_RE.pattern)}|{_unnamed(_LOG_RE.pattern).replace('log|archive', 'log', 1)}"


# A table's files carry few distinct instant times, so each is parsed once rather than per file.
_instant_time = functools.lru_cache(maxsize=4096)(InstantTime)


def write_token(partition_id: int, stage_id: int, attempt_id: int) -> str:
    """The write token in file names: the Spark task's `<partitionId>-<stageId>-<taskAttemptId>`
    (Hudi's `FSUtils.makeWriteToken`); it tells apart the files of retried task attempts."""
    return f"{partition_id}-{stage_id}-{attempt_id}"


@quick_init
@dataclass(frozen=True, slots=True)
class BaseFile:
    """A base (columnar) file. `size` is in bytes, -1 when unknown.

    `parsed_name` is the name `parse` read (empty when built from parts): planning asks for a
    file's name several times per file, and a listing of 100,000 files should not format it anew.
    """

    file_id: str
    write_token: str
    instant_time: InstantTime
    extension: str
    size: int = -1
    parsed_name: str = field(default="", repr=False, compare=False)

    @classmethod
    def parse(cls, name: str, size: int = -1) -> BaseFile | None:
        """Parse a base file name; None if `name` is not one."""
        match = _BASE_RE.fullmatch(name)
        if match is None:
            return None
        file_id, token, time, extension = match.groups()  # the pattern's groups, in this order
        return cls(file_id, token, _instant_time(time), extension, size, name)

    @property
    def name(self) -> str:
        return self.parsed_name or f"{self.file_id}_{self.write_token}_{self.instant_time}.{self.extension}"


@dataclass(frozen=True, slots=True)
class LogFile:
    """A log file of a merge-on-read slice (or a CDC log, with `cdc`)."""

    file_id: str
    instant_time: InstantTime
    version: int
    write_token: str | None
    cdc: bool = False
    extension: str = "log"
    size: int = -1

    @classmethod
    def parse(cls, name: str, size: int = -1) -> LogFile | None:
        """Parse a log file name; None if `name` is not one (archive logs are not data files)."""
        match = _LOG_RE.fullmatch(name)
        if match is None or match["ext"] != "log":
            return None
        return cls(
            match["file_id"], _instant_time(match["time"]), int(match["version"]), match["token"],
            bool(match["cdc"]), match["ext"], size,
        )

    @property
    def name(self) -> str:
        token = f"_{self.write_token}" if self.write_token else ""
        cdc = ".cdc" if self.cdc else ""
        return f".{self.file_id}_{self.instant_time}.{self.extension}.{self.version}{token}{cdc}"

    @property
    def sort_key(self) -> tuple[str, int, str]:
        return (self.instant_time.normalized, self.version, self.write_token or "")


def is_data_file_name(name: str) -> bool:
    """True for names a cleaner may ever delete: Hudi base files and (CDC) log files.

    Exactly the names `BaseFile.parse` or `LogFile.parse` accepts (the matches are their only
    conditions), without building the parsed object: every path of a clean plan is checked.
    """
    if _BASE_RE.fullmatch(name) is not None:
        return True
    log = _LOG_RE.fullmatch(name)
    return log is not None and log["ext"] == "log"


@quick_init
@dataclass(frozen=True, slots=True)
class FileSlice:
    """One version of a file group: a base instant, its base file (absent for log-only slices or
    a slice opened by a pending compaction) and the log files written on top of it."""

    partition: str
    file_id: str
    base_instant: InstantTime
    base_file: BaseFile | None = None
    log_files: tuple[LogFile, ...] = ()

    @property
    def files(self) -> tuple[BaseFile | LogFile, ...]:
        return ((self.base_file,) if self.base_file else ()) + self.log_files

    @property
    def file_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.files)

    @property
    def size(self) -> int:
        return sum(max(f.size, 0) for f in self.files)


@quick_init
@dataclass(frozen=True, slots=True)
class FileGroup:
    """All committed slices of `(partition, file_id)`, newest base instant first."""

    partition: str
    file_id: str
    slices: tuple[FileSlice, ...] = field(default=())

    @property
    def latest(self) -> FileSlice | None:
        return self.slices[0] if self.slices else None

    @property
    def key(self) -> tuple[str, str]:
        return (self.partition, self.file_id)


def relative_path(partition: str, name: str) -> str:
    """`<partition>/<name>`, or just the name for a non-partitioned table."""
    return f"{partition}/{name}" if partition else name
