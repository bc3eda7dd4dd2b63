"""Skeleton base files of Hudi's metadata-only bootstrap, which hold no data columns.

`hoodie.bootstrap.mode=METADATA_ONLY` makes an existing Parquet table a Hudi table without copying
it: every source file gets a skeleton base file written at Hudi's reserved instant
`00000000000001` (`HoodieTimeline.METADATA_BOOTSTRAP_INSTANT_TS`) that holds only the `_hoodie_*`
meta columns. Readers join each skeleton row to the source file's row at the same position, found
through the bootstrap index (`.hoodie/.aux/.bootstrap`), keyed by file group. So a skeleton's
records are not in the skeleton: copying its rows into another file, or another file group, keeps
their keys and drops every data column. Only Hudi's own bootstrap-aware readers and writers can
rewrite one. A full-record bootstrap (`00000000000002`) writes whole records and is ordinary data.
"""

from __future__ import annotations

from runner.hudi.files import BaseFile

METADATA_BOOTSTRAP_INSTANT = "00000000000001"


def is_skeleton(base: BaseFile) -> bool:
    """Whether `base` is a metadata-only bootstrap skeleton (its data columns live in the source table)."""
    return base.instant_time == METADATA_BOOTSTRAP_INSTANT


# Why a skeleton's rows must not be copied, for plans and errors.
SKELETON_WHY = ("it holds only the meta columns, and readers take its records' other columns from the bootstrap "
                "source file (hoodie.bootstrap.base.path) through the bootstrap index of its file group, so a "
                "rewritten copy would hold those records without their data")


def skeleton_refusal(name: str) -> str:
    """Why the base file `name` (a skeleton) must not be rewritten."""
    return (f"{name} is a skeleton of Hudi's metadata-only bootstrap (instant {METADATA_BOOTSTRAP_INSTANT}): "
            f"{SKELETON_WHY}")
