"""Whether a table evolves its schema on read, which a rewrite of its files by column name breaks.

With `hoodie.schema.on.read.enable` Hudi renames, drops and retypes columns without rewriting any
file: it keeps every version of the table's internal schema (`.hoodie/.schema/<t>.schemacommit`,
and `latest_schema` in the extra metadata of each commit written so) and reads a file by the
version in force at the instant in its name, matching columns by field id, not by name. A file
rewritten by a resize keeps its inputs' column names but is named with the clustering's instant, so
readers take it by the newest version: a renamed column reads as nulls, a dropped and re-added one
brings its old values back.
"""

from __future__ import annotations

from collections.abc import Mapping

SCHEMA_HISTORY_FOLDER = ".hoodie/.schema"
SCHEMA_ON_READ_KEY = "hoodie.schema.on.read.enable"
LATEST_SCHEMA_KEY = "latest_schema"  # Hudi's SerDeHelper.LATEST_SCHEMA


def schema_on_read_evidence(
    properties: Mapping[str, str],
    *,
    has_schema_history: bool,
    latest_commit: tuple[str, Mapping[str, str]] | None,
) -> str | None:
    """What says the table evolves its schema on read, in words naming it; None when nothing does.

    Args:
        properties: hoodie.properties as read.
        has_schema_history: `.hoodie/.schema` holds files (Hudi creates it empty with every table).
        latest_commit: the latest completed write's instant time and extra metadata, if any.
    """
    value = properties.get(SCHEMA_ON_READ_KEY, "").strip()
    if value.lower() == "true":
        return f"hoodie.properties sets {SCHEMA_ON_READ_KEY}={value}"
    if has_schema_history:
        return f"{SCHEMA_HISTORY_FOLDER}/ holds schema versions (Hudi's history of the table's evolved schemas)"
    if latest_commit is not None and latest_commit[1].get(LATEST_SCHEMA_KEY, "").strip():
        return f"the latest commit {latest_commit[0]} records an internal schema ({LATEST_SCHEMA_KEY})"
    return None
