"""The driver engine: a write small enough to hold on the driver runs there, in Arrow and a thread pool.

Each Spark job of an upsert has a fixed cost (scheduling, a Python worker round trip, a shuffle),
several hundred milliseconds on a small local machine; for a small write those costs are most of
the time. So when the master is local and the planner's size estimate of the keyed records (before
de-duplication, which only drops rows) is at most `DRIVER_MAX_BYTES` (or, without an estimate, the
input was built from rows the driver held: `built_on_driver`), the writer runs one Spark action
(`toArrow`) and does the rest here, step for step what the Spark engine does
(`runner.writer.prepare`):

- keys stay Spark expressions (`with_keys`); de-duplication runs here after the collect, by the
  rule of the Spark window (`runner.writer.dedup`, tested against it);
- partition counts, the index lookup (`runner.writer.index.index_table`, in threads: each base file
  read whole once and, within `OLD_FILES_MAX_BYTES`, kept for the merge of its group), tagging
  (a left join on partition and key: a key held by two groups tags the record for both, as the
  Spark join does; a lookup of the key alone when no key is given twice among the records nor held
  twice in the index for them), update and insert counts;
- routing with `plan_routing` and `insert_targets` (the same ranges in the same input order);
- each target's rows sorted by input position and written by `WriteTask.write` as Spark task
  number `i` of the i-th bucket would, which is the task the Spark engine gives it
  (`one_task_per_target`), so both engines write the same records to the same file groups with the
  same `_hoodie_commit_seqno`.

On a cluster the executors write: the driver would be a bottleneck there and its memory is not
sized for data. Spark Connect sessions have no local master to check and always use Spark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Union

from runner.writer.dedup import rows_distinct
from runner.writer.index import OLD_ROW
from runner.writer.prepare import SEQ
from runner.writer.route import InsertRange, insert_targets
from runner.writer.schema import PARTITION_PATH, RECORD_KEY, field_types
from runner.writer.tasks import TARGET

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from runner.writer.files import WrittenFile
    from runner.writer.index import OldFile
    from runner.writer.tasks import WriteTask

Engine = Literal["driver", "spark"]
MIB = 1024 * 1024
# Largest estimated input the driver takes. The whole keyed input is held as Arrow while the files
# are written, and the estimate can be low (a Parquet source counts its compressed bytes), so this
# stays well under Spark's default 1 GiB of driver memory and `spark.driver.maxResultSize`.
DRIVER_MAX_BYTES = 256 * MIB
# Base files the driver's index reads whole are kept, up to this many bytes together, for the merges
# of their groups (`index.index_table`); the rest are read again by their merge, as the Spark engine does.
OLD_FILES_MAX_BYTES = 256 * MIB
# What Spark reports for a plan without statistics: `spark.sql.defaultSizeInBytes`, Long.MaxValue
# unless configured (projections above it scale it, possibly past Long.MaxValue).
UNKNOWN_SIZE = 2**63 - 1
# Set by tests and benchmarks to run one engine whatever the size (the driver only on a local
# master); None chooses by size. Not a user setting.
PINNED: Engine | None = None
_POSITION = "_w_pos"


@dataclass(frozen=True, slots=True)
class Choice:
    """Which engine writes, and why, in words for the log."""

    engine: Engine
    reason: str


def choose_engine(records: DataFrame) -> Choice:
    """The driver for a small write on a local master, Spark otherwise (see the module docstring)."""
    spark = records.sparkSession
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return Choice("spark", "a Spark Connect session")
    master = str(spark.sparkContext.master)
    if not master.startswith("local"):
        return Choice("spark", f"master {master} is a cluster, whose executors write")
    if PINNED is not None:
        return Choice(PINNED, "pinned by runner.writer.local.PINNED")
    size = estimated_bytes(records)
    if size is None:
        return Choice("spark", "Spark has no plan to estimate the input's size from")
    if size >= UNKNOWN_SIZE:
        if built_on_driver(records):
            return Choice("driver", f"the input was built from data held by the driver, master {master}")
        return Choice("spark", "Spark has no size estimate of the input")
    limit = f"{size / MIB:.1f} MiB estimated, limit {DRIVER_MAX_BYTES / MIB:.0f} MiB"
    if size > DRIVER_MAX_BYTES:
        return Choice("spark", limit)
    return Choice("driver", f"{limit}, master {master}")


def estimated_bytes(records: DataFrame) -> int | None:
    """Spark's size estimate of the optimized plan, without running it; None if it has none."""
    try:
        return int(records._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())
    except Exception:  # no JVM plan to ask (or a Spark that changed the API): let Spark write
        return None


def built_on_driver(records: DataFrame) -> bool:
    """Every source of the plan is data the driver held: a `LocalRelation`, or an RDD whose narrow
    lineage starts at `parallelize` (what `createDataFrame` of Python rows makes). Such inputs
    have no size estimate, but were in the driver's memory a moment ago.

    The lineage may pass through a Python function (the rows' conversion); one that expands each
    element into many rows would escape this check. That is a performance risk, not a safety one:
    a driver that runs out of memory fails the write, which the next write rolls back.
    """
    try:
        leaves = records._jdf.queryExecution().optimizedPlan().collectLeaves()
        found = [leaves.apply(i) for i in range(leaves.size())]
        return bool(found) and all(_held_by_driver(leaf) for leaf in found)
    except Exception:  # a Spark that changed these internals: assume nothing
        return False


def _held_by_driver(leaf: Any) -> bool:
    kind = leaf.getClass().getSimpleName()
    if kind == "LocalRelation":
        return True
    if kind != "LogicalRDD":
        return False
    rdd = leaf.rdd()
    while rdd.getClass().getSimpleName() != "ParallelCollectionRDD":
        dependencies = rdd.dependencies()
        if dependencies.size() != 1 or dependencies.apply(0).getClass().getSimpleName() != "OneToOneDependency":
            return False
        rdd = dependencies.apply(0).rdd()
    return True


def threads(records: DataFrame) -> int:
    """The session's cores: a local master's `defaultParallelism` is its thread count."""
    return max(1, int(records.sparkSession.sparkContext.defaultParallelism))


def collect(keyed: DataFrame, *, deduplicate: bool, precombine_field: str | None) -> pa.Table:
    """The keyed records on the driver in one Spark action, de-duplicated (upsert) when asked.

    De-duplication runs in Arrow after the collect (`runner.writer.dedup`, the rule of
    `prepare.deduplicate`), which spares the action the window's shuffle; a precombine type whose
    Arrow order is not Spark's keeps the Spark window before the collect.
    """
    from runner.writer import dedup, prepare

    if not deduplicate:
        return keyed.toArrow()
    precombine_type = field_types(keyed.schema.jsonValue()).get(precombine_field) if precombine_field else None
    if not dedup.orders_like_spark(precombine_type):
        return prepare.deduplicate(keyed, precombine_field).toArrow()
    return dedup.deduplicate(keyed.toArrow(), precombine_field)


def partition_counts(records: pa.Table) -> dict[str, int]:
    counts = records.group_by(PARTITION_PATH, use_threads=False).aggregate([([], "count_all")])
    return dict(zip(counts.column(PARTITION_PATH).to_pylist(), counts.column("count_all").to_pylist(), strict=True))


def tag(records: pa.Table, index: pa.Table | None, *, keys_distinct: bool = False) -> pa.Table:
    """`runner.writer.prepare.tag` in Arrow: `_w_fid` per record, a row per matching group.
    `keys_distinct`: the caller knows no record key is given twice (`dedup.deduplicated`)."""
    import pyarrow as pa

    if index is None:
        return records.append_column(TARGET, pa.nulls(records.num_rows, pa.string()))
    tagged = _tag_by_key(records, index, keys_distinct=keys_distinct)
    return tagged if tagged is not None else _tag_by_join(records, index)


def _as_table(values: pa.ChunkedArray | pa.Array) -> pa.Table:
    import pyarrow as pa

    return pa.table({"v": values})


def _tag_by_key(records: pa.Table, index: pa.Table, *, keys_distinct: bool = False) -> pa.Table | None:
    """`tag` by the key alone, for the usual table: no key twice among the records nor in the index.
    Then each index row finds the one record with its key, which it tags if the partitions match
    too: the join's rows, in input order, without hashing the partition column. None when a key
    is given twice, on either side, for the join to handle. An index with `OLD_ROW` (the driver's)
    gives each tagged record its old record's row in the file, for the merge (`files.merge`).

    The hash table is built of the records' keys and the index probed against it, not the other
    way: the records are usually the fewer, and only their keys need testing for repeats (an index
    key no record has cannot matter). Testing the whole index and hashing it took about twice the
    CPU (`bench/README.md`, "the Arrow round").
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = records.column(RECORD_KEY).combine_chunks()
    if not keys_distinct and not rows_distinct(_as_table(keys)):
        return None
    found = pc.index_in(index.column("_w_ikey"), value_set=keys)  # per index row, its record or null
    at = found.drop_null().to_numpy()
    if len(at) and int(np.bincount(at).max()) > 1:
        return None  # a record key held by two index rows: the join gives that record a row for each
    matched = index.filter(found.is_valid())
    same = pc.equal(matched.column("_w_ipath"), records.column(PARTITION_PATH).take(pa.array(at)))
    hit = pc.fill_null(same, False).to_numpy(zero_copy_only=False)
    row = np.full(records.num_rows, -1, dtype=np.int64)  # per record, its matched index row or -1
    row[at[hit]] = np.flatnonzero(hit)
    taken = pa.array(row, mask=row < 0)
    tagged = records.append_column(TARGET, matched.column("_w_ifid").take(taken))
    if OLD_ROW in matched.column_names:
        tagged = tagged.append_column(OLD_ROW, matched.column(OLD_ROW).take(taken))
    return tagged


def _tag_by_join(records: pa.Table, index: pa.Table) -> pa.Table:
    """`tag` by a left join on partition and key: a key held by two groups tags the record for both."""
    import numpy as np
    import pyarrow as pa

    keys = pa.table({
        PARTITION_PATH: records.column(PARTITION_PATH),
        RECORD_KEY: records.column(RECORD_KEY),
        _POSITION: pa.array(np.arange(records.num_rows, dtype=np.int64)),
    })
    joined = keys.join(index, keys=[PARTITION_PATH, RECORD_KEY], right_keys=["_w_ipath", "_w_ikey"],
                       join_type="left outer", use_threads=False)
    return records.take(joined.column(_POSITION)).append_column(TARGET, joined.column("_w_ifid"))


def target_counts(tagged: pa.Table) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """Records per (partition, file group) to update, and per partition to insert."""
    counts = tagged.group_by([PARTITION_PATH, TARGET], use_threads=False).aggregate([([], "count_all")])
    updates: dict[tuple[str, str], int] = {}
    inserts: dict[str, int] = {}
    for partition, file_id, n in zip(counts.column(PARTITION_PATH).to_pylist(), counts.column(TARGET).to_pylist(),
                                     counts.column("count_all").to_pylist(), strict=True):
        if file_id is None:
            inserts[partition] = n
        else:
            updates[(partition, file_id)] = n
    return updates, inserts


def route_inserts(tagged: pa.Table, ranges: Sequence[InsertRange]) -> pa.Table:
    """`runner.writer.prepare.route_inserts` in Arrow: every insert gets the file id of its range."""
    import pyarrow as pa
    import pyarrow.compute as pc

    is_insert = tagged.column(TARGET).is_null()
    parts = [tagged.filter(pc.invert(is_insert))]
    inserts = tagged.filter(is_insert)
    whole, split = insert_targets(ranges)
    if whole:
        paths = pa.array(list(whole), pa.string())
        found = pc.index_in(inserts.column(PARTITION_PATH), value_set=paths)
        routed = inserts.filter(found.is_valid())
        file_ids = pa.array(list(whole.values()), pa.string()).take(found.drop_null())
        parts.append(routed.set_column(routed.schema.get_field_index(TARGET), TARGET, file_ids))
    for partition, partition_ranges in split.items():
        numbered = inserts.filter(pc.equal(inserts.column(PARTITION_PATH), partition)).sort_by(SEQ)
        for r in partition_ranges:
            rows = numbered.slice(r.start, r.end - r.start)
            parts.append(rows.set_column(rows.schema.get_field_index(TARGET), TARGET,
                                         pa.repeat(pa.scalar(r.file_id), rows.num_rows)))
    return pa.concat_tables(parts)


def runs_by(table: pa.Table, column: str) -> Iterator[tuple[str, pa.Table]]:
    """The rows of each value of `column`, sorted by input position, as a task receives them."""
    import pyarrow as pa

    order, spans = _runs_of(table, column)
    ordered = table.take(pa.array(order))
    for value, start, end in spans:
        yield value, ordered.slice(start, end - start)


def _value_rank_order(values: pa.Array,
                      table: pa.Table) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], list[Any]]:
    """The row order of `table.sort_by([(column, "ascending"), (SEQ, "ascending")])` for a column
    without nulls, each row's rank of its value, and the distinct values by rank. Found with
    integer sorts: by position, then stably by the rank of each row's value among the column's few
    distinct values (file ids, partition paths). Arrow's sort of the string column with the
    position as a second key cost about twice as much (`bench/README.md`, "the format round")."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(values)
    by_value = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(encoded.dictionary), np.int64)
    rank[by_value] = np.arange(len(encoded.dictionary))
    by_position = np.argsort(table.column(SEQ).to_numpy(), kind="stable")
    ranks = rank[encoded.indices.to_numpy()]
    order = by_position[np.argsort(ranks[by_position], kind="stable")]
    return order, ranks, encoded.dictionary.take(pa.array(by_value)).to_pylist()


def _runs_of(table: pa.Table, column: str) -> tuple[np.ndarray[Any, Any], list[tuple[str, int, int]]]:
    """The order of `table`'s rows by `column`'s value, then by input position, and each value's
    run in it, `(value, start, end)`: what `runs_by` takes and slices."""
    import numpy as np
    import pyarrow.compute as pc

    values = table.column(column).combine_chunks()
    if not len(values):
        return np.zeros(0, np.int64), []
    if values.null_count:
        order = pc.sort_indices(table, sort_keys=[(column, "ascending"), (SEQ, "ascending")])
        encoded = pc.run_end_encode(values.take(order))
        ends = encoded.run_ends.to_numpy()
        starts = np.concatenate([[0], ends[:-1]])
        spans = zip(encoded.values.to_pylist(), starts.tolist(), ends.tolist(), strict=True)
        return order.to_numpy(), [(str(v), s, e) for v, s, e in spans]
    order, ranks, names = _value_rank_order(values, table)
    ranked = ranks[order]
    starts = np.concatenate([[0], np.flatnonzero(ranked[1:] != ranked[:-1]) + 1])
    ends = np.concatenate([starts[1:], [len(ranked)]])
    return order, [(str(names[ranked[s]]), int(s), int(e)) for s, e in zip(starts, ends, strict=True)]


def write_targets(task: WriteTask, routed: pa.Table, order: Sequence[str], workers: int,
                  old_files: Mapping[str, OldFile] | None = None) -> list[WrittenFile]:
    """Write each target's rows as the task numbered by its place in `order` (buckets' file ids);
    merges use the base files in `old_files` (by relative path) instead of reading them again."""
    import functools

    import pyarrow as pa

    number = {file_id: i for i, file_id in enumerate(order)}
    # Each target's rows are taken in its writer's thread rather than all of them here, ahead of
    # every write: the same rows in the same order as `runs_by` gives. From one chunk per column:
    # a take from many chunks concatenates them first, at every take.
    whole = routed.combine_chunks()
    positions, spans = _runs_of(whole, TARGET)
    jobs: list[tuple[int, Rows]] = [
        (number[key], functools.partial(whole.take, pa.array(positions[start:end])))
        for key, start, end in spans
    ]
    return _in_threads(task, jobs, workers, old_files or {})


def write_partitions(task: WriteTask, records: pa.Table, workers: int) -> list[WrittenFile]:
    """Bulk insert: each partition path's rows, in input order, into new file groups of one task."""
    jobs = list(enumerate(rows for _, rows in runs_by(records, PARTITION_PATH)))
    return _in_threads(task, jobs, workers)


# A job's rows, or how to get them (in the writing thread).
Rows = Union["pa.Table", Callable[[], "pa.Table"]]


def _in_threads(task: WriteTask, jobs: Sequence[tuple[int, Rows]], workers: int,
                old_files: Mapping[str, OldFile] | None = None) -> list[WrittenFile]:
    threads = max(1, min(workers, len(jobs) or 1))
    if threads > 1:
        # Files written side by side keep the cores busy: each deflates its own pages, which saves
        # handing them to the pool and back (a few % of an upsert's wall and CPU, bench/README.md).
        task = dataclasses.replace(task, deflate_pool=False)

    def write(job: tuple[int, Rows]) -> list[WrittenFile]:
        number, rows = job
        return task.on_driver(rows() if callable(rows) else rows, number, old_files)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        done = list(pool.map(write, jobs))
    return [f for files in done for f in files]
