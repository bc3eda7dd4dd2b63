"""The active timeline: every instant file of a table folded into one `Instant` per operation.

Unrecognised-file policy (one rule, tested): a name in the timeline folder that starts with a digit
claims to be an instant, so if it does not parse the runner refuses to read the table, because it
could be a pending operation the cleaner would have to respect. Every other name (hoodie.properties,
`.aux`, `archived`, `history`, `metadata`, `.temp`, checksum files, ...) is not an instant; it is
ignored and, where useful, reported by `runner status`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runner.errors import TimelineError
from runner.hudi.instant import WRITE_ACTIONS, Action, Instant, InstantTime, State

_WRITE_FAMILIES = frozenset(WRITE_ACTIONS)


@dataclass(frozen=True, slots=True)
class Timeline:
    """Instants ordered by requested time; each is the most advanced state of its operation.

    Args:
        instants: one per (time, action family), sorted by `Instant.sort_key`.
        files: every instant file found, all states (a completed clustering still has its
            `.clustering.requested` plan, a completed clean its `.clean.requested`).
        ignored: names in the timeline folder that are not instant files.
    """

    instants: tuple[Instant, ...]
    files: tuple[Instant, ...] = ()
    ignored: tuple[str, ...] = ()

    @classmethod
    def from_file_names(cls, names: Iterable[str], *, folder: str) -> Timeline:
        """Fold file names into instants; raises TimelineError for an unparseable instant-like name."""
        files: list[Instant] = []
        ignored: list[str] = []
        for name in names:
            if not name[:1].isdigit():
                ignored.append(name)
                continue
            try:
                files.append(Instant.parse(name))
            except TimelineError as error:
                raise TimelineError(
                    f"{folder}/{name}: {error.message}; the runner will not act on a table whose "
                    "timeline holds an instant it does not understand",
                    path=f"{folder}/{name}",
                    hint="check which tool wrote this file; remove it only if it is not a Hudi instant.",
                ) from None
        return cls(_fold(files), tuple(sorted(files, key=_file_key)), tuple(sorted(ignored)))

    # -- queries -------------------------------------------------------------------------------

    def completed(self, *actions: Action) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if i.is_completed and (not actions or i.action in actions))

    def pending(self, *actions: Action) -> tuple[Instant, ...]:
        """Requested or inflight instants whose action (as pending, e.g. `compaction`) is in `actions`."""
        return tuple(i for i in self.instants if not i.is_completed and (not actions or i.action in actions))

    @property
    def completed_writes(self) -> tuple[Instant, ...]:
        """Hudi's completed commits timeline: commit, deltacommit and replacecommit."""
        return self.completed(*WRITE_ACTIONS)

    @property
    def writes_and_compactions(self) -> tuple[Instant, ...]:
        """Every write, compaction and clustering instant in any state (`getCommitsAndCompactionTimeline`)."""
        return tuple(i for i in self.instants if i.family in _WRITE_FAMILIES)

    @property
    def earliest_write(self) -> InstantTime | None:
        """Start of the active write timeline; older data files are treated as archived, so committed."""
        writes = self.writes_and_compactions
        return writes[0].time if writes else None

    def find(self, time: str, family: Action) -> Instant | None:
        for instant in self.instants:
            if instant.time == time and instant.family is family:
                return instant
        return None

    def file_for(self, time: str, action: Action, state: State) -> Instant | None:
        """The instant file of exactly this action and state, e.g. a clean's `.requested` plan."""
        for instant in self.files:
            if instant.time == time and instant.action is action and instant.state is state:
                return instant
        return None

    @property
    def latest_time(self) -> InstantTime | None:
        """The greatest requested or completion time on the timeline; a new instant must exceed it."""
        times = [i.time for i in self.files] + [i.completion_time for i in self.files if i.completion_time]
        return max(times, default=None)


def _file_key(instant: Instant) -> tuple[str, str, int]:
    return (instant.time.normalized, instant.family.value, instant.state.rank)


def _fold(files: list[Instant]) -> tuple[Instant, ...]:
    """Keep, per (time, family), the most advanced state; pending actions keep their own name."""
    best: dict[tuple[str, Action], Instant] = {}
    for instant in files:
        key = (instant.time.normalized, instant.family)
        current = best.get(key)
        if current is None or instant.state.rank > current.state.rank:
            best[key] = instant
    return tuple(sorted(best.values(), key=lambda i: (i.sort_key[0], i.family.value)))
