"""Attacks on tables without meta fields (`hoodie.populate.meta.fields=false`, virtual keys).

A virtual-key table stores no keys: an upsert computes the stored records' keys with the Arrow rule
(`arrow_input.record_keys`) and the arriving records' keys with Spark's expressions (a DataFrame)
or the Arrow rule (an Arrow input). Any value the two render differently is written a second time
by an upsert. The oracles: the `hudi` reader (one record per key, the newest values) and a twin
table with meta fields (the same writes give the same data and counts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import runner
from runner.errors import RefusedError
from runner.writer import local
from runner.writer.schema import META_COLUMNS
from tests.writer.writer_helpers import oracle_rows, table_yaml

KEY_FOOTER = {b"org.apache.hudi.bloomfilter", b"hoodie_bloom_filter_type_code", b"hoodie_min_record_key",
              b"hoodie_max_record_key"}


def _virtual(name: str, **kwargs: Any) -> str:
    return table_yaml(name, **kwargs) + "  meta_fields: false\n"


def _oracle(base: Path) -> pa.Table:
    """The `hudi` reader's snapshot as Arrow (no Python conversion: dates past 9999 have none)."""
    from hudi import HudiReadOptions, HudiTable

    return pa.Table.from_batches(HudiTable(str(base)).read(HudiReadOptions()))


def _assert_virtual_files(base: Path, files: tuple[str, ...]) -> None:
    for name in files:
        parquet = pq.ParquetFile(base / name)
        table = parquet.read(columns=list(META_COLUMNS))
        assert all(table.column(c).null_count == table.num_rows for c in META_COLUMNS), name
        assert not set(parquet.metadata.metadata or {}) & KEY_FOOTER, name


@pytest.fixture
def session_time_zone(spark: Any) -> Iterator[Callable[[str], None]]:
    """Set the shared session's `spark.sql.session.timeZone` for one test, restored afterwards."""
    before = spark.conf.get("spark.sql.session.timeZone")
    yield lambda zone: spark.conf.set("spark.sql.session.timeZone", zone)
    spark.conf.set("spark.sql.session.timeZone", before)


# Key values per allowed key type, as Arrow arrays (dates past year 9999 have no Python value).
_DAYS_0001 = -719162  # 0001-01-01
KEY_CASES: dict[str, pa.Array] = {
    "string": pa.array(["plain", "ünïcødé ✓ 日本語", "a,b", "k:v,x:y", "__null__", "__empty__",
                        "__HIVE_DEFAULT_PARTITION__", " ", "null", "x" * 5000, "tab\tnew\nline", "'q\"\\"]),
    "byte": pa.array([-128, -1, 0, 1, 127], pa.int8()),
    "short": pa.array([-32768, -1, 0, 32767], pa.int16()),
    "integer": pa.array([-(2**31), -1, 0, 2**31 - 1], pa.int32()),
    "long": pa.array([-(2**63), -1, 0, 2**63 - 1], pa.int64()),
    "boolean": pa.array([True, False]),
    "date": pa.array([_DAYS_0001 - 400, _DAYS_0001, -141427, -1, 0, 19782, 2932896, 2932897, 3000000],
                     pa.date32()),
    "timestamp": pa.array([-62135596800000001, -12219292800000000, -1, 0, 1, 1700000000123456,
                           253402300799999999], pa.timestamp("us", tz="UTC")),
}


def _key_rows(keys: pa.Array, ts: int, name: str) -> pa.Table:
    n = len(keys)
    return pa.table({"k": keys, "region": pa.array([f"r{i % 2}" for i in range(n)]),
                     "name": pa.array([f"{name}-{i}" for i in range(n)]), "ts": pa.array([ts] * n, pa.int64())})


@pytest.mark.parametrize("kind", list(KEY_CASES))
def test_each_key_type_is_rendered_alike_by_spark_and_arrow_so_upserts_update_in_place(
    spark: Any, project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch,
    session_time_zone: Callable[[str], None], kind: str,
) -> None:
    """Insert by a DataFrame, then upsert every key again from the Spark engine, an Arrow input
    and a DataFrame on the driver: each upsert updates every record and inserts none."""
    session_time_zone("America/Los_Angeles")  # a non-UTC session: timestamps must not shift
    keys = KEY_CASES[kind]
    root = project(v=_virtual("v", record_key="[k]"))
    base = root / "warehouse" / "v"
    first = runner.write(spark.createDataFrame(_key_rows(keys, 1, "v1")), "v", operation="insert", project_dir=root)
    assert first.num_inserts == len(keys)
    zone = "Asia/Kolkata"  # an Arrow input in yet another zone: the same instants
    arrow_keys = keys.cast(pa.timestamp("us", tz=zone)) if kind == "timestamp" else keys
    writes: list[tuple[str, Any]] = [
        ("spark", spark.createDataFrame(_key_rows(keys, 2, "v2"))),
        ("driver", _key_rows(arrow_keys, 3, "v3")),
        ("driver", spark.createDataFrame(_key_rows(keys, 4, "v4"))),
    ]
    for step, (engine, data) in enumerate(writes, start=2):
        monkeypatch.setattr(local, "PINNED", "spark" if engine == "spark" else None)
        result = runner.write(data, "v", project_dir=root)
        assert result.engine == engine
        assert (result.num_updates, result.num_inserts) == (len(keys), 0), (kind, step)
        _assert_virtual_files(base, result.files)
        found = _oracle(base)
        assert found.num_rows == len(keys), (kind, step)  # no key written twice
        assert sorted(found.column("name").to_pylist()) == sorted(f"v{step}-{i}" for i in range(len(keys)))
    assert sorted(_comparable(_oracle(base).column("k").cast(keys.type))) == sorted(_comparable(keys))


def _comparable(values: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Python values of key values; dates and timestamps as their integers (no year-0 datetimes)."""
    if pa.types.is_date32(values.type):
        return values.cast(pa.int32()).to_pylist()
    if pa.types.is_timestamp(values.type):
        return values.cast(pa.int64()).to_pylist()
    return values.to_pylist()


def test_a_new_virtual_key_table_without_its_key_column_is_refused_by_name(
    spark: Any, project: Callable[..., Path]
) -> None:
    """The key rules' own refusal (`The DataFrame has no column ...`), as for a table with meta
    fields, not an internal error from computing the virtual keys' types."""
    root = project(m=table_yaml("m", record_key="[order_id]"), v=_virtual("v", record_key="[order_id]"))
    df = spark.createDataFrame([(1, "r0", "a", 1)], "id long, region string, name string, ts long")
    for name in "mv":
        with pytest.raises(RefusedError) as refused:
            runner.write(df, name, project_dir=root)
        assert "has no column 'order_id'" in str(refused.value), name
    arrow = pa.table({"id": [1], "region": ["r0"], "name": ["a"], "ts": [1]})
    with pytest.raises(RefusedError, match="has no column 'order_id'"):
        runner.write(arrow, "v", project_dir=root)
    assert not list((root / "warehouse" / "v").rglob("*.parquet"))
    assert oracle_rows(root / "warehouse" / "m") == []
