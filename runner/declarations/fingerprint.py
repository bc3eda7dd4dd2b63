"""A digest of what a table declaration asks maintenance to do, recorded in plans.

A saved plan is only valid for the declaration it was computed from: a plan made while
`commits_retained` was 30 must not be applied after someone lowered it to 2, nor to another table
that happens to share the name. The digest covers every effective setting that changes what
planning decides (name, resolved path, cleaning, file sizing, the `table:` block, the metadata
table mode). Labels (description, owner, tags), the file the table is declared in and where each
setting came from do not change what gets deleted, so editing them keeps saved plans valid; nor
do the table's Spark settings (`spark:`), which size the job but never change what it does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from runner.declarations.model import TableDeclaration

_LABELS = frozenset({"description", "owner", "tags", "source_file", "provenance", "spark"})


def declaration_fingerprint(decl: TableDeclaration) -> str:
    """A stable hex digest of the declaration's effective, plan-relevant settings."""
    fields = {f.name: getattr(decl, f.name) for f in dataclasses.fields(decl) if f.name not in _LABELS}
    canonical = json.dumps(_plain(fields), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value
