"""Does the metadata table's `files` partition agree with the storage listing? Pure.

Compared are the committed data files the runner's own listing finds (every slice of every file
group, replaced groups included, since the MDT keeps replaced files until a clean deletes them)
with the files the MDT lists. Files of pending or failed writes are neither expected in the MDT
nor reported when it omits them.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.hudi.files import relative_path
from runner.hudi.mdt.reader import FilesListing
from runner.hudi.state import TableState


@dataclass(frozen=True, slots=True)
class Drift:
    """Relative data-file paths on which the MDT and storage disagree.

    Args:
        listed_but_absent: in the MDT, not in storage: a reader using the MDT fails with NotFound.
        present_but_unlisted: committed in storage, missing from the MDT: readers using the MDT skip them.
        partitions_unlisted: partitions with committed files that `__all_partitions__` does not name.
    """

    listed_but_absent: tuple[str, ...]
    present_but_unlisted: tuple[str, ...]
    partitions_unlisted: tuple[str, ...]

    @property
    def in_sync(self) -> bool:
        return not (self.listed_but_absent or self.present_but_unlisted or self.partitions_unlisted)

    def to_json(self) -> dict[str, object]:
        return {
            "in_sync": self.in_sync,
            "listed_but_absent": list(self.listed_but_absent),
            "present_but_unlisted": list(self.present_but_unlisted),
            "partitions_unlisted": list(self.partitions_unlisted),
        }


def compare(listing: FilesListing, state: TableState) -> Drift:
    """Compare the MDT listing with a fully listed table state."""
    # Partition by partition, by file name: paths are built only for the files that differ (planning
    # runs this on every plan of an MDT table, over every file of the partitions it plans).
    in_storage: dict[str, set[str]] = {}
    for group in state.file_groups:
        names = in_storage.setdefault(group.partition, set())
        for file_slice in group.slices:
            names.update(file_slice.file_names)
    uncommitted = set(state.uncommitted_files)
    absent: list[str] = []
    unlisted: list[str] = []
    for partition in listing.files.keys() | in_storage.keys():
        listed = listing.files.get(partition, {}).keys()
        stored = in_storage.get(partition, set())
        absent.extend(path for name in listed - stored if (path := relative_path(partition, name)) not in uncommitted)
        unlisted.extend(relative_path(partition, name) for name in stored - listed)
    return Drift(
        listed_but_absent=tuple(sorted(absent)),
        present_but_unlisted=tuple(sorted(unlisted)),
        partitions_unlisted=tuple(sorted(in_storage.keys() - listing.partitions)),
    )
