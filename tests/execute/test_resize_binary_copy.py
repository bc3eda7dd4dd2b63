"""Binary-copy resize (`file_sizing.strategy: binary_copy`): real Parquet files in, real files out.

The rewrite is the reference: a binary copy must read back (pyarrow, Spark, the `hudi` reader) as
the same rows, in the same order, with the same schema and the same Hudi footer, differing only in
row-group layout. Inputs that do not qualify fall back to the rewrite and say why.
"""

from __future__ import annotations

import decimal
import glob
import io
import textwrap
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runner.declarations.model import FileSizing, ResizeStrategy
from runner.execute.resize import ResizeRunner, finish_pending_resize, run_resize
from runner.execute.resize_copy import copy_group
from runner.execute.resize_job import GroupRewrite, RewriteTask, rewrite_group
from runner.execute.resize_plan import strategy_of_plan
from runner.hudi import bloom, bloom_merge, footer, parquet_copy
from runner.hudi.parquet_copy import NotCopyable, binary_copy
from runner.hudi.state import read_table_metadata, read_table_state
from runner.hudi.thrift_compact import I64, Struct, ThriftList, decode_struct, encode_struct
from runner.plan.sizing import plan_sizing
from runner.storage import LocalStorage, storage_for
from tests.execute.resize_crash import kill_group_task
from tests.execute.test_resize import SIZING, V6, V9, V9_MDT, add_small_files, clock, snapshot
from tests.hudi.test_bloom import decode_dynamic, member_mask, positions, reference_shape
from tests.s3 import S3Server, upload_tree

COPY = FileSizing(max_file_size=SIZING.max_file_size, small_file_limit=SIZING.small_file_limit,
                  strategy=ResizeStrategy.BINARY_COPY)
INSTANT = "20240103000000000"
KEY = "_hoodie_record_key"
NAME = "_hoodie_file_name"


def _footer_span(data: bytes) -> tuple[int, int]:
    size = int.from_bytes(data[-8:-4], "little")
    return len(data) - 8 - size, len(data) - 8


# -- the Thrift footer codec -----------------------------------------------------------------------


@pytest.mark.parametrize("fixture", [V6, V9, "sample_table/cow/v8_simplekeygen_nonhivestyle",
                                     "sample_table/cow/v6_simplekeygen_hivestyle_no_metafields"])
def test_footers_of_real_files_decode_and_encode_to_the_same_bytes(fixture, hudi_fixture, tmp_path):
    base = hudi_fixture(fixture)
    pq.write_table(_table(0, 50), tmp_path / "arrow.parquet", compression="zstd")  # another writer
    files = [*glob.glob(f"{base}/**/*.parquet", recursive=True), str(tmp_path / "arrow.parquet")]
    assert len(files) > 1
    for path in files:
        data = Path(path).read_bytes()
        start, end = _footer_span(data)
        meta, after = decode_struct(data, what=path, offset=start)
        assert after == end and encode_struct(meta) == data[start:end], path


def test_thrift_values_of_every_kind_round_trip():
    from runner.hudi.thrift_compact import BINARY, DOUBLE, I16, I32, LIST, MAP, STRUCT, TRUE, ThriftMap

    value = Struct([
        (1, TRUE, True), (2, TRUE, False), (3, I16, -7), (4, I32, 2**31 - 1), (5, I64, -(2**63)),
        (6, DOUBLE, 1.5), (7, BINARY, b"\x00\xffabc"), (40, LIST, ThriftList(I32, list(range(20)))),
        (41, MAP, ThriftMap(BINARY, STRUCT, [(b"k", Struct([(1, I64, 3)]))])),
        (300, LIST, ThriftList(TRUE, [True, False])),
    ])
    encoded = encode_struct(value)
    decoded, end = decode_struct(encoded, what="t")
    assert end == len(encoded) and decoded == value and encode_struct(decoded) == encoded


# -- one group, no Spark ---------------------------------------------------------------------------


def _table(start: int, rows: int, *, file_name: str = "old.parquet") -> pa.Table:
    """Hudi-shaped rows with nested, decimal, timestamp and null values."""
    ids = list(range(start, start + rows))
    return pa.table({
        "_hoodie_commit_time": pa.array(["20240101000000000"] * rows),
        "_hoodie_commit_seqno": pa.array([f"20240101000000000_0_{i}" for i in ids]),
        KEY: pa.array([f"key-{i:06d}" for i in ids]),
        "_hoodie_partition_path": pa.array(["p"] * rows),
        NAME: pa.array([file_name] * rows),
        "id": pa.array(ids, pa.int64()),
        "amount": pa.array([decimal.Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
        "at": pa.array([datetime(2024, 1, 1, tzinfo=UTC)] * rows, pa.timestamp("us", tz="UTC")),
        "note": pa.array([None if i % 7 == 0 else f"n{i % 13}" for i in ids]),
        "tags": pa.array([[f"t{i % 3}", f"u{i % 5}"] if i % 4 else None for i in ids]),
        "attrs": pa.array([{"a": i, "b": None if i % 2 else "x"} for i in ids],
                          pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "props": pa.array([[("k", i)] for i in ids], pa.map_(pa.string(), pa.int64())),
    })


def _write_inputs(root: Path, sizes: list[tuple[int, int]], *, codec: str = "zstd") -> tuple[str, ...]:
    """One input file per (rows, row group size), named with increasing instants (oldest first)."""
    (root / "p").mkdir(exist_ok=True)
    paths, start = [], 0
    for n, (rows, group) in enumerate(sizes):
        path = f"p/f{n}-0_0-1-1_2024010100000{n:04d}.parquet"
        pq.write_table(_table(start, rows), root / path, row_group_size=group, compression=codec)
        paths.append(path)
        start += rows
    return tuple(paths)


def test_a_copy_reads_as_the_rewrite_does_except_for_row_groups(tmp_path):
    storage = LocalStorage(str(tmp_path))
    inputs = _write_inputs(tmp_path, [(700, 300), (50, 50), (1200, 1000)])
    copied = copy_group(storage, GroupRewrite("p", "c-0", inputs), INSTANT, "0-0-0")
    rewritten = rewrite_group(storage, GroupRewrite("p", "r-0", inputs), INSTANT, "0-0-0")
    assert not isinstance(copied, str), copied
    assert copied.strategy == "binary_copy" and rewritten.strategy == "rewrite"

    copy, rewrite = pq.ParquetFile(tmp_path / copied.path), pq.ParquetFile(tmp_path / rewritten.path)
    copy_rows, rewrite_rows = copy.read(), rewrite.read()
    assert copy_rows.schema == rewrite_rows.schema  # types, and the footer's key-value metadata
    assert copy_rows.schema.metadata == rewrite_rows.schema.metadata
    assert copy_rows.drop_columns([NAME]).equals(rewrite_rows.drop_columns([NAME]))
    assert set(copy_rows.column(NAME).to_pylist()) == {copied.path.split("/")[-1]}
    assert copied.records == rewritten.records == 1950 == copy.metadata.num_rows
    assert copied.size == (tmp_path / copied.path).stat().st_size

    # Newest file first, as the rewrite orders rows; each input row group kept as it was.
    newest_first = [(tmp_path / p, pq.ParquetFile(tmp_path / p)) for p in reversed(inputs)]
    layout = [f.metadata.row_group(i).num_rows for _, f in newest_first for i in range(f.num_row_groups)]
    assert [copy.metadata.row_group(i).num_rows for i in range(copy.num_row_groups)] == layout == [
        1000, 200, 50, 300, 300, 100]
    assert rewrite.num_row_groups == 1
    # The data columns' chunks are the inputs' bytes; only the file name column was written again.
    sources = [(path, f, i) for path, f in newest_first for i in range(f.num_row_groups)]
    copy_data = (tmp_path / copied.path).read_bytes()
    for out_index, (path, source, in_index) in enumerate(sources):
        for column in range(copy.metadata.num_columns):
            out = copy.metadata.row_group(out_index).column(column)
            old = source.metadata.row_group(in_index).column(column)
            if out.path_in_schema == NAME:
                assert out.compression == old.compression == "ZSTD"
                continue
            assert _chunk_bytes(copy_data, out) == _chunk_bytes(path.read_bytes(), old), (out_index, column)


def _chunk_bytes(data: bytes, chunk: pq.ColumnChunkMetaData) -> bytes:
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    return data[start:start + chunk.total_compressed_size]


def test_inputs_without_a_bloom_filter_get_one_built_from_every_key(tmp_path):
    storage = LocalStorage(str(tmp_path))
    inputs = _write_inputs(tmp_path, [(300, 300), (400, 100)])
    copied = copy_group(storage, GroupRewrite("p", "c-0", inputs), INSTANT, "0-0-0")
    assert not isinstance(copied, str)
    written = pq.ParquetFile(tmp_path / copied.path)
    keys = written.read(columns=[KEY]).column(0)
    entries = written.metadata.metadata
    assert entries[footer.BLOOM_FILTER.encode()].decode() == bloom.serialize(keys.combine_chunks())
    assert entries[footer.BLOOM_FILTER_TYPE_CODE.encode()] == b"DYNAMIC_V0"
    assert (entries[footer.MIN_RECORD_KEY.encode()], entries[footer.MAX_RECORD_KEY.encode()]) == (
        b"key-000000", b"key-000699")
    assert b"ARROW:schema" not in entries  # the file reads from its Parquet types, as a rewritten one does
    raw = [(p, (tmp_path / p).read_bytes()) for p in inputs]
    assert binary_copy(raw, file_name="x.parquet").bloom_filter == f"rebuilt: {inputs[0]} has no bloom filter"


def _keyed_files(root: Path, key_lists: list[list[str]], *, footers: list[dict[str, str]] | None = None) -> list[
        tuple[str, bytes]]:
    """(path, bytes) of one Hudi-shaped file per key list, each with the footer Hudi's writer gives
    it (`footers` overrides it), in the order given."""
    (root / "p").mkdir(exist_ok=True)
    out = []
    for n, keys in enumerate(key_lists):
        path = f"p/k{n}-0_0-1-1_2024010100000{n:04d}.parquet"
        table = pa.table({KEY: pa.array(keys), NAME: pa.array([path] * len(keys)), "n": pa.array(range(len(keys)))})
        entries = footers[n] if footers is not None else footer.record_key_footer(table.column(KEY))
        pq.write_table(table.replace_schema_metadata(entries), root / path, row_group_size=20_000)
        out.append((path, (root / path).read_bytes()))
    return out


def test_the_inputs_bloom_filters_are_merged_and_every_key_stays_a_member(tmp_path):
    """125,000 keys (past Hudi's 120,000-key bound, where keys go round robin) from inputs of two
    rows (70,000 keys) and of one row. The merged filter is not compared with a rebuilt one byte for
    byte: with more than one row, which keys share a row differs (inputs' rows are ORed whole into
    the output's rows), so the bytes differ while what a reader relies on holds: every key is a
    member, and the layout is that of Hudi's filter of 125,000 keys. The key range is computed
    from the keys, in Java's order, whatever the inputs' footers say."""
    emoji, last_bmp = "\U0001F600", "\uFFFD"
    lists = [[f"a{i:06d}" for i in range(70_000)], [f"b{i:06d}" for i in range(30_000)] + [f"z{emoji}"],
             [f"c{i:06d}" for i in range(24_999)] + [f"z{last_bmp}"]]
    raw = _keyed_files(tmp_path, lists)
    copied = binary_copy(raw, file_name="out.parquet")
    assert copied.bloom_filter == "merged"
    written = pq.ParquetFile(pa.BufferReader(copied.data))
    entries = written.metadata.metadata
    merged = bloom_merge.merge([bloom_merge.InputFilter(p, "DYNAMIC_V0", pq.ParquetFile(pa.BufferReader(d)).metadata
                                                        .metadata[footer.BLOOM_FILTER.encode()].decode(), len(k))
                                for (p, d), k in zip(raw, lists, strict=True)])
    assert entries[footer.BLOOM_FILTER.encode()].decode() == merged.value
    assert entries[footer.BLOOM_FILTER_TYPE_CODE.encode()] == b"DYNAMIC_V0"

    header, shape, rows = decode_dynamic(merged.value)
    assert header == (-1, 30, 1, bloom.VECTOR_SIZE) and shape == reference_shape(125_001) == (60_000, 65_001, 2)
    keys = written.read(columns=[KEY]).column(0).combine_chunks()
    assert len(keys) == 125_001 and member_mask(rows, bloom.bit_positions(keys)).all()
    for key in (lists[0][0], lists[0][-1], lists[1][-1], lists[2][-1], "a060000", "b000000"):
        assert member_mask(rows, np.array(positions(key.encode()))[:, None])[0], key  # the Hudi port's hashes

    # Java order: the supplementary character (a surrogate pair, U+D83D...) sorts before U+FFFD.
    rewrite = footer.record_key_footer(keys)
    assert (entries[footer.MIN_RECORD_KEY.encode()].decode(), entries[footer.MAX_RECORD_KEY.encode()].decode()) == (
        rewrite[footer.MIN_RECORD_KEY], rewrite[footer.MAX_RECORD_KEY]) == ("a000000", f"z{last_bmp}")


def test_a_bloom_filter_that_is_not_its_file_s_is_rebuilt_from_the_keys(tmp_path):
    # The first file carries the filter of another file of as many rows (so the layout checks pass):
    # its keys are in neither input's filter, and the sampled keys show it.
    lists = [[f"a{i}" for i in range(500)], [f"b{i}" for i in range(500)]]
    foreign = [footer.record_key_footer(pa.array([f"x{i}" for i in range(500)])),
               footer.record_key_footer(pa.array(lists[1]))]
    copied = binary_copy(_keyed_files(tmp_path, lists, footers=foreign), file_name="out.parquet")
    assert copied.bloom_filter == "rebuilt: record key 'a0' fails its input's bloom filter", copied.bloom_filter
    entries = pq.ParquetFile(pa.BufferReader(copied.data)).metadata.metadata
    assert entries[footer.BLOOM_FILTER.encode()].decode() == bloom.serialize(pa.array(lists[0] + lists[1]))


def test_a_filter_inconsistent_with_its_file_s_rows_is_rebuilt_from_the_keys(tmp_path):
    lists = [[f"a{i}" for i in range(300)], [f"b{i}" for i in range(200)]]
    stale = [footer.record_key_footer(pa.array(lists[0][:100])), footer.record_key_footer(pa.array(lists[1]))]
    copied = binary_copy(_keyed_files(tmp_path, lists, footers=stale), file_name="out.parquet")
    assert copied.bloom_filter.startswith(
        "rebuilt: p/k0-0_0-1-1_20240101000000000.parquet: bloom filter (keys per row, keys in the last row, rows) "
        "is (60000, 100, 1), expected (60000, 300, 1) for its 300 records"), copied.bloom_filter
    entries = pq.ParquetFile(pa.BufferReader(copied.data)).metadata.metadata
    assert entries[footer.BLOOM_FILTER.encode()].decode() == bloom.serialize(pa.array(lists[0] + lists[1]))


def test_the_rewrite_merges_the_inputs_bloom_filters_too(tmp_path):
    """The rewrite writes exactly its inputs' keys, so it merges their filters as binary copy does
    (past 60,000 keys a merged filter's bytes differ from a rebuilt one's) instead of hashing
    every key again; every key stays a member and the range is computed from the keys."""
    lists = [[f"a{i:06d}" for i in range(70_000)], [f"b{i:06d}" for i in range(30_000)],
             [f"c{i:06d}" for i in range(25_000)]]
    raw = _keyed_files(tmp_path, lists)
    newest_first = list(reversed(raw))
    storage = LocalStorage(str(tmp_path))

    done = rewrite_group(storage, GroupRewrite("p", "r-0", tuple(p for p, _ in raw)), INSTANT, "0-0-0")

    entries = pq.ParquetFile(tmp_path / done.path).metadata.metadata
    merged = bloom_merge.merge([bloom_merge.InputFilter(p, "DYNAMIC_V0", pq.ParquetFile(pa.BufferReader(d)).metadata
                                                        .metadata[footer.BLOOM_FILTER.encode()].decode(),
                                                        pq.ParquetFile(pa.BufferReader(d)).metadata.num_rows)
                                for p, d in newest_first])
    keys = pq.read_table(tmp_path / done.path, columns=[KEY]).column(0).combine_chunks()
    assert entries[footer.BLOOM_FILTER.encode()].decode() == merged.value != bloom.serialize(keys)
    _, shape, rows = decode_dynamic(merged.value)
    assert shape == reference_shape(125_000) and member_mask(rows, bloom.bit_positions(keys)).all()
    assert (entries[footer.MIN_RECORD_KEY.encode()], entries[footer.MAX_RECORD_KEY.encode()]) == (
        b"a000000", b"c024999")


def test_the_rewrite_rebuilds_a_filter_that_is_not_its_file_s(tmp_path):
    lists = [[f"a{i}" for i in range(500)], [f"b{i}" for i in range(500)]]
    foreign = [footer.record_key_footer(pa.array([f"x{i}" for i in range(500)])),
               footer.record_key_footer(pa.array(lists[1]))]
    raw = _keyed_files(tmp_path, lists, footers=foreign)

    done = rewrite_group(LocalStorage(str(tmp_path)), GroupRewrite("p", "r-0", tuple(p for p, _ in raw)),
                         INSTANT, "0-0-0")

    entries = pq.ParquetFile(tmp_path / done.path).metadata.metadata
    assert entries[footer.BLOOM_FILTER.encode()].decode() == bloom.serialize(pa.array(lists[1] + lists[0]))


def test_hudi_written_filters_merge_into_exactly_the_filter_of_all_keys(hudi_fixture):
    """Seven files Hudi 1.1's Spark writer wrote: their filters are accepted as they are, and with
    every key in one row (under 60,000) the OR of the inputs' bits is the rebuilt filter bit for bit."""
    base = hudi_fixture(V9_MDT)
    paths = sorted(glob.glob(f"{base}/region=eu/*.parquet"))
    assert len(paths) == 7
    copied = binary_copy([(p, Path(p).read_bytes()) for p in paths], file_name="out.parquet")
    assert copied.bloom_filter == "merged"
    keys = pa.concat_arrays([pq.read_table(p, columns=[KEY]).column(0).combine_chunks() for p in paths])
    entries = pq.ParquetFile(pa.BufferReader(copied.data)).metadata.metadata
    assert entries[footer.BLOOM_FILTER.encode()].decode() == bloom.serialize(keys)
    # The keys as binary copy decodes them (from a file of the key column's chunks alone).
    parsed = [parquet_copy._parse(p, Path(p).read_bytes()) for p in paths]
    chunks = parquet_copy.key_chunks(parsed)
    assert chunks is not None
    assert parquet_copy._key_column([f for f, _ in parsed], chunks).combine_chunks().equals(keys)


def test_a_table_without_meta_columns_is_copied_whole(tmp_path):
    storage = LocalStorage(str(tmp_path))
    (tmp_path / "p").mkdir()
    inputs = []
    for n, keys in enumerate((["b", "c"], ["a"])):
        path = f"p/f{n}-0_0-1-1_2024010100000{n:04d}.parquet"
        pq.write_table(pa.table({"k": keys}).replace_schema_metadata(
            {footer.MIN_RECORD_KEY: min(keys), footer.MAX_RECORD_KEY: max(keys)}), tmp_path / path)
        inputs.append(path)
    copied = copy_group(storage, GroupRewrite("p", "c-0", tuple(inputs)), INSTANT, "0-0-0")
    assert not isinstance(copied, str)
    written = pq.ParquetFile(tmp_path / copied.path)
    assert written.read().column("k").to_pylist() == ["a", "b", "c"]
    entries = written.metadata.metadata
    assert (entries[b"hoodie_min_record_key"], entries[b"hoodie_max_record_key"]) == (b"a", b"c")


def _patch_footer(path: Path, change) -> None:
    data = path.read_bytes()
    start, _ = _footer_span(data)
    meta, _ = decode_struct(data, what=str(path), offset=start)
    change(meta)
    encoded = encode_struct(meta)
    path.write_bytes(data[:start] + encoded + len(encoded).to_bytes(4, "little") + b"PAR1")


def _evolve(root: Path, paths: tuple[str, ...]) -> None:
    pq.write_table(_table(0, 10).append_column("extra", pa.array(["e"] * 10)), root / paths[0])


def _other_codec(root: Path, paths: tuple[str, ...]) -> None:
    pq.write_table(_table(0, 10), root / paths[0], compression="snappy")


def _other_writer(root: Path, paths: tuple[str, ...]) -> None:
    _patch_footer(root / paths[0], lambda meta: meta.put(6, 8, b"parquet-mr version 1.8.0"))


@pytest.mark.parametrize(("change", "reason"), [
    (_evolve, "Parquet schemas differ"),
    (_other_codec, "codecs"),
    (_other_writer, "writers (created_by) differ"),
])
def test_inputs_that_differ_are_rewritten_and_say_why(change, reason, tmp_path):
    storage = LocalStorage(str(tmp_path))
    inputs = _write_inputs(tmp_path, [(10, 10), (20, 20)])
    change(tmp_path, inputs)

    (done,) = RewriteTask(storage, INSTANT, lambda: "0-0-0")([GroupRewrite("p", "c-0", inputs, binary_copy=True)])

    assert done.strategy == "rewrite" and reason in (done.fallback or ""), done.fallback
    reference = rewrite_group(storage, GroupRewrite("p", "r-0", inputs), INSTANT, "0-0-0")
    assert pq.read_table(tmp_path / done.path).drop_columns([NAME]).equals(
        pq.read_table(tmp_path / reference.path).drop_columns([NAME]))


def _understate_a_chunk(meta: Struct) -> None:
    """Record the sixth column chunk of the first row group as 5 bytes shorter than its pages."""
    rg = meta.get_list(4)[0]
    assert isinstance(rg, Struct)
    chunk = rg.get_list(1)[5]
    assert isinstance(chunk, Struct)
    column = chunk.get_struct(3)
    assert column is not None
    column.put(7, I64, (column.get_int(7) or 0) - 5)  # total_compressed_size


def test_a_chunk_whose_recorded_size_misses_its_pages_is_not_copied(tmp_path):
    inputs = _write_inputs(tmp_path, [(100, 100)])
    path = tmp_path / inputs[0]

    _patch_footer(path, _understate_a_chunk)
    with pytest.raises(NotCopyable, match="pages do not match its metadata"):
        binary_copy([(str(path), path.read_bytes())], file_name="x.parquet")


def test_files_that_are_not_plain_parquet_are_not_copied(tmp_path):
    with pytest.raises(NotCopyable, match="not a plain Parquet file"):
        binary_copy([("a.parquet", b"PAR1garbagePARE")], file_name="x.parquet")
    inputs = _write_inputs(tmp_path, [(10, 10)])
    good = (tmp_path / inputs[0]).read_bytes()
    with pytest.raises(NotCopyable):
        binary_copy([("b.parquet", good[:-12] + b"\xff\xff\x00\x00PAR1")], file_name="x.parquet")


def test_thrift_list_header_sizes_above_fourteen_round_trip():
    value = Struct([(1, 9, ThriftList(I64, list(range(-20, 20))))])
    assert decode_struct(encode_struct(value), what="t")[0] == value


# -- whole resizes, with Spark and the `hudi` reader -----------------------------------------------


@pytest.fixture
def v6_mixed(hudi_fixture) -> Path:
    """v6 COW: Hudi-written files plus pyarrow-written small files (another writer and codec)."""
    base = hudi_fixture(V6)
    add_small_files(base, "10", 4, seed=1)
    add_small_files(base, "20", 3, seed=3)
    return base


def _copied(copied: int, groups: int) -> str:
    return f"binary copy: {copied} of {groups} group{'' if groups == 1 else 's'} copied row group by row group"


def _step(base: Path, sizing: FileSizing):
    storage = storage_for(str(base))
    state = read_table_state(storage)
    step = plan_sizing(sizing, state)
    assert step is not None and not step.is_empty and step.strategy is sizing.strategy
    return storage, state, step


def test_a_binary_copy_resize_keeps_every_reader_s_rows(v6_mixed, spark):
    before = snapshot(v6_mixed)
    storage, state, step = _step(v6_mixed, COPY)

    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    assert snapshot(v6_mixed) == before  # the `hudi` reader, after the replacecommit
    assert outcome.notes[1:] == (_copied(len(step.groups), len(step.groups)),)
    paths = [str(v6_mixed / p) for p in outcome.output_files]
    expected = pa.concat_tables([pq.read_table(p) for p in paths])
    # Scalar columns (Spark's Rows and Arrow's dicts spell nested values differently), and no
    # timestamps (Spark gives them naive, in the session's zone).
    flat = [f.name for f in expected.schema
            if not pa.types.is_nested(f.type) and not pa.types.is_timestamp(f.type) and f.name != NAME]
    rows = spark.read.parquet(*paths).select(*flat).collect()  # type: ignore[attr-defined]
    assert len(rows) == expected.num_rows == outcome.records_written
    assert sorted(tuple(r) for r in rows) == sorted(tuple(r.values()) for r in expected.select(flat).to_pylist())
    for path in paths:
        keys = pq.read_table(path, columns=[KEY]).column(0).combine_chunks()
        entries = pq.ParquetFile(path).metadata.metadata
        # Not the rewrite's bytes in general (merged filters group keys into rows differently past
        # 60,000 keys): what matters is that every key is a member and the layout is Hudi's.
        header, shape, rows = decode_dynamic(entries[b"org.apache.hudi.bloomfilter"].decode())
        assert header == (-1, 30, 1, bloom.VECTOR_SIZE) and shape == reference_shape(len(keys))
        assert member_mask(rows, bloom.bit_positions(keys)).all()
        assert entries[b"hoodie_min_record_key"].decode() == min(keys.to_pylist())


def test_groups_mixing_writers_fall_back_and_the_report_says_so(hudi_fixture, spark):
    base = hudi_fixture(V6)
    added = set(add_small_files(base, "10", 3, seed=1))  # pyarrow beside Hudi's parquet-mr files
    before = snapshot(base)
    sizing = FileSizing(max_file_size=10_000_000, small_file_limit=5_000_000, strategy=ResizeStrategy.BINARY_COPY)
    storage, state, step = _step(base, sizing)
    mixed = [g for g in step.groups if {f.path for f in g.files} - added and {f.path for f in g.files} & added]
    assert mixed

    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    assert snapshot(base) == before
    fallbacks = [n for n in outcome.notes if "instead of copying" in n]
    assert len(fallbacks) == len(mixed), outcome.notes
    assert all("Parquet schemas differ" in n for n in fallbacks), fallbacks
    copied = len(step.groups) - len(mixed)
    assert _copied(copied, len(step.groups)) in outcome.notes


@pytest.mark.parametrize("fixture", [V9, "sample_table/cow/v9_txns_simple_meta",
                                     "sample_table/cow/v9_txns_nonpart_meta",
                                     "sample_table/cow/v9_timebasedkeygen_nonhivestyle"])
def test_hudi_written_files_are_copied_on_v9_tables(fixture, hudi_fixture, spark):
    """Files Hudi 1.1's Spark writer wrote (parquet-mr, gzip), with and without a metadata table."""
    base = hudi_fixture(fixture)
    before = snapshot(base)
    sizing = FileSizing(max_file_size=10_000_000, small_file_limit=5_000_000, strategy=ResizeStrategy.BINARY_COPY)
    storage, state, step = _step(base, sizing)

    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    assert snapshot(base) == before
    assert _copied(len(step.groups), len(step.groups)) in outcome.notes, outcome.notes
    outputs = [pq.ParquetFile(base / path) for path in outcome.output_files]
    assert all(f.metadata.created_by.startswith("parquet-mr") for f in outputs)  # the inputs' chunks and writer
    inputs = [pq.ParquetFile(base / f.path) for g in step.groups for f in g.files]
    assert sum(f.num_row_groups for f in outputs) == sum(f.num_row_groups for f in inputs)
    assert spark.read.parquet(*[str(base / p) for p in outcome.output_files]).count() == outcome.records_written


def test_a_v8_table_is_binary_copied(hudi_fixture, spark):
    base = hudi_fixture("sample_table/cow/v8_simplekeygen_nonhivestyle")
    add_small_files(base, "10", 3, seed=4)
    add_small_files(base, "20", 2, seed=5)
    before = snapshot(base)
    storage, state, step = _step(base, COPY)

    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    assert snapshot(base) == before
    assert outcome.notes[1:] == (_copied(len(step.groups), len(step.groups)),)


def test_a_hudi_file_without_meta_fields_keeps_no_key_footer(hudi_fixture, tmp_path):
    """`hoodie.populate.meta.fields=false`: Hudi writes the meta columns null and no key footer."""
    base = hudi_fixture("sample_table/cow/v6_simplekeygen_hivestyle_no_metafields")
    (path,) = glob.glob(f"{base}/byteField=10/*.parquet")
    name = Path(path).name
    copied = copy_group(LocalStorage(str(base)), GroupRewrite("byteField=10", "c-0", (f"byteField=10/{name}",)),
                        INSTANT, "0-0-0")
    assert not isinstance(copied, str), copied
    written = pq.ParquetFile(base / copied.path)
    assert written.read().drop_columns([NAME]).equals(pq.read_table(path).drop_columns([NAME]).replace_schema_metadata(
        written.schema_arrow.metadata))
    assert set(written.metadata.metadata) == {b"writer.model.name"}  # parquet.avro.schema dropped, as Hudi does



@pytest.mark.parametrize("strategy", ["rewrite", "binary_copy"])
@pytest.mark.parametrize("meta_fields", [False, True])
def test_without_meta_fields_the_file_name_column_is_kept_as_the_input_has_it(
    hudi_fixture, strategy, meta_fields
):
    """A table without meta fields: Hudi's clustering writes the rows as they are
    (`HoodieRowCreateHandle.writeRowNoMetaFields`), so the resize keeps `_hoodie_file_name` too. In
    this Hudi 0.14 file it holds the file's own name (Hudi's create handle sets it even without meta
    fields), the other meta columns null; told the table has meta fields, the new name is written."""
    base = hudi_fixture("sample_table/cow/v6_simplekeygen_hivestyle_no_metafields")
    (path,) = glob.glob(f"{base}/byteField=10/*.parquet")
    group = GroupRewrite("byteField=10", "c-0", (f"byteField=10/{Path(path).name}",), meta_fields=meta_fields)
    storage = LocalStorage(str(base))
    done = (copy_group(storage, group, INSTANT, "0-0-0") if strategy == "binary_copy"
            else rewrite_group(storage, group, INSTANT, "0-0-0"))
    assert not isinstance(done, str), done
    assert done.strategy == strategy
    before = pq.read_table(path).replace_schema_metadata(None)
    after = pq.read_table(base / done.path).replace_schema_metadata(None)
    assert after.drop_columns([NAME]).equals(before.drop_columns([NAME]))
    new_name = Path(done.path).name
    assert after.column(NAME).to_pylist() == ([new_name] * 2 if meta_fields else before.column(NAME).to_pylist())
    assert before.column(NAME).to_pylist() == [Path(path).name] * 2

def test_a_crashed_binary_copy_resize_finishes_as_a_binary_copy(v6_mixed, spark):
    before = snapshot(v6_mixed)
    storage, state, step = _step(v6_mixed, COPY)
    runner = ResizeRunner(storage, state.metadata, spark=spark, clock=clock)
    pending, written = runner.schedule(step)  # then the process dies
    requested = v6_mixed / ".hoodie" / written[0]
    assert strategy_of_plan(requested.read_bytes(), path=str(requested)) == "binary_copy"

    finished = finish_pending_resize(storage, read_table_metadata(storage), spark=spark, clock=clock)

    assert finished is not None and finished.instants == (str(pending.time),)
    assert any(n.startswith("binary copy:") for n in finished.notes), finished.notes
    assert snapshot(v6_mixed) == before


def test_a_rewrite_plan_records_its_strategy_and_old_plans_read_as_rewrite(v6_mixed, spark):
    storage, state, step = _step(v6_mixed, SIZING)
    runner = ResizeRunner(storage, state.metadata, spark=spark, clock=clock)
    _, written = runner.schedule(step)
    requested = v6_mixed / ".hoodie" / written[0]
    assert strategy_of_plan(requested.read_bytes(), path="r") == "rewrite"
    finished = finish_pending_resize(storage, read_table_metadata(storage), spark=spark, clock=clock)
    assert finished is not None and not any("binary copy" in n for n in finished.notes)


def test_a_merge_on_read_table_is_rewritten_as_hudi_copies_copy_on_write_only(hudi_fixture, spark):
    base = hudi_fixture("sample_table/mor/avro/v9_txns_simple_nometa")
    before = snapshot(base)
    sizing = FileSizing(max_file_size=10_000_000, small_file_limit=5_000_000, strategy=ResizeStrategy.BINARY_COPY)
    storage, state, step = _step(base, sizing)

    outcome = run_resize(storage, state.metadata, step, spark=spark, clock=clock)

    assert snapshot(base) == before
    assert outcome.notes[1:] == ("binary copy applies to copy-on-write tables only: every group was rewritten",)
    assert all(pq.ParquetFile(base / p).metadata.created_by.startswith("parquet-cpp-arrow")
               for p in outcome.output_files)


# -- streaming the copy into `create_new` ----------------------------------------------------------


class _Recorder(io.BytesIO):
    """An output that logs each write next to the sources' reads, to see their interleaving."""

    def __init__(self, log: list[tuple[str, str, int, int]]) -> None:
        super().__init__()
        self.log = log

    def write(self, data) -> int:  # type: ignore[override]
        self.log.append(("write", "", 0, len(data)))
        return super().write(data)


def test_the_copy_reads_one_input_s_data_at_a_time_and_writes_it_before_the_next(tmp_path):
    inputs = _write_inputs(tmp_path, [(700, 300), (500, 500), (900, 900)])
    log: list[tuple[str, str, int, int]] = []

    def source(path: str) -> parquet_copy.Source:
        data = (tmp_path / path).read_bytes()

        def read(start: int, length: int) -> bytes:
            log.append(("read", path, start, length))
            return data[start:start + length]

        return parquet_copy.Source(path, len(data), read)

    out = _Recorder(log)
    copied = parquet_copy.copy_into([source(p) for p in inputs], out, file_name="x.parquet")

    reference = binary_copy([(p, (tmp_path / p).read_bytes()) for p in inputs], file_name="x.parquet")
    assert out.getvalue() == reference.data and copied.size == len(reference.data)
    assert copied.records == 2100 and copied.row_groups == 5
    # Every footer first (small reads), then each input's data in one read from its start, followed
    # by its chunks' writes and nothing else, before the next input's data is read.
    data_reads = [i for i, (kind, _, start, length) in enumerate(log) if kind == "read" and start == 0 and length > 4]
    assert [log[i][1] for i in data_reads] == list(inputs)
    assert {path for kind, path, _, _ in log[:data_reads[0]] if kind == "read"} == set(inputs)
    assert [e for e in log[:data_reads[0]] if e[0] == "write"] == [("write", "", 0, 4)]  # PAR1
    for here, after in pairwise([*data_reads, len(log)]):
        between = log[here + 1:after]
        assert between and all(kind == "write" for kind, _, _, _ in between)


def test_a_chunk_found_wrong_part_way_publishes_nothing(tmp_path):
    """The page walk of the last input fails after the first inputs' chunks were streamed: the
    temporary file is dropped and the target never appears (the task then rewrites the group; a
    chunk this broken fails the rewrite's reader too, so that is not exercised here)."""
    storage = LocalStorage(str(tmp_path))
    inputs = _write_inputs(tmp_path, [(100, 100), (100, 100), (100, 100)])
    oldest = tmp_path / inputs[0]  # copied last (newest first)

    _patch_footer(oldest, _understate_a_chunk)
    before = sorted(p.name for p in (tmp_path / "p").iterdir())

    why = copy_group(storage, GroupRewrite("p", "c-0", inputs), INSTANT, "0-0-0")

    assert isinstance(why, str) and "pages do not match its metadata" in why and inputs[0] in why
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == before  # no target, no temporary file


CRASHING_COPY = textwrap.dedent("""
    import sys
    from runner.execute.resize_copy import copy_group
    from runner.execute.resize_job import GroupRewrite
    from runner.storage import storage_for

    base, partition, file_id, instant, *inputs = sys.argv[1:]
    copy_group(storage_for(base), GroupRewrite(partition, file_id, tuple(inputs), binary_copy=True), instant, "0-9-9")
""")


def test_a_crash_mid_copy_leaves_only_a_temporary_file_which_the_next_apply_removes(v6_mixed, spark, tmp_path):
    before = snapshot(v6_mixed)
    storage, state, step = _step(v6_mixed, COPY)
    group = next(g for g in step.groups if len(g.files) > 1)
    killed = kill_group_task(v6_mixed, storage, state.metadata, spark, step, group,
                             script=CRASHING_COPY, workdir=tmp_path)

    assert (killed.folder / killed.left).stat().st_size > 4  # the first input's chunks were written before the crash
    assert snapshot(v6_mixed) == before

    outcome = finish_pending_resize(storage, read_table_metadata(storage), spark=spark, clock=clock)

    assert outcome is not None and outcome.instants == (str(killed.pending.time),)
    assert f"{group.partition}/{killed.left}" in outcome.partial_files_deleted
    assert any(n.startswith("binary copy:") for n in outcome.notes), outcome.notes
    assert not list(v6_mixed.rglob("*.tmp"))
    assert snapshot(v6_mixed) == before
    assert not read_table_metadata(storage).timeline.pending()


@pytest.mark.s3
def test_on_s3_the_copy_reads_ranges_and_streams_the_same_bytes(tmp_path, s3_server: S3Server, s3_bucket: str):
    """Inputs read by range from the local S3 server, the output streamed through `create_new`:
    the object is byte for byte the file a local copy of the same group writes."""
    local = tmp_path / "local"
    local.mkdir()
    inputs = _write_inputs(local, [(700, 300), (50, 50), (1200, 1000)])
    upload_tree(local, s3_bucket, "t", s3_server)
    storage = storage_for(f"s3://{s3_bucket}/t", options=s3_server.options())

    on_s3 = copy_group(storage, GroupRewrite("p", "c-0", inputs), INSTANT, "0-0-0")
    here = copy_group(LocalStorage(str(local)), GroupRewrite("p", "c-0", inputs), INSTANT, "0-0-0")

    assert not isinstance(on_s3, str) and not isinstance(here, str), (on_s3, here)
    assert on_s3.path == here.path and on_s3.records == here.records == 1950
    assert storage.read(on_s3.path) == (local / here.path).read_bytes()
    assert on_s3.size == here.size and on_s3.input_bytes == here.input_bytes
