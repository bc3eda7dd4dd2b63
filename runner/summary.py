"""Per-table summary for `runner status` (pure over a TableState)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from runner.declarations.model import TableDeclaration
from runner.hudi.state import TableState
from runner.selection import did_you_mean_columns

# Hudi's reserved instants for metadata-only and full bootstrap: their base files are skeletons whose
# data lives in the bootstrap source table, which the runner never deletes.
BOOTSTRAP_INSTANTS = frozenset({"00000000000001", "00000000000002"})


def summarize(decl: TableDeclaration, state: TableState) -> dict[str, Any]:
    meta = state.metadata
    config = meta.config
    counts = Counter(f"{i.action}.{i.state}" for i in meta.timeline.instants)
    latest = [g.latest for g in state.active_groups if g.latest]
    older = [s for g in state.active_groups for s in g.slices[1:]]
    replaced = [s for g in state.file_groups if g.key in meta.replaced for s in g.slices]
    limit = decl.file_sizing.small_file_limit
    small = [s for s in latest if s.base_file is not None and 0 <= s.base_file.size < limit]
    return {
        "name": decl.name,
        "path": decl.path,
        "table_type": config.table_type.value,
        "table_version": config.version,
        "timeline_layout": config.timeline_layout_version,
        "instants": dict(sorted(counts.items())),
        "pending_instants": [i.file_name for i in meta.timeline.instants if not i.is_completed],
        "partitions": len(state.partitions),
        "file_groups": len(state.active_groups),
        "replaced_file_groups": sum(1 for g in state.file_groups if g.key in meta.replaced),
        "latest_slices": _files(latest),
        "older_slices": _files(older),
        "replaced_slices": _files(replaced),
        "small_files": {"limit": limit, "count": len(small), "bytes": sum(s.size for s in small)},
        "uncommitted_files": len(state.uncommitted_files),
        "unrecognized_files": len(state.unrecognized_files),
        "savepoints": sorted(str(t) for t in meta.savepoints),
        "metadata_table": meta.metadata_table_enabled,
        "bootstrap_base_path": config.raw.get("hoodie.bootstrap.base.path") or None,
        "bootstrap_base_files": sum(
            1 for s in latest if s.base_file is not None and s.base_file.instant_time in BOOTSTRAP_INSTANTS
        ),
        "declaration_drift": declaration_drift(decl, state),
    }


def _files(slices: list[Any]) -> dict[str, int]:
    return {"slices": len(slices), "files": sum(len(s.files) for s in slices), "bytes": sum(s.size for s in slices)}


def declaration_drift(decl: TableDeclaration, state: TableState) -> list[str]:
    """How hoodie.properties differs from the declaration's `table:` block (empty when it agrees)."""
    spec = decl.table
    if spec is None:
        return []
    config = state.metadata.config
    found = {
        "type": config.table_type.value,
        "record_key": list(config.record_key_fields),
        "partition_by": list(config.partition_fields),
        "precombine_field": ",".join(config.ordering_fields) or None,
        "meta_fields": config.populate_meta_fields,
    }
    declared = {
        "type": spec.type.value,
        "record_key": list(spec.record_key),
        "partition_by": list(spec.partition_by),
        "precombine_field": spec.precombine_field,
        "meta_fields": spec.meta_fields,
    }
    return [
        f"table.{key}: declared {_shown(declared[key])}, hoodie.properties has {_shown(found[key])}"
        + (did_you_mean_columns(declared[key], found[key]) if key != "type" else "")
        for key in declared
        if declared[key] != found[key] and not (key != "type" and declared[key] in ([], None))
    ]


def _shown(value: object) -> str:
    # Booleans as YAML writes them (`meta_fields: false`), the rest as Python shows them.
    return str(value).lower() if isinstance(value, bool) else repr(value)
