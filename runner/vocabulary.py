"""Hudi's names that more than one layer speaks, in a module that imports nothing.

The declarations may not import `runner.hudi` (the Hudi model), yet a declaration and
`hoodie.properties` name the same table types; both import the one enum from here.
"""

from __future__ import annotations

from enum import StrEnum


class TableType(StrEnum):
    """`hoodie.table.type`: copy-on-write rewrites base files; merge-on-read appends log files."""

    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"
