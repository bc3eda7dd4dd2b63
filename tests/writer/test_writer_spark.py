"""runner.write on real local Spark, checked with the independent `hudi` reader and our own state reader."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import runner
from runner.errors import RefusedError
from runner.hudi.metadata import decode_commit_metadata
from runner.hudi.properties import TableConfig
from runner.hudi.state import read_table_state
from runner.storage import storage_for
from tests.writer.writer_helpers import oracle_rows, oracle_slices, table_yaml

SCHEMA = "id long, region string, name string, ts long"
COLUMNS = ("id", "region", "name", "ts")


def _df(spark: Any, rows: list[tuple[Any, ...]], schema: str = SCHEMA) -> Any:
    return spark.createDataFrame(rows, schema)


def _commit(base: Path, instant: str) -> dict[str, Any]:
    return json.loads((base / ".hoodie" / f"{instant}.commit").read_text())


def _rows(base: Path, as_of: str | None = None) -> list[dict[str, Any]]:
    return oracle_rows(base, as_of, COLUMNS)


def _expect(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    return sorted((dict(zip(COLUMNS, r, strict=True)) for r in rows), key=repr)


def test_create_and_insert_then_upsert_reads_back_at_every_commit(spark: Any, project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"))
    base = root / "warehouse" / "orders"
    first = [(1, "eu", "a", 1), (2, "us", "b", 1), (3, "eu", "c", 1)]
    r1 = runner.write(_df(spark, first), "orders", operation="insert", project_dir=root)
    assert r1.created and r1.operation == "INSERT" and (r1.num_inserts, r1.num_updates) == (3, 0)

    config = TableConfig.parse((base / ".hoodie/hoodie.properties").read_text("iso-8859-1"), path="p")
    assert (config.version, config.table_type.value, config.hive_style_partitioning) == (6, "COPY_ON_WRITE", True)
    assert config.raw["hoodie.table.keygenerator.class"] == "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert sorted(p.name for p in (base / ".hoodie").iterdir() if p.name.startswith(r1.instant)) == [
        f"{r1.instant}.commit", f"{r1.instant}.commit.requested", f"{r1.instant}.inflight"]
    assert (base / ".hoodie" / f"{r1.instant}.commit.requested").read_bytes() == b""
    assert "commitTime=" + r1.instant in (base / "region=eu/.hoodie_partition_metadata").read_text()
    assert not (base / ".hoodie/.temp" / r1.instant).exists()

    second = [(1, "eu", "a2", 2), (4, "us", "d", 2)]
    r2 = runner.write(_df(spark, second), "orders", project_dir=root)
    assert not r2.created and (r2.num_inserts, r2.num_updates) == (1, 1)

    assert _rows(base) == _expect([(1, "eu", "a2", 2), (2, "us", "b", 1), (3, "eu", "c", 1), (4, "us", "d", 2)])
    assert _rows(base, r1.instant) == _expect(first)
    assert _rows(base, r2.instant) == _rows(base)

    stats = {
        s["partitionPath"]: s for stats in _commit(base, r2.instant)["partitionToWriteStats"].values() for s in stats
    }
    eu = stats["region=eu"]
    assert (eu["numWrites"], eu["numUpdateWrites"], eu["numInserts"], eu["prevCommit"]) == (2, 1, 0, r1.instant)
    assert eu["totalWriteBytes"] == eu["fileSizeInBytes"] == (base / eu["path"]).stat().st_size
    assert stats["region=us"]["prevCommit"] == r1.instant  # the small file took the insert
    meta = _commit(base, r2.instant)
    assert meta["operationType"] == "UPSERT"
    assert [f["name"] for f in json.loads(meta["extraMetadata"]["schema"])["fields"]] == list(COLUMNS)

    merged = pq.read_table(base / eu["path"]).to_pylist()
    by_id = {row["id"]: row for row in merged}
    assert by_id[3]["_hoodie_commit_time"] == r1.instant  # carried over unchanged...
    assert by_id[3]["_hoodie_file_name"] == Path(eu["path"]).name  # ...but in its new file
    assert by_id[1]["_hoodie_commit_seqno"].startswith(f"{r2.instant}_")
    footer = pq.ParquetFile(base / eu["path"]).metadata.metadata
    assert (footer[b"hoodie_min_record_key"], footer[b"hoodie_max_record_key"]) == (b"1", b"3")

    state = read_table_state(storage_for(str(base)))
    assert state.uncommitted_files == ()
    assert {g.latest.base_file.instant_time for g in state.active_groups} == {r2.instant}  # type: ignore[union-attr]


def test_precombine_picks_the_largest_value_and_the_later_row_on_ties(spark: Any, project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"))
    base = root / "warehouse" / "orders"
    rows = [
        (1, "eu", "old", 5),
        (1, "eu", "new", 9),
        (1, "eu", "older", 1),
        (2, "eu", "first", 3),
        (2, "eu", "second", 3),
    ]
    result = runner.write(_df(spark, rows), "orders", project_dir=root)
    assert result.num_inserts == 2
    assert _rows(base) == _expect([(1, "eu", "new", 9), (2, "eu", "second", 3)])
    # The stored record is replaced even by a smaller precombine value: Hudi 0.14's default payload
    # (OverwriteWithLatestAvroPayload) compares precombine values only within one write.
    runner.write(_df(spark, [(1, "eu", "late", 0)]), "orders", project_dir=root)
    assert _rows(base) == _expect([(1, "eu", "late", 0), (2, "eu", "second", 3)])


def test_multiple_partition_fields_use_complex_keys_and_nested_folders(
    spark: Any, project: Callable[..., Path]
) -> None:
    root = project(ev=table_yaml("ev", record_key="[id, name]", partition_by="[region, day]", precombine=None))
    base = root / "warehouse" / "ev"
    schema = "id long, name string, region string, day date"
    import datetime as dt

    day = dt.date(2024, 1, 2)
    runner.write(_df(spark, [(1, "a", "eu", day), (2, "b", None, day)], schema), "ev", project_dir=root)
    runner.write(_df(spark, [(1, "a", "eu", day)], schema), "ev", project_dir=root)
    keys = sorted(r["_hoodie_record_key"] for r in oracle_rows(base))
    assert keys == ["id:1,name:a", "id:2,name:b"]
    partitions = sorted(p for p, _, _ in oracle_slices(base))
    assert partitions == ["region=__HIVE_DEFAULT_PARTITION__/day=2024-01-02", "region=eu/day=2024-01-02"]
    assert "partitionDepth=2" in (base / "region=eu/day=2024-01-02/.hoodie_partition_metadata").read_text()
    props = (base / ".hoodie/hoodie.properties").read_text()
    assert "hoodie.table.keygenerator.class=org.apache.hudi.keygen.ComplexKeyGenerator" in props


def test_non_partitioned_table(spark: Any, project: Callable[..., Path]) -> None:
    root = project(dim=table_yaml("dim", partition_by="[]"))
    base = root / "warehouse" / "dim"
    runner.write(_df(spark, [(1, "eu", "a", 1), (2, "us", "b", 1)]), "dim", project_dir=root)
    r2 = runner.write(_df(spark, [(2, "us", "b2", 2)]), "dim", project_dir=root)
    assert _rows(base) == _expect([(1, "eu", "a", 1), (2, "us", "b2", 2)])
    assert (base / ".hoodie_partition_metadata").exists()
    assert list(_commit(base, r2.instant)["partitionToWriteStats"]) == [""]
    assert "NonpartitionedKeyGenerator" in (base / ".hoodie/hoodie.properties").read_text()
    empty = runner.write(_df(spark, []), "dim", project_dir=root)
    assert empty.files == () and _commit(base, empty.instant)["partitionToWriteStats"] == {}
    assert _rows(base) == _expect([(1, "eu", "a", 1), (2, "us", "b2", 2)])


def test_small_files_are_topped_up_as_assign_inserts_plans(spark: Any, project: Callable[..., Path]) -> None:
    from runner.sizing import CommitSize, assign_inserts, average_record_size

    # Every base file carries Hudi's ~431 KB bloom filter, so sizes are in that range, as with Hudi.
    max_size, small, split = 600_000, 550_000, 30
    sizing = f"file_sizing:\n  max_file_size: {max_size}\n  small_file_limit: {small}\n  insert_split_size: {split}\n"
    root = project(t=table_yaml("t", partition_by="[region]", sizing=sizing))
    base = root / "warehouse" / "t"
    next_id = 0
    instants: list[tuple[str, int]] = []
    for batch in (10, 25, 200, 40):
        before: list[tuple[str, int]] = []
        avg = 1024
        if (base / ".hoodie").exists():
            meta = read_table_state(storage_for(str(base))).metadata
            before = [
                (g.file_id, g.latest.base_file.size)  # type: ignore[union-attr]
                for g in read_table_state(storage_for(str(base))).active_groups
            ]
            history = [
                CommitSize(
                    i.action.value, meta.commits[i.time].total_bytes_written, meta.commits[i.time].total_records_written
                )
                for i in reversed(meta.timeline.completed_writes)
            ]
            avg = average_record_size(history, small_file_limit=small)
        rows = [(next_id + i, "eu", "x" * 20, 1) for i in range(batch)]
        next_id += batch
        result = runner.write(_df(spark, rows), "t", operation="insert", project_dir=root)
        planned = assign_inserts(
            before, batch, max_file_size=max_size, small_file_limit=small, insert_split_size=split, avg_record_size=avg
        )
        stats = [s for ss in _commit(base, result.instant)["partitionToWriteStats"].values() for s in ss]
        got = sorted((s["fileId"] if s["prevCommit"] != "null" else "", s["numInserts"]) for s in stats)
        assert got == sorted((b.file_id or "", b.records) for b in planned)
        assert any(b.file_id for b in planned) or batch == 10  # later writes do top up a small file
        instants.append((result.instant, next_id))
    assert len(_rows(base)) == 275
    for instant, total in instants:  # time travel: every commit reads back with all rows up to it
        assert sorted(r["id"] for r in _rows(base, instant)) == list(range(total))


def test_bulk_insert_opens_new_groups_only_and_rolls_over(
    spark: Any, project: Callable[..., Path], engine: str
) -> None:
    sizing = "file_sizing:\n  max_file_size: 5000\n  small_file_limit: 4000\n"
    root = project(t=table_yaml("t", sizing=sizing))
    base = root / "warehouse" / "t"
    runner.write(_df(spark, [(1, "eu", "a", 1)]), "t", project_dir=root)
    first_groups = {f for _, f, _ in oracle_slices(base)}
    rows = [(i, "eu", f"name-{i:05d}-" + "y" * 40, 1) for i in range(2, 600)]
    result = runner.write(_df(spark, rows).coalesce(1), "t", operation="bulk_insert", project_dir=root)
    assert result.engine == engine
    stats = [s for ss in _commit(base, result.instant)["partitionToWriteStats"].values() for s in ss]
    assert all(s["prevCommit"] == "null" and s["fileId"] not in first_groups for s in stats)
    assert len(stats) > 1  # rolled over at max_file_size
    prefixes = {s["fileId"].rsplit("-", 1)[0] for s in stats}
    assert len(prefixes) == 1 and sorted(int(s["fileId"].rsplit("-", 1)[1]) for s in stats) == list(range(len(stats)))
    assert len(_rows(base)) == 599


def test_declaration_must_agree_with_the_table(spark: Any, project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"))
    runner.write(_df(spark, [(1, "eu", "a", 1)]), "orders", project_dir=root)
    (root / "tables" / "orders.yml").write_text(table_yaml("orders", partition_by="[name]"))
    with pytest.raises(RefusedError, match=r"table.partition_by is \['name'\] but .* = \['region'\]"):
        runner.write(_df(spark, [(1, "eu", "a", 1)]), "orders", project_dir=root)


def test_null_record_key_is_refused(spark: Any, project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"))
    with pytest.raises(RefusedError, match="record key field 'id' is null or empty"):
        runner.write(_df(spark, [(None, "eu", "a", 1)]), "orders", project_dir=root)


def test_commit_metadata_decodes_with_the_runner_codec(spark: Any, project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"))
    base = root / "warehouse" / "orders"
    result = runner.write(_df(spark, [(1, "eu", "a", 1)]), "orders", project_dir=root)
    meta = decode_commit_metadata((base / ".hoodie" / f"{result.instant}.commit").read_bytes(), path="c")
    (stat,) = meta.write_stats
    assert (stat.num_writes, stat.num_inserts, stat.prev_commit, stat.partition_path) == (1, 1, None, "region=eu")
    inflight = decode_commit_metadata((base / ".hoodie" / f"{result.instant}.inflight").read_bytes(), path="i")
    assert [(s.file_id, s.num_inserts) for s in inflight.write_stats] == [("", 1)]


def test_insert_keeps_duplicates_unless_the_small_file_holds_the_key(spark: Any, project: Callable[..., Path]) -> None:
    no_small = "file_sizing:\n  small_file_limit: 0\n"
    root = project(a=table_yaml("a", sizing=no_small), b=table_yaml("b"))
    for name, expected in (("a", ["x", "y"]), ("b", ["y"])):
        runner.write(_df(spark, [(1, "eu", "x", 1)]), name, project_dir=root)
        runner.write(_df(spark, [(1, "eu", "y", 2)]), name, operation="insert", project_dir=root)
        assert sorted(r["name"] for r in _rows(root / "warehouse" / name)) == expected


def test_a_different_schema_is_refused_when_merging(spark: Any, project: Callable[..., Path]) -> None:
    root = project(orders=table_yaml("orders"))
    runner.write(_df(spark, [(1, "eu", "a", 1)]), "orders", project_dir=root)
    with pytest.raises(RefusedError, match=r"'extra' are not in the table .* \(schema evolution\) is not supported"):
        runner.write(_df(spark, [(1, "eu", "a", 2, 7)], SCHEMA + ", extra int"), "orders", project_dir=root)


def test_logical_and_nested_types_round_trip_through_hudi_rs(spark: Any, project: Callable[..., Path]) -> None:
    import datetime as dt
    import decimal

    root = project(t=table_yaml("t", partition_by="[day]", precombine="n"))
    schema = (
        "id int, n long, b byte, s short, f float, amount decimal(10,5), day date, at timestamp, raw binary, "
        "items array<struct<label:string, qty:int>>, attrs map<string, struct<w:double, ok:boolean>>, "
        "nested struct<name:string, inner:struct<x:double>>"
    )
    at = dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)
    row = (
        1,
        7,
        1,
        300,
        1.5,
        decimal.Decimal("12.34567"),
        dt.date(2024, 1, 2),
        at,
        b"\x01\x02",
        [("a", 1), None],
        {"k": (1.0, True)},
        ("f", (3.0,)),
    )
    runner.write(_df(spark, [row, (2, *row[1:])], schema), "t", project_dir=root)
    runner.write(_df(spark, [(1, 8, *row[2:])], schema), "t", project_dir=root)
    rows = oracle_rows(root / "warehouse" / "t")
    assert [r["_hoodie_partition_path"] for r in rows] == ["day=2024-01-02"] * 2
    by_id = {r["id"]: {k: v for k, v in r.items() if not k.startswith("_hoodie")} for r in rows}
    assert by_id[1]["n"] == 8 and by_id[2]["n"] == 7
    assert by_id[2] == {
        "id": 2,
        "n": 7,
        "b": 1,
        "s": 300,
        "f": 1.5,
        "amount": decimal.Decimal("12.34567"),
        "day": dt.date(2024, 1, 2),
        "at": at,
        "raw": b"\x01\x02",
        "items": [{"label": "a", "qty": 1}, None],
        "attrs": [("k", {"w": 1.0, "ok": True})],
        "nested": {"name": "f", "inner": {"x": 3.0}},
    }


def test_single_field_complex_keys_follow_the_encoding_the_table_holds(
    spark: Any, project: Callable[..., Path]
) -> None:
    import pyarrow as pa

    root = project(t=table_yaml("t", partition_by="[region, name]"))
    base = root / "warehouse" / "t"
    first = runner.write(_df(spark, [(1, "eu", "a", 1)]), "t", project_dir=root)
    assert [r["_hoodie_record_key"] for r in oracle_rows(base)] == ["id:1"]  # Hudi 0.14.0 / 1.1+
    # Rewrite the file as Hudi 0.14.1-1.0 would have: bare keys for a single-field ComplexKeyGenerator.
    path = base / first.files[0]
    table = pq.read_table(path)
    footer = {**(pq.read_metadata(path).metadata or {}), b"hoodie_min_record_key": b"1", b"hoodie_max_record_key": b"1"}
    table = table.set_column(2, "_hoodie_record_key", pa.array(["1"])).replace_schema_metadata(footer)
    pq.write_table(table, path)
    second = runner.write(_df(spark, [(1, "eu", "a", 2)]), "t", project_dir=root)
    assert (second.num_updates, second.num_inserts) == (1, 0)
    assert [(r["_hoodie_record_key"], r["ts"]) for r in oracle_rows(base)] == [("1", 2)]


def test_key_expressions_are_built_once_and_keep_their_checks(spark: Any, project: Callable[..., Path]) -> None:
    from runner.writer.create import SIMPLE, KeyLayout
    from runner.writer.prepare import key_columns, with_keys

    root = project(orders=table_yaml("orders"))
    runner.write(_df(spark, [(1, "eu", "a", 1)]), "orders", project_dir=root)
    layout = KeyLayout("orders", ("id",), ("region",), "ts", SIMPLE, hive_style=True)
    types = {"id": "long", "region": "string", "name": "string", "ts": "long"}
    built = key_columns(spark, layout, types)
    # Built once: the same expression objects come back, with no new round trips to the JVM.
    assert all(a is b for a, b in zip(key_columns(spark, layout, types | {"name": "int"}), built, strict=True))
    # Another key type is another expression.
    assert key_columns(spark, layout, types | {"id": "string"})[0] is not built[0]
    # The cached expressions still key new rows and still refuse a null key.
    keyed = with_keys(_df(spark, [(7, "us", "b", 2)]), layout).select("_hoodie_record_key", "_hoodie_partition_path")
    assert [tuple(r) for r in keyed.collect()] == [("7", "region=us")]
    runner.write(_df(spark, [(2, "eu", "b", 2)]), "orders", project_dir=root)
    with pytest.raises(RefusedError, match="record key field 'id' is null or empty"):
        runner.write(_df(spark, [(None, "eu", "a", 1)]), "orders", project_dir=root)
    assert sorted(r["id"] for r in _rows(root / "warehouse" / "orders")) == [1, 2]


def test_input_already_in_shape_is_used_as_given(spark: Any) -> None:
    # Each needless select or drop is one more plan for Spark to analyse on every write.
    from runner.writer.prepare import data_columns

    plain = _df(spark, [(1, "eu", "a", 1)])
    assert data_columns(plain) is plain
    with_meta = plain.selectExpr("'x' as _hoodie_record_key", "*")
    assert data_columns(with_meta).columns == plain.columns
