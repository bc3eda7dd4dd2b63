"""The DataFrame stages of a write, all lazy Spark: keys, de-duplication, tagging, routing.

Columns added to the data (and dropped before files are written, except the two meta columns):
`_hoodie_record_key` and `_hoodie_partition_path` (see `runner.writer.keys`), `_w_seq` (the row's
position in the input, `monotonically_increasing_id`, which orders ties and inserts), `_w_fid` (the
target file group).

De-duplication (upsert only; Hudi's `hoodie.combine.before.upsert=true`, while insert and bulk
insert keep duplicates as `hoodie.combine.before.insert=false` does): among records of one
(partition path, key), the one with the greatest precombine value wins, a null value being the
smallest; on a tie, or without a precombine field, the later record in the input wins. That is
`OverwriteWithLatestAvroPayload.preCombine` as reduced by Hudi's `HoodieWriteHelper`, where the
newer record wins unless the older one's ordering value is strictly greater.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runner.writer.create import KeyLayout
from runner.writer.keys import partition_path_column, record_key_column, require_precombine_field
from runner.writer.route import InsertRange, insert_targets
from runner.writer.schema import META_COLUMNS, PARTITION_PATH, RECORD_KEY, SparkType, field_types
from runner.writer.spark_hash import partition_keys
from runner.writer.tasks import TARGET

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

SEQ = "_w_seq"
RANK = "_w_rank"


def data_columns(df: DataFrame) -> DataFrame:
    """The input without Hudi meta columns (a DataFrame read from a Hudi table carries them); the
    input itself when it has none, which spares Spark analysing one more plan."""
    meta = [c for c in df.columns if c in META_COLUMNS]
    return df.drop(*meta) if meta else df


def with_keys(df: DataFrame, layout: KeyLayout) -> DataFrame:
    """Add the record key, the partition path and the input position."""
    from pyspark.sql import functions as F

    types = field_types(df.schema.jsonValue())
    require_precombine_field(layout, types, source="DataFrame")
    record_key, partition_path = key_columns(df.sparkSession, layout, types)
    return df.select(
        "*",
        record_key.alias(RECORD_KEY),
        partition_path.alias(PARTITION_PATH),
        F.monotonically_increasing_id().alias(SEQ),
    )


# (session, layout, key fields' types) -> (session, record key, partition path); a few entries at most.
_KEY_COLUMNS: dict[tuple[int, KeyLayout, str], tuple[object, Column, Column]] = {}
_KEY_COLUMNS_MAX = 16


def key_columns(session: object, layout: KeyLayout, types: Mapping[str, SparkType]) -> tuple[Column, Column]:
    """The record key and partition path expressions, built once per session, layout and key types.

    Each function of an expression is a round trip to the JVM (about a dozen for a partition path),
    which every write paid again; an unresolved expression names its columns only, so one built for
    a DataFrame serves any other with the same key columns and types.
    """
    fields = (*layout.record_key_fields, *layout.partition_fields)
    signature = json.dumps([[f, types.get(f)] for f in fields])
    entry = _KEY_COLUMNS.get((id(session), layout, signature))
    if entry is not None and entry[0] is session:  # the very session, not one at a reused address
        return entry[1], entry[2]
    built = (record_key_column(layout, types), partition_path_column(layout, types))
    if len(_KEY_COLUMNS) >= _KEY_COLUMNS_MAX:
        _KEY_COLUMNS.clear()
    _KEY_COLUMNS[(id(session), layout, signature)] = (session, *built)
    return built


def clustered_by_key(df: DataFrame, width: int) -> DataFrame:
    """`df` hash-partitioned into `width` partitions by (partition path, record key).

    That clustering satisfies both the de-duplication window and the index join, so Spark adds no
    shuffle of its own for them, whose width would be `spark.sql.shuffle.partitions` (200 unless
    set): the join's result is cached, and Spark's adaptive execution does not narrow the shuffles
    of a cached plan, so each ran that many tasks however few records the write had.
    """
    return df.repartition(width, PARTITION_PATH, RECORD_KEY)


def shuffle_width(records: Mapping[str, int], files: Mapping[str, Sequence[object]], records_per_group: int,
                  limit: int) -> int:
    """Partitions for the shuffles of a write's records and index: the file groups it may write.

    Per partition, its latest files (the index reads each one) or the groups its `records` fill at
    `records_per_group`, whichever is more; at least 1 and at most `limit`, the session's
    `spark.sql.shuffle.partitions`, so a user's setting still caps the tasks of a large write.
    """
    per_group = max(1, records_per_group)
    groups = sum(max(len(files.get(p, ())), -(-n // per_group)) for p, n in records.items())
    return max(1, min(groups, limit))


def session_shuffle_partitions(spark: object) -> int:
    """The session's `spark.sql.shuffle.partitions` (read through `spark.conf`, as Spark Connect allows)."""
    return shuffle_partitions_cap(spark.conf.get("spark.sql.shuffle.partitions"))  # type: ignore[attr-defined]


# Spark's own default for `spark.sql.shuffle.partitions`.
DEFAULT_SHUFFLE_PARTITIONS = 200


def shuffle_partitions_cap(value: object) -> int:
    """The cap a `spark.sql.shuffle.partitions` setting puts on the write's shuffles.

    Some managed Spark platforms take `auto` there (they size shuffles themselves); that is no
    count to cap by, so the cap is then Spark's default rather than a failed write.
    """
    try:
        return max(1, int(str(value).strip()))
    except ValueError:
        return DEFAULT_SHUFFLE_PARTITIONS


def counts(df: DataFrame, *columns: str) -> dict[tuple[Any, ...], int]:
    """Rows per distinct value of `columns`, collected; the aggregate's last stage is one task.

    Its exchange has `spark.sql.shuffle.partitions` partitions; adaptive execution narrows them when
    it is on, and `coalesce(1)` reads them all in one task when it is off: a few rows per key.
    """
    return {tuple(r)[:-1]: int(r[-1]) for r in df.groupBy(*columns).count().coalesce(1).collect()}


def deduplicate(df: DataFrame, precombine_field: str | None) -> DataFrame:
    """Keep one record per (partition path, record key), as the module docstring describes.

    On records clustered by `clustered_by_key`, the window shuffles nothing more.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = [F.col(SEQ).desc()]
    if precombine_field:
        order.insert(0, F.col(f"`{precombine_field}`").desc_nulls_last())
    window = Window.partitionBy(PARTITION_PATH, RECORD_KEY).orderBy(*order)
    return df.withColumn(RANK, F.row_number().over(window)).filter(F.col(RANK) == 1).drop(RANK)


def tag(df: DataFrame, index: DataFrame | None) -> DataFrame:
    """Add `_w_fid`: the file group already holding the record's key, null for a new key."""
    from pyspark.sql import functions as F

    if index is None:
        return df.withColumn(TARGET, F.lit(None).cast("string"))
    joined = df.join(
        index, (df[PARTITION_PATH] == index["_w_ipath"]) & (df[RECORD_KEY] == index["_w_ikey"]), "left"
    )
    return joined.withColumn(TARGET, F.col("_w_ifid")).drop("_w_ipath", "_w_ikey", "_w_ifid")


def route_inserts(tagged: DataFrame, ranges: Sequence[InsertRange], width: int) -> DataFrame:
    """Give every insert (null `_w_fid`) the file id whose planned range holds its number.

    Inserts are numbered per partition in input order, from 0. A partition whose inserts all go to
    one file group (the usual case: one small file or one new group) needs no numbering: its
    inserts take that file id directly, without the shuffle and sort the numbering costs; the
    numbering's shuffle has at most `width` partitions (`shuffle_width`).
    """
    from pyspark.sql import functions as F

    updates = tagged.filter(F.col(TARGET).isNotNull())
    if not ranges:
        return updates
    spark = tagged.sparkSession
    whole, split_by_partition = insert_targets(ranges)
    split = [r for rs in split_by_partition.values() for r in rs]
    inserts = tagged.filter(F.col(TARGET).isNull())
    routed = updates
    if whole:
        table = spark.createDataFrame(list(whole.items()), "_w_rpath string, _w_rfid string")
        joined = inserts.join(F.broadcast(table), inserts[PARTITION_PATH] == table["_w_rpath"], "inner")
        routed = routed.unionByName(joined.withColumn(TARGET, F.col("_w_rfid")).drop("_w_rpath", "_w_rfid"))
    if split:
        routed = routed.unionByName(_numbered_inserts(inserts, split, width))
    return routed


def _numbered_inserts(inserts: DataFrame, ranges: Sequence[InsertRange], width: int) -> DataFrame:
    """The inserts of the partitions `ranges` split over several file groups, numbered and routed."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    table = inserts.sparkSession.createDataFrame(
        [(r.partition, r.start, r.end, r.file_id) for r in ranges],
        "_w_rpath string, _w_start long, _w_end long, _w_rfid string",
    )
    partitions = sorted({r.partition for r in ranges})
    # Clustered by partition path first, so the window adds no shuffle of the session's width.
    clustered = inserts.filter(F.col(PARTITION_PATH).isin(partitions)).repartition(
        max(1, min(width, len(partitions))), PARTITION_PATH)
    numbered = clustered.withColumn(
        RANK, F.row_number().over(Window.partitionBy(PARTITION_PATH).orderBy(SEQ)) - 1
    )
    condition = (
        (numbered[PARTITION_PATH] == table["_w_rpath"])
        & (numbered[RANK] >= table["_w_start"])
        & (numbered[RANK] < table["_w_end"])
    )
    return (
        numbered.join(F.broadcast(table), condition, "inner")
        .withColumn(TARGET, F.col("_w_rfid"))
        .drop(RANK, "_w_rpath", "_w_start", "_w_end", "_w_rfid")
    )


def one_task_per_target(routed: DataFrame, targets: Sequence[str]) -> DataFrame:
    """Repartition so that each target file id gets a Spark task of its own, rows in input order.

    Hudi's partitioner maps buckets to tasks one to one; hashing file ids would put several buckets
    on one task and leave others idle. Each target gets an integer that Spark's own hash
    partitioning (`pmod(hash(key), n)`, the rule `repartition` uses) sends to a distinct partition,
    found on the driver (`runner.writer.spark_hash`) rather than by a probe job.
    """
    from pyspark.sql import functions as F

    spark = routed.sparkSession
    n = max(1, len(targets))
    keys = partition_keys(n)
    table = spark.createDataFrame([(t, keys[i]) for i, t in enumerate(targets)], "_w_tfid string, _w_part int")
    joined = routed.join(F.broadcast(table), routed[TARGET] == table["_w_tfid"]).drop("_w_tfid")
    return joined.repartition(n, "_w_part").sortWithinPartitions(TARGET, SEQ).drop("_w_part")
