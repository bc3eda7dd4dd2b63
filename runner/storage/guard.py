"""Nothing is written into a folder until it is known to be a Hudi table.

A mistyped path, a plain folder or a table whose `hoodie.properties` is missing must be left exactly
as found: creating `.hoodie/.locks/` or a timeline file there would turn it into something the next
run reports as a broken Hudi table. The writer's create path is the one exception, and it creates
`hoodie.properties` itself, before anything else.
"""

from __future__ import annotations

from runner.errors import NotAHudiTableError, StorageError
from runner.storage.base import Storage

PROPERTIES = ".hoodie/hoodie.properties"


def require_table(storage: Storage, action: str) -> None:
    """Raise unless `.hoodie/hoodie.properties` is readable at the storage root.

    Args:
        storage: rooted at the folder about to be written.
        action: what would be written, for the message (`take the runner lock on`).

    Raises:
        NotAHudiTableError: the folder is missing, is not a Hudi table, or has lost its properties.
    """
    location = f"{storage.uri.rstrip('/')}/{PROPERTIES}"
    try:
        storage.read(PROPERTIES)
    except StorageError:
        if storage.stat(".hoodie") is None:
            raise NotAHudiTableError(
                f"Refusing to {action} {storage.uri}: it is not a Hudi table ({_found(storage)}); "
                "nothing was written.",
                path=storage.uri,
                hint="check the table's `path` in its declaration.",
            ) from None
        raise NotAHudiTableError(
            f"Refusing to {action} {storage.uri}: {location} is missing or unreadable, so the table's "
            "type and version are unknown; nothing was written.",
            path=location,
            hint="restore hoodie.properties (Hudi keeps a hoodie.properties.backup while updating it).",
        ) from None


def _found(storage: Storage) -> str:
    root = storage.stat("")
    return NotAHudiTableError.found(None if root is None else root.is_dir)
