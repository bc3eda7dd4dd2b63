"""Group a partition's small files so that each group can be rewritten as one full-size file.

This is the planning half of a clustering-style fix for small files. Hudi's size-based clustering
strategy (`SparkSizeBasedClusteringPlanStrategy`) fills groups up to
`hoodie.clustering.plan.strategy.max.bytes.per.group` and may write several files per group.
Here each group is capped at the base file size, so each rewrite produces exactly one file that
is no larger than `hoodie.parquet.max.file.size`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runner.sizing._checks import require_file_sizes, require_positive


@dataclass(frozen=True, slots=True)
class Bin:
    """Small files of one partition to be merged into a single new base file.

    Args:
        file_ids: the input file groups, largest file first (ties by file id).
        total_bytes: the sum of their base file sizes, <= `max_file_size`.
    """

    file_ids: tuple[str, ...]
    total_bytes: int


def plan_bins(
    files: Sequence[tuple[str, int]],
    *,
    max_file_size: int,
    small_file_limit: int,
) -> list[Bin]:
    """Pack one partition's small files into bins worth rewriting.

    Candidates are the `files` smaller than `small_file_limit`; a limit <= 0 disables small-file
    handling, as it does for Hudi writers, and gives no bins. Candidates are packed first fit
    decreasing: sorted by size, largest first (ties by file id), each goes into the first bin
    with room for it, or opens a new bin. A bin holding a single file is dropped, because
    rewriting it alone would give back the same small file.

    Guarantee: among all bins first fit forms, including the single-file bins that are dropped,
    any two hold more than `max_file_size` bytes together. So no returned bin could absorb
    another bin or a file left out, and at most one of those groups is at most half full. The
    sizes are base file sizes; the rewritten file may compress differently.

    Args:
        files: `(file_id, size_bytes)` of the partition's latest base files that may be
            rewritten: the caller has already removed file groups in pending compaction or
            clustering.
        max_file_size: the largest file a bin may add up to, in bytes.
        small_file_limit: files at least this large are not candidates.

    Returns:
        Bins of two or more files each, in the order first fit opened them. The result depends
        only on the set of files, not on their order.

    Raises:
        ValueError: when `max_file_size` is not positive, a size is negative, or a file id is
            listed twice.
    """
    require_file_sizes(files)
    require_positive("max_file_size", max_file_size)
    if small_file_limit <= 0:
        return []
    candidates = [(file_id, size) for file_id, size in files if size < small_file_limit]
    bins = _first_fit_decreasing(candidates, max_file_size)
    return [b for b in bins if len(b.file_ids) > 1]


def _first_fit_decreasing(items: list[tuple[str, int]], capacity: int) -> list[Bin]:
    """Pack `(key, weight)` items; an item heavier than `capacity` gets a bin of its own."""
    keys: list[list[str]] = []
    totals: list[int] = []
    for key, weight in sorted(items, key=lambda item: (-item[1], item[0])):
        index = next((i for i, total in enumerate(totals) if total + weight <= capacity), None)
        if index is None:
            keys.append([key])
            totals.append(weight)
        else:
            keys[index].append(key)
            totals[index] += weight
    return [Bin(tuple(k), total) for k, total in zip(keys, totals, strict=True)]
