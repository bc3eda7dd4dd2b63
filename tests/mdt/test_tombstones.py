"""The whole-array path for a clean's index tombstones (tombstones.py) gives the same bytes as the
per-record path: keys from `column_stats_key` / `bloom_filter_key`, values from fastavro, shards
from the one-key `shard`, cells from `CellRun.from_pairs`, HFiles from `write_hfile`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.errors import RefusedError
from runner.hudi.mdt import hfile, keys
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.actions import _bloom_tombstone, _column_stats_tombstone, clean_commit
from runner.hudi.mdt.hfile import CellRun, Cells, read_hfile, standard_file_info, write_hfile
from runner.hudi.mdt.reader import read_files_listing
from runner.hudi.mdt.tombstones import IndexTombstones
from runner.hudi.metadata import CleanMetadata, CleanPartitionMetadata
from runner.hudi.state import read_table_metadata
from runner.storage import storage_for

F9 = "sample_table/cow/v9_txns_simple_meta"
INSTANT = "20260101000000000"
SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Names of every shape: non-ASCII (multi-byte UTF-8, astral planes), empty, and long enough (64+
# bytes) for a two-byte Avro length.
names_ = st.text(st.characters(codec="utf-8"), max_size=80)
partitions_ = st.dictionaries(
    st.one_of(st.just("."), st.just(""), names_),
    st.lists(st.one_of(names_, st.sampled_from(["a.parquet", "é" * 40 + ".parquet"])), max_size=12),
    max_size=4,
)
columns_ = st.lists(names_, min_size=1, max_size=5)


@pytest.fixture(scope="module")
def schema(mdt_tables: dict[str, Path]) -> str:
    storage = storage_for(str(mdt_tables[F9]))
    return read_files_listing(storage, read_table_metadata(storage)).schema


def _stats(schema: str, files: dict[str, list[str]], columns: Sequence[str]) -> IndexTombstones:
    head, mid, tail = rec.string_template(schema, _column_stats_tombstone)
    heads = [(keys.name_id(c), mid + rec.avro_string(c) + tail) for c in columns]
    return IndexTombstones(list(files.items()), heads, name_prefix=head)


def _reference_stats(schema: str, files: dict[str, list[str]], columns: Sequence[str]) -> dict[str, bytes]:
    return {
        keys.column_stats_key(column, partition, name): rec.encode_record(schema, _column_stats_tombstone(name, column))
        for partition, names in files.items()
        for name in names
        for column in columns
    }


def _reference_runs(records: dict[str, bytes], groups: int) -> list[CellRun]:
    by_group: list[list[tuple[bytes, bytes]]] = [[] for _ in range(groups)]
    for key in sorted(records):
        by_group[keys.shard(key, groups)].append((key.encode("utf-8"), records[key]))
    return [CellRun.from_pairs(cells) for cells in by_group]


def _assert_same_cells(ours: Cells, reference: CellRun) -> None:
    assert len(ours) == len(reference)
    assert np.array_equal(ours.ends, reference.ends)
    assert bytes(ours.lay_out(0, len(ours))) == bytes(reference.data)
    assert [ours.row(i) for i in range(len(ours))] == [reference.row(i) for i in range(len(reference))]
    assert ours.row_and_value_bytes() == reference.row_and_value_bytes()
    # any sub-range, as the HFile writer asks for block ranges
    for first, end in ((1, len(ours) - 1), (len(ours) // 3, 2 * len(ours) // 3)):
        if 0 <= first <= end <= len(ours):
            assert bytes(ours.lay_out(first, end)) == bytes(reference.lay_out(first, end))


@SLOW
@given(files=partitions_, columns=columns_, groups=st.integers(min_value=1, max_value=5))
def test_column_stats_tombstones_equal_the_per_record_path(
    schema: str, files: dict[str, list[str]], columns: list[str], groups: int
) -> None:
    tombstones = _stats(schema, files, columns)
    reference = _reference_stats(schema, files, columns)
    assert dict(tombstones) == reference
    for ours, theirs in zip(tombstones.runs(groups), _reference_runs(reference, groups), strict=True):
        _assert_same_cells(ours, theirs)


@SLOW
@given(files=partitions_, groups=st.integers(min_value=1, max_value=5))
def test_bloom_filter_tombstones_equal_the_per_record_path(
    schema: str, files: dict[str, list[str]], groups: int
) -> None:
    value = rec.encode_record(schema, _bloom_tombstone(INSTANT))
    tombstones = IndexTombstones(list(files.items()), [("", value)], name_prefix=None)
    reference = {keys.bloom_filter_key(p, name): value for p, names in files.items() for name in names}
    assert dict(tombstones) == reference
    for ours, theirs in zip(tombstones.runs(groups), _reference_runs(reference, groups), strict=True):
        _assert_same_cells(ours, theirs)


@pytest.mark.parametrize("mixed_lengths", [False, True])
def test_many_tombstones_make_the_same_hfile(
    schema: str, mixed_lengths: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Names of one length take the in-place matrix path, mixed lengths the masked one; small chunks
    # make the writer lay out and compress many ranges on its threads.
    monkeypatch.setattr(hfile, "_CHUNK_BYTES", 50_000)
    files = {
        f"dt=2026-01-{p:02d}": [f"{'x' * (i % 3 if mixed_lengths else 0)}{p}-{i:05d}_0-1-2_{INSTANT}.parquet"
                                for i in range(400)]
        for p in range(5)
    }
    columns = [f"col_{i}" for i in range(12)] + ["prix_€", "名前"]
    tombstones = _stats(schema, files, columns)
    reference = _reference_stats(schema, files, columns)
    for ours, theirs in zip(tombstones.runs(2), _reference_runs(reference, 2), strict=True):
        _assert_same_cells(ours, theirs)
        info = [(b"schema", schema.encode()), *standard_file_info(ours, created_ms=7)]
        assert info[1:] == standard_file_info(theirs, created_ms=7)
        data = write_hfile(ours, info, block_size=4096)
        assert data == write_hfile(list(zip(*_pairs(theirs), strict=True)), info, block_size=4096)
        assert len(read_hfile(data, where="mem").cells) == len(theirs) > 0


def _pairs(run: CellRun) -> tuple[list[bytes], list[bytes]]:
    rows, values = [], []
    for i in range(len(run)):
        row = run.row(i)
        cell = bytes(run.lay_out(i, i + 1))
        rows.append(row)
        values.append(cell[hfile.CELL_PREFIX + len(row) + len(hfile.KEY_SUFFIX) : -1])
    return rows, values


def test_threaded_compression_gives_the_serial_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    cells = [(f"key-{i:06d}".encode(), bytes([i % 251]) * (i % 300)) for i in range(3000)]
    info = standard_file_info(cells, created_ms=0)
    serial = write_hfile(cells, info, block_size=4096)
    monkeypatch.setattr(hfile, "_CHUNK_BYTES", 10_000)
    monkeypatch.setattr(hfile.os, "cpu_count", lambda: 4)
    assert write_hfile(cells, info, block_size=4096) == serial


def test_a_file_listed_twice_is_one_tombstone(schema: str) -> None:
    tombstones = _stats(schema, {"p": ["a.parquet", "a.parquet", "b.parquet"]}, ["c"])
    assert len(tombstones) == 2
    assert dict(tombstones) == _reference_stats(schema, {"p": ["a.parquet", "b.parquet"]}, ["c"])


def test_two_files_with_one_key_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # An MD5 collision cannot be found on demand; a file id that ignores the name stands in for one.
    monkeypatch.setattr(keys, "file_id_rows", lambda names: np.full((len(names), 24), ord("A"), np.uint8))
    with pytest.raises(RefusedError, match="'p=1': two deleted files map to one index key"):
        IndexTombstones([("p=0", ["x"]), ("p=1", ["a", "b"])], [("", b"")], name_prefix=None)


def test_clean_commit_builds_tombstones_only_for_what_the_table_indexes(schema: str) -> None:
    base = "f1-0_0-1-2_20260101000000000.parquet"
    names = (base, ".f1-0_20260101000000000.log.1_0-1-0")
    meta = CleanPartitionMetadata("", "KEEP_LATEST_FILE_VERSIONS", names, names, (), False)
    clean = CleanMetadata(INSTANT, 1, 2, "", "", {"": meta}, {}, 2)
    commit = clean_commit(INSTANT, clean, mdt_partitions=("files", "column_stats", "bloom_filters"),
                          stats_columns=("a", "b"), schema=schema)
    assert dict(commit.records["column_stats"]) == _reference_stats(schema, {".": list(names)}, ["a", "b"])
    assert list(commit.records["bloom_filters"]) == [keys.bloom_filter_key(".", base)]  # base files only
    without = clean_commit(INSTANT, clean, mdt_partitions=("files",), stats_columns=("a",), schema=schema)
    assert list(without.records) == ["files"]


@settings(max_examples=200, deadline=None)
@given(st.lists(names_, max_size=30))
def test_file_id_rows_equal_file_id(names: list[str]) -> None:
    rows = keys.file_id_rows([n.encode("utf-8") for n in names])
    assert [bytes(r).decode("ascii") for r in rows] == [keys.file_id(n) for n in names]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.characters(max_codepoint=127), min_size=30, max_size=30), min_size=1, max_size=30),
       st.integers(min_value=1, max_value=40))
def test_array_hashes_and_shards_equal_the_one_key_shard(texts: list[str], groups: int) -> None:
    texts.append("polygenelubricants".rjust(30, "\x00"))  # Integer.MIN_VALUE, whose Math.abs stays negative
    rows = np.frombuffer("".join(texts).encode("ascii"), np.uint8).reshape(len(texts), 30)
    hashes = keys.java_hash_rows(rows)
    assert hashes.view(np.int32).tolist() == [keys.java_string_hash(t) for t in texts]
    assert keys.shard_of_hashes(hashes, groups).tolist() == [keys.shard(t, groups) for t in texts]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(names_, st.tuples(st.integers(min_value=0, max_value=1 << 50), st.booleans()), max_size=20),
       st.sampled_from([rec.PARTITION_LIST, rec.FILE_LIST]))
def test_spliced_file_lists_equal_fastavro(schema: str, files: dict[str, tuple[int, bool]], record_type: int) -> None:
    expected = rec.encode_record(schema, rec.file_list_record(files, record_type=record_type))
    assert rec.encode_file_list(schema, files, record_type=record_type) == expected


@pytest.mark.parametrize("length", [0, 63, 64, 1023, 1024, 1025, 5000])
def test_spliced_file_lists_equal_fastavro_at_every_length_prefix(schema: str, length: int) -> None:
    # Name lengths (in UTF-8 bytes) on both sides of the varint's byte boundaries and of the
    # splice's table of precomputed length prefixes; a two-byte character straddles them too.
    files = {"a" * length: (7, True), "é" * (length // 2 + 1): (1 << 40, False)}
    expected = rec.encode_record(schema, rec.file_list_record(files))
    assert rec.encode_file_list(schema, files) == expected
