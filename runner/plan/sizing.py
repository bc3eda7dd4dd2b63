"""Small-file reconcile planning: which latest base files to rewrite together, per partition.

Candidates are the latest base files below `small_file_limit` of active (non-replaced) file groups
that are not in pending compaction, log compaction or clustering, and that no pending write may
change (`runner.hudi.pending_writes`: a group it updates, a partition it inserts into, or the whole
table while a pending write's reach is unknown). Slices with log files are left alone: rewriting
them needs merging their logs, which only a Hudi reader can do faithfully. A table laid out for
Hudi's bucket index is never resized (`runner.hudi.bucket_index`): its writers would no longer find
the moved records; nor one that evolves its schema on read (`runner.hudi.schema_on_read`): readers
would match the rewritten files' columns to the wrong schema version. Skeletons of a metadata-only
bootstrap (`runner.hudi.bootstrap`) are never inputs: their records' data lives outside them.
"""

from __future__ import annotations

from collections.abc import Iterable

from runner.declarations.model import FileSizing
from runner.hudi.bootstrap import is_skeleton
from runner.hudi.bucket_index import bucket_index_evidence, bucket_index_refusal
from runner.hudi.files import BaseFile, relative_path
from runner.hudi.schema_on_read import schema_on_read_evidence
from runner.hudi.state import TableMetadata, TableState
from runner.plan.model import FileToRewrite, RewriteGroup, SizingStep
from runner.sizing import plan_bins


def busy_groups(state: TableState) -> frozenset[tuple[str, str]]:
    """Groups a table service or an in-flight write is working on: never rewritten now."""
    meta = state.metadata
    pending = {str(i.time) for i in meta.timeline.pending()}
    written = set()
    for path in state.uncommitted_files:  # files a pending write already produced
        partition, _, name = path.rpartition("/")
        base = BaseFile.parse(name)
        if base is not None and str(base.instant_time) in pending:
            written.add((partition, base.file_id))
    return frozenset(set(meta.pending_compaction) | set(meta.pending_log_compaction)
                     | set(meta.pending_clustering) | written)


def resize_refusal(meta: TableMetadata, file_ids: Iterable[str]) -> str | None:
    """Why no file group of this table may be rewritten by a resize, or None: a bucket index
    (`runner.hudi.bucket_index`; `file_ids` are its active groups, or the groups to rewrite) or
    schema evolution on read (`runner.hudi.schema_on_read`). Planning and the executor ask alike."""
    bucketed = bucket_index_evidence(meta.config.raw, has_bucket_index_folder=meta.has_bucket_index_folder,
                                     file_ids=file_ids)
    if bucketed is not None:
        return bucket_index_refusal(bucketed, what="resize", fix=(
            "remove `file_sizing` from this table's declaration (or set small_file_limit: 0) and size it "
            "with Hudi's own bucket tools"))
    latest = meta.timeline.completed_writes[-1].time if meta.timeline.completed_writes else None
    commit = meta.commits.get(latest) if latest is not None else None
    evolved = schema_on_read_evidence(
        meta.config.raw, has_schema_history=meta.has_schema_history,
        latest_commit=(str(latest), commit.extra_metadata) if latest is not None and commit is not None else None)
    if evolved is not None:
        return ("resize refused: the table evolves its schema on read: " + evolved + ". Hudi reads each "
                "file by the schema version of the instant in its name, matching columns by id, and a "
                "rewritten file would be read by the newest version (a renamed column as nulls); remove "
                "`file_sizing` from this table's declaration and use Hudi's clustering")
    return None


def _table_refusal(state: TableState) -> str | None:
    return resize_refusal(state.metadata, (g.file_id for g in state.active_groups))


# How every note of `resize_blocked_notes` begins (a refusal of the table, or a wait for a pending
# write), so that a saved plan's refused resize can quote the fresh plan's reason.
BLOCKED_NOTE_PREFIXES = ("resize refused", "no resize")


def resize_blocked_notes(state: TableState) -> list[str]:
    """Why a resize leaves a table or some partitions alone now (bucket index, pending writes),
    for the plan."""
    refusal = _table_refusal(state)
    if refusal is not None:
        return [refusal]
    writes = state.metadata.pending_writes
    if writes.unknown:
        return [f"no resize this run: {writes.unknown[0]}; resizing could hide its rows, so it waits "
                "until the write completes or is rolled back"]
    if writes.partitions:
        return [f"no resize in partition(s) {', '.join(repr(p) for p in sorted(writes.partitions))}: "
                "a pending write inserts there, possibly into the small files a resize would replace"]
    return []


def small_files_note(sizing: FileSizing, state: TableState) -> str | None:
    """What a resize would find, for tables that did not ask for one (information only)."""
    step = plan_sizing(sizing, state)
    if step is None or step.is_empty:
        return None
    files = sum(len(g.files) for g in step.groups)
    size = sum(g.total_bytes for g in step.groups)
    return (f"information: {files} small base files ({size} bytes) below {sizing.small_file_limit} bytes "
            "could be rewritten into fewer files; apply rewrites data only for tables whose declaration "
            "or project defaults have a `file_sizing` block")


def plan_sizing(sizing: FileSizing, state: TableState) -> SizingStep | None:
    """Bin-pack each partition's small files into groups of at most `max_file_size` bytes."""
    if sizing.small_file_limit <= 0:
        return None
    if _table_refusal(state) is not None:  # every group stays: `resize_blocked_notes` says why
        return SizingStep(sizing.max_file_size, sizing.small_file_limit, (), sizing.strategy)
    busy = busy_groups(state)
    writes = state.metadata.pending_writes
    candidates: dict[str, dict[str, FileToRewrite]] = {}
    for group in state.active_groups:
        latest = group.latest
        if (
            group.key in busy
            or writes.blocks(group.key)
            or latest is None
            or latest.base_file is None
            or latest.log_files
        ):
            continue
        if latest.base_file.extension != "parquet":  # the rewrite job writes parquet only
            continue
        if is_skeleton(latest.base_file):  # its rows are keys only (`runner.hudi.bootstrap`)
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
    return SizingStep(sizing.max_file_size, sizing.small_file_limit, tuple(groups), sizing.strategy)
