"""Small-file reconcile planning: which latest base files to rewrite together, per partition.

Candidates are the latest base files below `small_file_limit` of active (non-replaced) file groups
that are not in pending compaction, log compaction or clustering. Slices with log files are left
alone: rewriting them needs merging their logs, which only a Hudi reader can do faithfully.
"""

from __future__ import annotations

from runner.declarations.model import FileSizing
from runner.hudi.files import relative_path
from runner.hudi.state import TableState
from runner.plan.model import FileToRewrite, RewriteGroup, SizingStep
from runner.sizing import plan_bins


def plan_sizing(sizing: FileSizing, state: TableState) -> SizingStep | None:
    """Bin-pack each partition's small files into groups of at most `max_file_size` bytes."""
    if sizing.small_file_limit <= 0:
        return None
    meta = state.metadata
    busy = set(meta.pending_compaction) | set(meta.pending_log_compaction) | set(meta.pending_clustering)
    candidates: dict[str, dict[str, FileToRewrite]] = {}
    for group in state.active_groups:
        latest = group.latest
        if group.key in busy or latest is None or latest.base_file is None or latest.log_files:
            continue
        if latest.base_file.extension != "parquet":  # the rewrite job writes parquet only
            continue
        base = latest.base_file
        if base.size < sizing.small_file_limit:
            path = relative_path(group.partition, base.name)
            candidates.setdefault(group.partition, {})[group.file_id] = FileToRewrite(group.file_id, path, base.size)
    groups: list[RewriteGroup] = []
    for partition in sorted(candidates):
        files = candidates[partition]
        bins = plan_bins(
            [(fid, f.size) for fid, f in sorted(files.items())],
            max_file_size=sizing.max_file_size,
            small_file_limit=sizing.small_file_limit,
        )
        groups.extend(RewriteGroup(partition, tuple(files[fid] for fid in b.file_ids)) for b in bins)
    return SizingStep(sizing.max_file_size, sizing.small_file_limit, tuple(groups))
