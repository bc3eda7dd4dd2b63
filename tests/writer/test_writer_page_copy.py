"""A driver upsert copies the pages no update touches from the old base file (`runner.hudi.page_prefix`).

The oracle: a twin table receiving the same writes with the copy turned off; the `hudi` reader must
return the same records from both, and the records a plain Python model of the upserts expects.
The copy must happen where it can (the old pages' bytes are in the new file) and only there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import runner
from runner.hudi import page_prefix
from runner.hudi.parquet_deflate import DeflatingWriter
from tests.writer.writer_helpers import oracle_rows, table_yaml

COLUMNS = ("_hoodie_record_key", "id", "region", "name", "amount", "ts")


def _rows(ids: range, ts: int) -> pa.Table:
    values = np.arange(ids.start, ids.stop)
    return pa.table({"id": values, "region": pa.array(["r0"] * len(values)),
                     "name": pa.array([f"customer-{i}-{ts}" for i in values]),
                     "amount": pa.array(np.where(values % 11 == 0, np.nan, values * 0.5)),
                     "ts": pa.array(np.full(len(values), ts), pa.int64())})


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[dict[int, Any]]:
    """The prefixes each row group of the test's writes copied (one dict per row group written)."""
    seen: list[dict[int, Any]] = []
    original = DeflatingWriter.write_table

    def spied(self: DeflatingWriter, table: pa.Table, row_group_size: int | None = None, *,
              prefixes: dict[int, Any] | None = None) -> None:
        seen.append(dict(prefixes or {}))
        original(self, table, row_group_size, prefixes=prefixes)

    monkeypatch.setattr(DeflatingWriter, "write_table", spied)
    return seen


def _twins(project: Callable[..., Path], meta_fields: bool = True) -> Path:
    extra = "" if meta_fields else "  meta_fields: false\n"
    return project(a=table_yaml("a") + extra, b=table_yaml("b") + extra)


def _write_both(root: Path, monkeypatch: pytest.MonkeyPatch, rows: pa.Table, operation: str = "upsert") -> None:
    runner.write(rows, "a", operation=operation, project_dir=root)
    with monkeypatch.context() as off:
        off.setattr(page_prefix.OldPages, "matches", lambda self, template: False)
        runner.write(rows, "b", operation=operation, project_dir=root)


def _latest_file(table: Path) -> Path:
    files = sorted((table / "region=r0").glob("*.parquet"), key=lambda f: f.name.rsplit("_", 1)[1])
    return files[-1]


def _expected(writes: list[pa.Table]) -> list[dict[str, Any]]:
    latest: dict[int, dict[str, Any]] = {}
    for rows in writes:
        for row in rows.to_pylist():
            latest[row["id"]] = row | {"_hoodie_record_key": str(row["id"])}
    return sorted(({c: r[c] for c in COLUMNS} for r in latest.values()), key=repr)


def _oracle(root: Path, name: str) -> list[dict[str, Any]]:
    return oracle_rows(root / "warehouse" / name, columns=COLUMNS)


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    # NaN amounts: repr compares them equal where == would not.
    return repr(a) == repr(b)


def test_an_upsert_of_the_newest_records_copies_the_older_pages_and_reads_as_the_twin(
        project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, copies: list[dict[int, Any]]) -> None:
    root = _twins(project)
    writes = [_rows(range(0, 50_000), 0), _rows(range(45_000, 55_000), 1), _rows(range(52_000, 60_000), 2)]
    _write_both(root, monkeypatch, writes[0], "bulk_insert")
    old = _latest_file(root / "warehouse" / "a").read_bytes()
    copies.clear()
    _write_both(root, monkeypatch, writes[1])
    copied = [c for c in copies if c]
    assert len(copied) == 1, copies  # table a copied; its twin b did not
    names = pq.ParquetFile(_latest_file(root / "warehouse" / "a")).schema_arrow.names
    copied_names = {names[i] for i in copied[0]}
    assert {"_hoodie_commit_seqno", "_hoodie_record_key", "id", "name", "amount"} <= copied_names
    assert "_hoodie_file_name" not in copied_names
    new = _latest_file(root / "warehouse" / "a").read_bytes()
    for prefix in copied[0].values():
        assert 0 < prefix.rows <= 45_000
        assert bytes(prefix.data) in new and bytes(prefix.data) in old
    _write_both(root, monkeypatch, writes[2])
    assert _same(_oracle(root, "a"), _oracle(root, "b"))
    assert _same(_oracle(root, "a"), _expected(writes))


def test_an_update_of_the_first_record_copies_nothing(
        project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, copies: list[dict[int, Any]]) -> None:
    root = _twins(project)
    writes = [_rows(range(0, 45_000), 0), pa.concat_tables([_rows(range(0, 1), 1), _rows(range(44_000, 46_000), 1)])]
    _write_both(root, monkeypatch, writes[0], "bulk_insert")
    copies.clear()
    _write_both(root, monkeypatch, writes[1])
    assert not any(copies)
    assert _same(_oracle(root, "a"), _expected(writes))


def test_a_row_group_no_update_reaches_is_copied_whole(
        project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, copies: list[dict[int, Any]]) -> None:
    root = _twins(project)
    writes = [_rows(range(0, 140_000), 0), _rows(range(135_000, 141_000), 1)]
    _write_both(root, monkeypatch, writes[0], "bulk_insert")
    first_rows = pq.ParquetFile(_latest_file(root / "warehouse" / "a")).metadata.row_group(0).num_rows
    copies.clear()
    _write_both(root, monkeypatch, writes[1])
    first_group = next(c for c in copies if c)
    # The old file's first row group, every chunk of it; the merge's row group goes on past it.
    assert first_group and all(p.whole_chunk and p.rows == first_rows for p in first_group.values())
    parquet = pq.ParquetFile(_latest_file(root / "warehouse" / "a"))
    assert parquet.metadata.num_row_groups == 2 and parquet.metadata.row_group(0).num_rows == 131_072
    assert _same(_oracle(root, "a"), _oracle(root, "b"))
    assert _same(_oracle(root, "a"), _expected(writes))


def test_a_table_without_meta_fields_copies_its_data_pages(
        project: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, copies: list[dict[int, Any]]) -> None:
    root = _twins(project, meta_fields=False)
    writes = [_rows(range(0, 50_000), 0), _rows(range(45_000, 52_000), 1)]
    _write_both(root, monkeypatch, writes[0], "bulk_insert")
    copies.clear()
    _write_both(root, monkeypatch, writes[1])
    names = pq.ParquetFile(_latest_file(root / "warehouse" / "a")).schema_arrow.names
    copied = [{names[i] for i in c} for c in copies if c]
    assert copied and {"id", "name", "amount"} <= copied[0]
    data = ("id", "region", "name", "amount", "ts")
    a, b = (oracle_rows(root / "warehouse" / n, columns=data) for n in "ab")
    assert _same(a, b)
    assert _same(a, [{c: r[c] for c in data} for r in _expected(writes)])


def test_both_engines_copy_pages_deflated_at_another_level_as_they_are(
        project: Callable[..., Path], engine: str, monkeypatch: pytest.MonkeyPatch, spark: Any) -> None:
    """Pages written at gzip level 1, then upserted at Hudi's level 6: a copied page keeps its level-1
    bytes, which a page encoded again would not have. So the bytes tell a copy from a re-encode on
    either engine, the Spark engine's tasks included (they read the old file as byte ranges)."""
    root = project(t=table_yaml("t"))
    writes = [_rows(range(0, 50_000), 0), _rows(range(45_000, 55_000), 1)]
    runner.write(writes[0], "t", operation="bulk_insert", project_dir=root, options={"zlib.compress.level": "1"})
    old = _latest_file(root / "warehouse" / "t").read_bytes()
    names = pq.ParquetFile(_latest_file(root / "warehouse" / "t")).schema_arrow.names
    level_one = {name: page_prefix.OldPages.of_bytes("old", old).prefix(0, names.index(name), 45_000)
                 for name in ("id", "name", "_hoodie_record_key")}
    assert all(p is not None and p.rows == 40_000 for p in level_one.values())
    upsert = writes[1] if engine == "driver" else spark.createDataFrame(
        writes[1].to_pylist(), "id long, region string, name string, amount double, ts long")
    result = runner.write(upsert, "t", project_dir=root)
    assert result.engine == engine
    new = _latest_file(root / "warehouse" / "t").read_bytes()
    assert all(bytes(p.data) in new for p in level_one.values() if p is not None)
    assert _same(_oracle(root, "t"), _expected(writes))
    if engine == "driver":  # and encoded again, the pages differ: the check above tells the two apart
        root_off = root.parent / "off"
        (root_off / "tables").mkdir(parents=True)
        (root_off / "project.yml").write_text("name: encoded_again\n")
        (root_off / "tables" / "t.yml").write_text(table_yaml("t"))
        runner.write(writes[0], "t", operation="bulk_insert", project_dir=root_off,
                     options={"zlib.compress.level": "1"})
        monkeypatch.setattr(page_prefix.OldPages, "matches", lambda self, template: False)
        runner.write(writes[1], "t", project_dir=root_off)
        again = _latest_file(root_off / "warehouse" / "t").read_bytes()
        assert not any(bytes(p.data) in again for p in level_one.values() if p is not None)
