"""Hudi's estimate of bytes per record, which converts free bytes in a file into records.

Hudi 0.14 (`UpsertPartitioner.averageBytesPerRecord`) reads it from the commit metadata of the
most recent large-enough completed `commit`. The threshold keeps tiny commits, where the Parquet
footer and dictionaries dominate, from skewing the estimate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runner.sizing._checks import require_positive

# Only `commit` instants count; see `average_record_size` for why `replacecommit` does not.
_COMMIT = "commit"


@dataclass(frozen=True, slots=True)
class CommitSize:
    """The totals of one completed instant's commit metadata that the estimate reads.

    Args:
        action: the timeline action as spelled on disk (`commit`, `replacecommit`, ...).
        total_bytes_written: sum of `totalWriteBytes` over the instant's write stats
            (`HoodieCommitMetadata.fetchTotalBytesWritten`).
        total_records_written: sum of `numWrites` over the write stats
            (`fetchTotalRecordsWritten`).
    """

    action: str
    total_bytes_written: int
    total_records_written: int


def average_record_size(
    commits: Iterable[CommitSize],
    *,
    small_file_limit: int,
    default: int = 1024,
    threshold: float = 1.0,
) -> int:
    """Estimate bytes per record as Hudi 0.14 does for a copy-on-write table.

    Walks `commits` newest first and skips every action other than `commit`. Hudi leaves out
    `replacecommit` on purpose: clustering output compresses better than ingested data, so its
    smaller bytes per record would make Hudi pack too many records into a file. The first commit
    that wrote more than `threshold × small_file_limit` bytes, and at least one record, gives
    `ceil(bytes / records)`. When none qualifies, the estimate is `default`.

    Hudi computes the ceiling in floating point; this uses exact integers, which agrees unless
    a commit wrote more than 2**53 bytes.

    Args:
        commits: the completed instants of the active timeline, newest first.
        small_file_limit: `hoodie.parquet.small.file.limit` in bytes.
        default: `hoodie.copyonwrite.record.size.estimate`.
        threshold: `hoodie.record.size.estimation.threshold`.

    Returns:
        The estimated bytes per record, always > 0.

    Raises:
        ValueError: when `default` is not positive or `threshold` is negative.
    """
    require_positive("default", default)
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, found {threshold}")
    # Java truncates the product to a long before the comparison; int() truncates the same way.
    min_bytes = int(threshold * small_file_limit)
    for commit in commits:
        if commit.action != _COMMIT:
            continue
        if commit.total_bytes_written > min_bytes and commit.total_records_written > 0:
            return -(-commit.total_bytes_written // commit.total_records_written)
    return default
