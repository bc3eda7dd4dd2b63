"""Instants: one file on a Hudi timeline, parsed from and formatted back to its exact file name.

Layout 1 (table version 6) names files `<t>.<action>` when completed, `<t>.<action>.inflight` and
`<t>.<action>.requested` otherwise. Layout 2 (versions 8 and 9) adds the completion time to completed
instants, `<t>_<completion>.<action>`; instants carried over from layout 1 may keep the old form.
Both layouts name an inflight *commit* `<t>.inflight`, without the action.

Instant times are `yyyyMMddHHmmssSSS` (17 digits) or, in tables written before Hudi 0.9, 14 digits
with second granularity. Hudi compares a 14-digit time as if it ended in `999`
(`HoodieInstantTimeGenerator.fixInstantTimeCompatibility`); `InstantTime` does the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from runner.errors import TimelineError

# re.ASCII: Python's \d takes any script's digits (fullwidth, Arabic-Indic), Hudi's Java patterns only
# 0-9. Such a name read as an instant sorted after every real one while `to_datetime` read its year.
_TIME_RE = re.compile(r"\d{14}|\d{17,}", re.ASCII)


class InstantTime(str):
    """An instant time string that orders the way Hudi orders instant times.

    Equality and hashing stay those of the exact string (a file name round-trips); only ordering
    treats a 14-digit time as `<t>999`, so `20240101000000` sorts after `20240101000000500`.
    """

    __slots__ = ()

    def __new__(cls, value: str) -> InstantTime:
        if isinstance(value, InstantTime):
            return value
        if not isinstance(value, str) or not _TIME_RE.fullmatch(value):
            raise ValueError(f"expected an instant time of 14 or 17 digits, got {value!r}")
        return super().__new__(cls, value)

    @property
    def normalized(self) -> str:
        return self + "999" if len(self) == 14 else str(self)

    def __lt__(self, other: object) -> bool:
        return self.normalized < _norm(other)

    def __le__(self, other: object) -> bool:
        return self.normalized <= _norm(other)

    def __gt__(self, other: object) -> bool:
        return self.normalized > _norm(other)

    def __ge__(self, other: object) -> bool:
        return self.normalized >= _norm(other)

    def to_datetime(self) -> datetime:
        """The wall-clock time the instant names, in the table's timeline timezone (naive).

        Raises:
            ValueError: the digits name no calendar time (month 13, February 30), saying which field.
        """
        # Fixed-width fields, as Hudi's `yyyyMMddHHmmssSSS` formatter reads them: strptime takes a
        # one-digit month when two digits make no month, so 20261301000000 became January 30, 10:00.
        t = self.normalized
        return datetime(int(t[0:4]), int(t[4:6]), int(t[6:8]), int(t[8:10]), int(t[10:12]), int(t[12:14]),
                        int(t[14:17]) * 1000)

    @classmethod
    def from_datetime(cls, value: datetime) -> InstantTime:
        return cls(value.strftime("%Y%m%d%H%M%S") + f"{value.microsecond // 1000:03d}")

    def plus_millis(self, millis: int) -> InstantTime:
        return InstantTime.from_datetime(self.to_datetime() + timedelta(milliseconds=millis))


def _norm(other: object) -> str:
    if isinstance(other, InstantTime):
        return other.normalized
    if isinstance(other, str):
        return other + "999" if len(other) == 14 else other
    raise TypeError(f"cannot compare an instant time with {type(other).__name__}")


class Action(StrEnum):
    """Every action Hudi writes on a timeline (`HoodieTimeline.VALID_ACTIONS_IN_TIMELINE`)."""

    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RESTORE = "restore"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    REPLACE_COMMIT = "replacecommit"
    CLUSTERING = "clustering"
    INDEXING = "indexing"
    SCHEMA_COMMIT = "schemacommit"


class State(StrEnum):
    """An instant's lifecycle state. Never compare members directly: use `State.rank`."""

    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"

    @property
    def rank(self) -> int:
        return _STATE_RANK[self]


_STATE_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}

# What a pending action becomes once completed: compaction completes as a commit, log compaction
# as a deltacommit, and (layout 2) clustering as a replacecommit.
COMPLETES_AS: dict[Action, Action] = {
    Action.COMPACTION: Action.COMMIT,
    Action.LOG_COMPACTION: Action.DELTA_COMMIT,
    Action.CLUSTERING: Action.REPLACE_COMMIT,
}

# Actions whose completed instants make up Hudi's "commits timeline".
WRITE_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT})

_NAME_RE = re.compile(
    r"(?P<time>\d+)(?:_(?P<completion>\d+))?\.(?P<action>[a-z]+)(?:\.(?P<state>requested|inflight))?",
    re.ASCII,  # as _TIME_RE
)


@dataclass(frozen=True, slots=True)
class Instant:
    """One timeline file. `completion_time` is set only for layout-2 completed instants.

    `Instant.parse(name).file_name == name` for every name Hudi writes.
    """

    time: InstantTime
    action: Action
    state: State
    completion_time: InstantTime | None = None

    @classmethod
    def parse(cls, file_name: str) -> Instant:
        """Parse a timeline file name; raises TimelineError if it is not an instant file.

        The bare `<t>.inflight` is the inflight commit of both layouts.
        """
        match = _NAME_RE.fullmatch(file_name)
        if match is None:
            raise _bad_name(file_name, "a name like 20240101120000123.commit")
        time, completion = match["time"], match["completion"]
        action_text, state_text = match["action"], match["state"]
        if action_text == "inflight" and state_text is None and completion is None:
            action_text, state_text = "commit", "inflight"
        try:
            action = Action(action_text)
            instant_time = InstantTime(time)
            done = InstantTime(completion) if completion else None
        except ValueError as error:
            raise _bad_name(file_name, f"a known action and 14/17-digit times ({error})") from None
        state = State(state_text) if state_text else State.COMPLETED
        if done is not None and state is not State.COMPLETED:
            raise _bad_name(file_name, "a completion time only on completed instants")
        instant = cls(instant_time, action, state, done)
        if instant.file_name != file_name:  # e.g. `<t>.commit.inflight`, which Hudi never writes
            raise _bad_name(file_name, f"the canonical form {instant.file_name}")
        return instant

    @property
    def file_name(self) -> str:
        if self.state is State.COMPLETED:
            stem = f"{self.time}_{self.completion_time}" if self.completion_time else self.time
            return f"{stem}.{self.action}"
        if self.state is State.INFLIGHT and self.action is Action.COMMIT:
            return f"{self.time}.inflight"
        return f"{self.time}.{self.action}.{self.state}"

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def family(self) -> Action:
        """The action this instant has once completed: compaction → commit, clustering → replacecommit."""
        return COMPLETES_AS.get(self.action, self.action)

    @property
    def sort_key(self) -> tuple[str, int]:
        return (self.time.normalized, self.state.rank)

    def with_state(self, state: State, completion_time: InstantTime | None = None) -> Instant:
        """The same instant moved to another state; completing a compaction makes it a commit."""
        action = self.family if state is State.COMPLETED else self.action
        return Instant(self.time, action, state, completion_time if state is State.COMPLETED else None)


def _bad_name(file_name: str, expected: str) -> TimelineError:
    return TimelineError(
        f"timeline file {file_name!r} is not a valid instant file name: expected {expected}",
        path=file_name,
    )
