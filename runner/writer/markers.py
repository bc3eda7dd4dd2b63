"""Write markers: one empty file per data file a write creates, made before the data file itself.

Hudi's direct markers live in `.hoodie/.temp/<instant>/<partition>/<data file name>.marker.<IOType>`
(`CREATE` for a new file group, `MERGE` for a copy-on-write rewrite). A folder without a
`MARKERS.type` file is read by Hudi as direct markers. They answer one question exactly, for the
commit and for a rollback alike: which data files may this instant have written? At commit, files
with a marker but no write stat (a retried Spark task's leftovers) are deleted; a rollback deletes
every file with a marker. The folder is removed once the instant is committed or rolled back.
"""

from __future__ import annotations

from runner.hudi.files import relative_path
from runner.storage import Storage

TEMP = ".hoodie/.temp"
_SUFFIX = ".marker."


def marker_dir(instant: str) -> str:
    return f"{TEMP}/{instant}"


def marker_path(instant: str, partition: str, file_name: str, io_type: str) -> str:
    """The marker of one data file (`io_type` is `CREATE` or `MERGE`)."""
    return f"{marker_dir(instant)}/{relative_path(partition, file_name)}{_SUFFIX}{io_type}"


def marked_files(storage: Storage, instant: str) -> list[str]:
    """Relative paths of the data files the instant's markers name, sorted."""
    root = marker_dir(instant) + "/"
    found = []
    for info in storage.walk(marker_dir(instant)):
        rel = info.path.removeprefix(root)
        if _SUFFIX in rel:
            found.append(rel[: rel.rindex(_SUFFIX)])
    return sorted(found)


def delete_markers(storage: Storage, instant: str) -> None:
    """Remove the instant's marker folder (nothing to do if it is gone)."""
    if storage.stat(marker_dir(instant)) is not None:
        storage.delete_tree(marker_dir(instant))
