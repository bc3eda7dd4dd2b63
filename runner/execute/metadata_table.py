"""Disabling a table's metadata table the way Hudi does when `hoodie.metadata.enable=false`.

Hudi first clears the metadata partitions in hoodie.properties, then deletes `.hoodie/metadata`.
Readers decide whether to use the metadata table from that property, so a crash between the two
steps leaves a table they read by listing files; the next apply removes the leftover folder.
"""

from __future__ import annotations

from runner.hudi.properties import format_properties, read_properties
from runner.hudi.state import METADATA_TABLE, PROPERTIES, TableMetadata
from runner.storage import Storage

METADATA_KEYS = ("hoodie.table.metadata.partitions", "hoodie.table.metadata.partitions.inflight")


def disable_metadata_table(storage: Storage, meta: TableMetadata) -> None:
    """Clear the metadata partitions in hoodie.properties, then delete `.hoodie/metadata`."""
    props = read_properties(storage.read(PROPERTIES), path=PROPERTIES)
    if any(props.get(key) for key in METADATA_KEYS):
        for key in METADATA_KEYS:
            if key in props:
                props[key] = ""
        storage.overwrite(PROPERTIES, format_properties(props).encode("utf-8"))
    storage.delete_tree(METADATA_TABLE)
