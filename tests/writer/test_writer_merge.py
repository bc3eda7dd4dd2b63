"""The merge handle in a task's shoes, without Spark: a real base file on disk, merged with new records.

The expected file is computed here from first principles (old records in place, each updated one
replaced by its newest incoming record, then the inserts in the order of their last record), then
compared row by row and meta column by meta column with what `merge` wrote.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from runner.hudi.files import BaseFile
from runner.storage.local import LocalStorage
from runner.writer import files
from runner.writer.files import CreateHandle, FileContext, merge
from runner.writer.index import OLD_ROW, read_old_file
from runner.writer.schema import PARTITION_PATH, RECORD_KEY, arrow_schema, file_avro_schema_json

SPARK_SCHEMA = {"type": "struct", "fields": [
    {"name": name, "type": kind, "nullable": True, "metadata": {}}
    for name, kind in (("id", "long"), ("region", "string"), ("name", "string"))
]}
PARTITION = "region=eu"


def _context(root: Path, instant: str, partition_id: int) -> FileContext:
    return FileContext(
        storage=LocalStorage(str(root)), instant=instant, write_token=f"{partition_id}-1-1",
        partition_id=partition_id, schema=arrow_schema(SPARK_SCHEMA),
        avro_schema=file_avro_schema_json(SPARK_SCHEMA, "t"), max_file_size=1 << 30, avg_record_size=100,
    )


def _records(rows: list[tuple[int, str]]) -> pa.Table:
    ids = [i for i, _ in rows]
    return pa.table({
        "id": pa.array(ids, pa.int64()), "region": ["eu"] * len(rows), "name": [n for _, n in rows],
        RECORD_KEY: [str(i) for i in ids], PARTITION_PATH: [PARTITION] * len(rows),
    })


def _base_file(root: Path, rows: list[tuple[int, str]]) -> BaseFile:
    handle = CreateHandle(_context(root, "20240101000000000", 0), PARTITION, "group-0")
    handle.write(_records(rows))
    (written,) = handle.close()
    return BaseFile.parse(written.name, written.size)  # type: ignore[return-value]


def _expected(old: list[dict[str, Any]], incoming: list[tuple[int, str]], instant: str,
              task: int) -> tuple[list[tuple[object, ...]], int, int]:
    newest: dict[str, tuple[int, str]] = {}
    for row in incoming:  # the last record of a key wins, placed where its last record was
        newest.pop(str(row[0]), None)
        newest[str(row[0])] = row
    out: list[tuple[object, ...]] = []
    seq = 0
    for record in old:
        key = record[RECORD_KEY]
        if key in newest:
            out.append((instant, f"{instant}_{task}_{seq}", key, newest[key][1]))
            seq += 1
        else:
            out.append((record["_hoodie_commit_time"], record["_hoodie_commit_seqno"], key, record["name"]))
    updates = seq
    old_keys = {r[RECORD_KEY] for r in old}
    inserts = [row for key, row in newest.items() if key not in old_keys]
    for row in inserts:
        out.append((instant, f"{instant}_{task}_{seq}", str(row[0]), row[1]))
        seq += 1
    return out, updates, len(inserts)


@pytest.mark.parametrize("read_by_index", [False, True], ids=["read by the merge", "read by the index"])
@pytest.mark.parametrize("row_group_rows", [7, 1000])
def test_merge_replaces_updates_in_place_appends_inserts_and_streams_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row_group_rows: int, read_by_index: bool
) -> None:
    monkeypatch.setattr(files, "ROW_GROUP_ROWS", row_group_rows)
    old_rows = [(i, f"old-{i}") for i in range(40)] + [(5, "old-5-again")]  # a key twice (bulk insert keeps both)
    base = _base_file(tmp_path, old_rows)
    old = pq.read_table(tmp_path / PARTITION / base.name).to_pylist()
    incoming = [(100, "new-100"), (3, "upd-3"), (5, "upd-5"), (101, "new-101"), (3, "upd-3-later"),
                (39, "upd-39"), (100, "new-100-later"), (0, "upd-0")]
    instant = "20240102000000000"

    # The driver's index hands the merge the file it read (keys decoded once); the result is the same.
    old_file = read_old_file(LocalStorage(str(tmp_path)), PARTITION, base) if read_by_index else None

    written = merge(_context(tmp_path, instant, 4), PARTITION, base, _records(incoming), old_file)

    path = tmp_path / PARTITION / written.name
    got = pq.read_table(path)
    rows, updates, inserts = _expected(old, incoming, instant, 4)
    assert [(r["_hoodie_commit_time"], r["_hoodie_commit_seqno"], r[RECORD_KEY], r["name"])
            for r in got.to_pylist()] == rows
    assert set(got.column("_hoodie_file_name").to_pylist()) == {written.name}
    assert (written.num_writes, written.num_update_writes, written.num_inserts) == (len(rows), updates, inserts)
    assert (updates, inserts) == (5, 2)  # keys 0, 3, 39 and both records of 5; then 101 and 100
    metadata = pq.ParquetFile(path).metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    # Row groups of exactly ROW_GROUP_ROWS rows, the last shorter: bounded memory, and a file that
    # fits in one row group is written as one.
    assert sizes == [row_group_rows] * (len(rows) // row_group_rows) + (
        [len(rows) % row_group_rows] if len(rows) % row_group_rows else [])
    footer = metadata.metadata
    assert footer[b"hoodie_min_record_key"] == b"0" and footer[b"hoodie_max_record_key"] == b"9"


def test_new_records_known_distinct_merge_as_when_they_are_checked(tmp_path: Path) -> None:
    """An upsert's records are de-duplicated before routing (`WriteTask.keys_distinct`): the merge then
    skips collapsing them, and writes the same records as when it checks."""
    incoming = [(100, "new-100"), (3, "upd-3"), (101, "new-101"), (39, "upd-39"), (0, "upd-0")]
    got = []
    for known in (False, True):
        root = tmp_path / str(known)
        base = _base_file(root, [(i, f"old-{i}") for i in range(40)])
        ctx = _context(root, "20240102000000000", 4)
        ctx = FileContext(**{**{f: getattr(ctx, f) for f in ctx.__dataclass_fields__}, "keys_distinct": known})
        written = merge(ctx, PARTITION, base, _records(incoming))
        table = pq.read_table(root / PARTITION / written.name).drop_columns(["_hoodie_file_name"])
        got.append((table.to_pylist(), written.num_update_writes, written.num_inserts))
    assert got[0] == got[1]
    assert got[0][1:] == (3, 2)


@pytest.mark.parametrize("read_by_index", [False, True], ids=["read by the merge", "read by the index"])
def test_merge_does_not_decode_the_old_file_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  read_by_index: bool) -> None:
    """Every merged record takes the new file's name, so the old names are never decoded; the old
    records still come out under the new name, in row groups across batches."""
    monkeypatch.setattr(files, "ROW_GROUP_ROWS", 4)
    base = _base_file(tmp_path, [(i, f"old-{i}") for i in range(10)])
    old_file = read_old_file(LocalStorage(str(tmp_path)), PARTITION, base) if read_by_index else None
    decoded: list[list[str]] = []
    iter_batches = pq.ParquetFile.iter_batches

    def recorded(self: pq.ParquetFile, *args: Any, **kwargs: Any) -> Any:
        decoded.append(list(kwargs.get("columns") or []))
        return iter_batches(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", recorded)
    written = merge(_context(tmp_path, "20240102000000000", 1), PARTITION, base, _records([(3, "upd-3")]), old_file)

    assert decoded and all(columns and "_hoodie_file_name" not in columns for columns in decoded)
    got = pq.read_table(tmp_path / PARTITION / written.name)
    assert got.column("_hoodie_file_name").to_pylist() == [written.name] * 10
    assert got.column("name").to_pylist() == [f"old-{i}" if i != 3 else "upd-3" for i in range(10)]


def _merge_with_rows(root: Path, old_rows: list[int | None], monkeypatch: pytest.MonkeyPatch | None = None,
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, int]:
    """Merge `(3, upd-3), (17, upd-17), (100, new-100)` into a 20-record file the index read, with
    `old_rows` as the tagging's rows of those records; the old and the merged records."""
    base = _base_file(root, [(i, f"old-{i}") for i in range(20)])
    old = pq.read_table(root / PARTITION / base.name).to_pylist()
    old_file = read_old_file(LocalStorage(str(root)), PARTITION, base)
    incoming = _records([(3, "upd-3"), (17, "upd-17"), (100, "new-100")]).append_column(
        OLD_ROW, pa.array(old_rows, pa.int64()))
    ctx = dataclasses.replace(_context(root, "20240102000000000", 2), keys_distinct=True)
    if monkeypatch is not None:  # the rows are right: no key is looked up
        monkeypatch.setattr(pc, "index_in", lambda *a, **k: pytest.fail("looked the old keys up"))
    written = merge(ctx, PARTITION, base, incoming, old_file)
    return old, pq.read_table(root / PARTITION / written.name).to_pylist(), written.num_update_writes, \
        written.num_inserts


@pytest.mark.parametrize("old_rows", [[3, 17, None], [4, 17, None], [3, 3, None], [3, 20, None], [3, -1, None]],
                         ids=["right", "another key's row", "a row twice", "past the file", "negative"])
def test_merge_finds_updated_rows_by_the_tagging_only_when_they_hold_their_keys(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old_rows: list[int | None]) -> None:
    """The driver's tagging gives each update its old record's row (`OLD_ROW`): the merge uses the
    rows without looking the keys up when every row holds its record's key, once; any other hint
    is ignored and the keys looked up, so the file is the same either way."""
    right = old_rows == [3, 17, None]
    old, got, updates, inserts = _merge_with_rows(tmp_path, old_rows, monkeypatch if right else None)
    rows, expected_updates, expected_inserts = _expected(
        old, [(3, "upd-3"), (17, "upd-17"), (100, "new-100")], "20240102000000000", 2)
    assert [(r["_hoodie_commit_time"], r["_hoodie_commit_seqno"], r[RECORD_KEY], r["name"]) for r in got] == rows
    assert (updates, inserts) == (expected_updates, expected_inserts) == (2, 1)


def test_a_key_held_twice_in_the_old_file_has_both_records_updated_by_a_driver_merge(tmp_path: Path) -> None:
    """Hudi's merge handle replaces every old record of an updated key and inserts nothing for it;
    a file holding a key twice (an insert without de-duplication wrote it) gives the key two index
    rows, so the tagging's join brings the upsert's record to the file group twice, and the merge,
    told the keys are distinct (an upsert's `WriteTask.keys_distinct`), must not write the copy as
    an insert: the key would be held three times."""
    from runner.writer import index, local
    from runner.writer.tasks import TARGET

    base = _base_file(tmp_path, [(i, f"old-{i}") for i in range(6)] + [(3, "old-3-again")])
    old = pq.read_table(tmp_path / PARTITION / base.name).to_pylist()
    table, kept = index.index_table(LocalStorage(str(tmp_path)), [(PARTITION, base)], threads=1, keep_bytes=1 << 30)
    tagged = local.tag(_records([(3, "upd-3")]), table, keys_distinct=True)
    incoming = tagged.filter(pc.equal(tagged.column(TARGET), base.file_id)).drop_columns([TARGET])
    ctx = dataclasses.replace(_context(tmp_path, "20240102000000000", 2), keys_distinct=True)
    written = merge(ctx, PARTITION, base, incoming, kept[f"{PARTITION}/{base.name}"])

    got = pq.read_table(tmp_path / PARTITION / written.name).to_pylist()
    rows, updates, inserts = _expected(old, [(3, "upd-3")], "20240102000000000", 2)
    assert [(r["_hoodie_commit_time"], r["_hoodie_commit_seqno"], r[RECORD_KEY], r["name"]) for r in got] == rows
    assert (written.num_update_writes, written.num_inserts) == (updates, inserts) == (2, 0)
