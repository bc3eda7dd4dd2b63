"""Chart-ready numbers for the report, computed from a table's state and plan (pure, no I/O).

The browser only draws what is computed here, so every number on the page is tested in Python.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from runner.errors import TimelineError
from runner.hudi.instant import Action, Instant
from runner.hudi.state import TableState
from runner.plan.model import TablePlan
from runner.vocabulary import TableType

HISTOGRAM_BINS = 24

# How the timeline groups Hudi's actions into the few kinds a reader of the report cares about.
_KIND = {
    Action.COMMIT: "commit",
    Action.DELTA_COMMIT: "commit",
    Action.CLEAN: "clean",
    Action.REPLACE_COMMIT: "replace",
    Action.CLUSTERING: "clustering",
    Action.SAVEPOINT: "savepoint",
    Action.COMPACTION: "compaction",
    Action.LOG_COMPACTION: "compaction",
    Action.ROLLBACK: "rollback",
    Action.RESTORE: "rollback",
}


def size_histogram(state: TableState, *, small_file_limit: int, max_file_size: int) -> dict[str, Any]:
    """Sizes of the latest base files in equal-width bins from 0 to past the largest marker or file.

    The upper bound covers `max_file_size` so both markers always sit on the axis, whatever the files.
    """
    sizes = sorted(
        s.base_file.size for g in state.active_groups if (s := g.latest) is not None
        and s.base_file is not None and s.base_file.size >= 0
    )
    top = max([max_file_size, small_file_limit, *sizes, 1])
    top = int(top * 1.05) + 1
    width = -(-top // HISTOGRAM_BINS)
    counts = [0] * HISTOGRAM_BINS
    for size in sizes:
        counts[min(size // width, HISTOGRAM_BINS - 1)] += 1
    return {
        "bin_width": width,
        "bins": [{"start": i * width, "end": (i + 1) * width, "count": c} for i, c in enumerate(counts)],
        "files": len(sizes),
        "small_files": sum(1 for s in sizes if s < small_file_limit),
        "small_file_limit": small_file_limit,
        "max_file_size": max_file_size,
    }


def versions_per_group(state: TableState) -> dict[str, Any]:
    """How many file groups hold 1, 2, 3, ... committed slices (replaced groups counted apart)."""
    replaced = state.metadata.replaced
    active = Counter(len(g.slices) for g in state.file_groups if g.key not in replaced and g.slices)
    gone = Counter(len(g.slices) for g in state.file_groups if g.key in replaced and g.slices)
    most = max([*active, *gone, 1])
    return {
        "versions": [
            {"versions": n, "active_groups": active.get(n, 0), "replaced_groups": gone.get(n, 0)}
            for n in range(1, most + 1)
        ],
        "max_versions": max((len(g.slices) for g in state.file_groups), default=0),
    }


def reclaimable_by_partition(plan: TablePlan) -> list[dict[str, Any]]:
    """Bytes and files the plan's clean deletes, per partition, largest first ("" is the table root)."""
    if plan.clean is None:
        return []
    totals: dict[str, list[int]] = {}
    for f in plan.clean.files_to_delete:
        entry = totals.setdefault(f.partition, [0, 0])
        entry[0] += f.size
        entry[1] += 1
    rows = [{"partition": p or "(table root)", "bytes": b, "files": n} for p, (b, n) in totals.items()]
    return sorted(rows, key=lambda r: (-r["bytes"], r["partition"]))


def timeline_points(state: TableState) -> list[dict[str, Any]]:
    """Every instant with its kind; a replacecommit written by clustering counts as clustering."""
    meta = state.metadata
    return [
        {
            "time": str(i.time),
            "iso": _iso(i, meta.config.timeline_dir),
            "action": i.action.value,
            "kind": _kind(i, state),
            "state": i.state.value,
        }
        for i in meta.timeline.instants
    ]


def _iso(instant: Instant, folder: str) -> str:
    try:
        return instant.time.to_datetime().isoformat(timespec="milliseconds")
    except ValueError as error:  # month 13, say: Hudi's own readers cannot place it in time either
        raise TimelineError(
            f"{folder}/{instant.file_name}: instant time {instant.time} is no calendar time ({error}), so the "
            "report cannot place it on the timeline",
            path=f"{folder}/{instant.file_name}",
            hint="check which tool wrote this file; Hudi names instants by the time they were made.",
        ) from None


def _kind(instant: Instant, state: TableState) -> str:
    if instant.action is Action.COMMIT and state.metadata.config.table_type is TableType.MERGE_ON_READ:
        return "compaction"  # on merge-on-read tables only a compaction completes as a commit
    if instant.action is Action.REPLACE_COMMIT:
        commit = state.metadata.commits.get(instant.time)
        if commit is not None and (commit.operation_type or "").upper() == "CLUSTER":
            return "clustering"
    return _KIND.get(instant.action, "other")
