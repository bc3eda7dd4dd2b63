"""Builds `TableState` values in memory for planner tests: no files, no I/O.

    b = StateBuilder()
    b.commit(1, {"p": ["a", "b"]})          # base files for groups a, b at instant t(1)
    b.commit(2, {"p": ["a"]})               # a new version of group a
    b.replace(3, {"p": ["b"]}, {"p": ["c"]})  # group b replaced, group c written
    state = b.state()
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from runner.hudi.files import BaseFile, LogFile
from runner.hudi.instant import Action, Instant, InstantTime, State
from runner.hudi.metadata import CleanMetadata, CommitMetadata, CompactionOperation, SavepointMetadata, WriteStat
from runner.hudi.properties import TableConfig
from runner.hudi.state import TableMetadata, TableState, pending_operation_bases, replaced_groups
from runner.hudi.timeline import Timeline
from runner.hudi.view import ListedFiles, build_file_groups
from runner.vocabulary import TableType


def t(n: int) -> InstantTime:
    """The n-th instant time: 2024-01-01 00:00:00.000 plus n seconds."""
    return InstantTime(f"20240101{n // 3600:02d}{n % 3600 // 60:02d}{n % 60:02d}000")


@dataclass
class StateBuilder:
    layout: int = 1
    files: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    instant_files: list[Instant] = field(default_factory=list)
    commits: dict[InstantTime, CommitMetadata] = field(default_factory=dict)
    savepoints: dict[InstantTime, SavepointMetadata] = field(default_factory=dict)
    compactions: dict[Instant, tuple[CompactionOperation, ...]] = field(default_factory=dict)
    log_compactions: dict[Instant, tuple[CompactionOperation, ...]] = field(default_factory=dict)
    last_clean: tuple[Instant, CleanMetadata] | None = None
    empty_cleans: list[Instant] = field(default_factory=list)
    clustering: set[tuple[str, str]] = field(default_factory=set)
    partitions: set[str] = field(default_factory=set)

    def _base(self, n: int, partition: str, file_id: str, size: int = 100) -> str:
        name = BaseFile(file_id, "0-1-2", t(n), "parquet").name
        self.files.setdefault(partition, []).append((name, size))
        self.partitions.add(partition)
        return name

    def _instant(self, n: int, action: Action, state: State) -> Instant:
        instant = Instant(t(n), action, state)
        self.instant_files.append(instant)
        return instant

    def commit(self, n: int, writes: dict[str, list[str]], *, action: Action = Action.COMMIT,
               size: int = 100) -> None:
        stats = {p: tuple(WriteStat(p, f, f"{p}/{self._base(n, p, f, size)}", None, 1, 1, 0, 0, size, size)
                          for f in fids) for p, fids in writes.items()}
        self._instant(n, action, State.COMPLETED)
        self.commits[t(n)] = CommitMetadata("UPSERT", stats)

    def delta_commit(self, n: int, logs: dict[str, list[tuple[str, int]]]) -> None:
        """Log files for (file id, base instant number) pairs, layout 1 naming."""
        for partition, entries in logs.items():
            for file_id, base in entries:
                name = LogFile(file_id, t(base), 1, "0-1-2").name
                self.files.setdefault(partition, []).append((name, 10))
        self._instant(n, Action.DELTA_COMMIT, State.COMPLETED)
        self.commits[t(n)] = CommitMetadata("UPSERT", {p: () for p in logs})

    def replace(self, n: int, replaced: dict[str, list[str]], writes: dict[str, list[str]] | None = None) -> None:
        stats = {p: tuple(WriteStat(p, f, f"{p}/{self._base(n, p, f)}", None, 1, 1, 0, 0, 100, 100)
                          for f in fids) for p, fids in (writes or {}).items()}
        self._instant(n, Action.REPLACE_COMMIT, State.COMPLETED)
        self.commits[t(n)] = CommitMetadata(
            "INSERT_OVERWRITE", stats, {p: tuple(f) for p, f in replaced.items()}, is_replace=True)

    def pending(self, n: int, action: Action = Action.COMMIT, files: dict[str, list[str]] | None = None) -> None:
        for partition, fids in (files or {}).items():
            for file_id in fids:
                self._base(n, partition, file_id)
        self._instant(n, action, State.INFLIGHT)

    def pending_compaction(self, n: int, ops: dict[tuple[str, str], int], *, log: bool = False) -> None:
        action = Action.LOG_COMPACTION if log else Action.COMPACTION
        instant = self._instant(n, action, State.REQUESTED)
        operations = tuple(CompactionOperation(p, f, str(t(base)), None, ()) for (p, f), base in ops.items())
        (self.log_compactions if log else self.compactions)[instant] = operations

    def savepoint(self, n: int, names: dict[str, list[str]]) -> None:
        self._instant(n, Action.SAVEPOINT, State.COMPLETED)
        self.savepoints[t(n)] = SavepointMetadata("me", 0, "", {p: tuple(v) for p, v in names.items()})

    def clean(self, n: int, *, ectr: int | None, savepointed: Sequence[int] = (), empty: bool = False) -> None:
        instant = self._instant(n, Action.CLEAN, State.COMPLETED)
        if empty:
            self.empty_cleans.append(instant)
            return
        extra = {"savepointed_timestamps": ",".join(str(t(s)) for s in savepointed)} if savepointed else {}
        self.last_clean = (
            instant,
            CleanMetadata(str(t(n)), 0, 0, str(t(ectr)) if ectr is not None else "", "", {}, extra),
        )

    def name(self, n: int, file_id: str) -> str:
        return BaseFile(file_id, "0-1-2", t(n), "parquet").name

    def metadata(self, *, timezone: str = "UTC") -> TableMetadata:
        props = {
            "hoodie.table.name": "t",
            "hoodie.table.type": TableType.COPY_ON_WRITE,
            "hoodie.table.version": "6" if self.layout == 1 else "8",
            "hoodie.table.timeline.timezone": timezone,
        }
        config = TableConfig.from_properties(props, path="hoodie.properties")
        timeline = Timeline.from_file_names([i.file_name for i in self.instant_files], folder=".hoodie")
        return TableMetadata(
            base_path="/t",
            config=config,
            timeline=timeline,
            timeline_folder=".hoodie",
            commits=MappingProxyType(dict(self.commits)),
            replaced=MappingProxyType(replaced_groups(timeline, self.commits)),
            compaction_plans=MappingProxyType(dict(self.compactions)),
            pending_compaction=MappingProxyType(pending_operation_bases(self.compactions)),
            pending_log_compaction=MappingProxyType(pending_operation_bases(self.log_compactions)),
            pending_clustering=frozenset(self.clustering),
            runner_pending_clustering=(),
            savepoints=MappingProxyType(dict(self.savepoints)),
            last_clean=self.last_clean,
            empty_completed_cleans=tuple(self.empty_cleans),
            pending_cleans=(),
            has_metadata_table=False,
        )

    def state(self, *, timezone: str = "UTC") -> TableState:
        meta = self.metadata(timezone=timezone)
        listed = ListedFiles(tuple(sorted(self.partitions)), {p: tuple(sorted(v)) for p, v in self.files.items()})
        view = build_file_groups(
            listed,
            timeline=meta.timeline,
            layout=self.layout,
            commits=meta.commits,
            pending_compaction=meta.compaction_plans,
        )
        return TableState(meta, listed.partitions, True, view.groups, view.uncommitted)
