"""The rewrite decodes low-cardinality string columns as Arrow dictionaries and writes them from one
dictionary per row group: the file reads exactly as the plain path writes it, and those columns stay
dictionary-encoded (no fallback to plain pages when the inputs' dictionaries differ)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import runner.execute.resize_job as job
from runner.execute.resize_job import GroupRewrite, dictionary_columns, rewrite_group
from runner.hudi import parquet_dictionary
from runner.hudi.thrift_compact import Struct, decode_struct
from runner.storage import LocalStorage

INSTANT = "20240105000000000"
# Parquet's PageType and Encoding numbers (parquet.thrift)
DATA_PAGE, DATA_PAGE_V2 = 0, 3
PLAIN_DICTIONARY, RLE_DICTIONARY = 2, 8


def write_inputs(root: Path, *, plain_category_in: int | None = None) -> tuple[str, ...]:
    """Three base files in partition `p` whose `category` dictionaries differ in content and order."""
    (root / "p").mkdir(parents=True)
    paths = []
    for n, categories in enumerate((["red", "green"], ["blue", "red", "teal"], ["teal", "amber"])):
        rows = 4000
        name = f"f{n}-0_0-1-{n}_2024010{n + 1}000000000.parquet"
        table = pa.table({
            "_hoodie_commit_time": [f"2024010{n + 1}000000000"] * rows,
            "_hoodie_commit_seqno": [f"2024010{n + 1}000000000_0_{i}" for i in range(rows)],
            "_hoodie_record_key": [f"key-{n}-{i:06d}" for i in range(rows)],
            "_hoodie_partition_path": ["p"] * rows,
            "_hoodie_file_name": [name] * rows,
            "category": [None if i % 11 == 0 else categories[i % len(categories)] for i in range(rows)],
            "code": pa.array([f"c{i % 3}".encode() for i in range(rows)], pa.binary()),
            "amount": [i * 0.5 for i in range(rows)],
        })
        dictionary: bool | list[str] = True if n != plain_category_in else [c for c in table.column_names
                                                                            if c != "category"]
        pq.write_table(table, root / "p" / name, compression="snappy", store_schema=False, use_dictionary=dictionary)
        paths.append(f"p/{name}")
    return tuple(paths)


def sources(root: Path, inputs: tuple[str, ...]) -> list[job._Source]:
    storage = LocalStorage(str(root))
    return [job._read_source(storage, p) for p in inputs]


def data_page_encodings(path: Path, column: str) -> set[int]:
    """The encodings of every data page of `column`, from the footer's page encoding statistics."""
    data = path.read_bytes()
    length = int.from_bytes(data[-8:-4], "little")
    meta, _ = decode_struct(data[-8 - length:-8], what=str(path))
    leaf = pq.ParquetFile(path).schema_arrow.names.index(column)  # flat schema: one leaf per column
    encodings = set()
    for rg in meta.get_list(4):
        assert isinstance(rg, Struct)
        chunk = rg.get_list(1)[leaf]
        assert isinstance(chunk, Struct)
        column_meta = chunk.get_struct(3)
        assert column_meta is not None
        stats = column_meta.get_list(13)
        assert stats, "the writer records page encoding statistics"
        for s in stats:
            assert isinstance(s, Struct)
            if s.get_int(1) in (DATA_PAGE, DATA_PAGE_V2):
                encodings.add(s.get_int(2))
    return encodings


def test_small_dictionaries_of_string_and_binary_columns_are_chosen_and_nothing_else(tmp_path, monkeypatch):
    inputs = write_inputs(tmp_path)
    found = sources(tmp_path, inputs)
    schema = job.merged_schema([s.schema for s in found])
    monkeypatch.setattr(job, "SMALL_DICTIONARY_BYTES", 200 * 1024)

    chosen = dictionary_columns(schema, found)

    # not the record key (the footer reads it as strings), nor the file name (not decoded), nor a
    # double; nor the sequence numbers: one value a row, their dictionaries pass the budget
    # uncompressed (what the writer's dictionary page holds), though not compressed
    assert chosen == {"_hoodie_commit_time", "_hoodie_partition_path", "category", "code"}
    seqno = [s.metadata.row_group(0).column(1) for s in found]
    assert sum(c.total_compressed_size for c in seqno) < 200 * 1024 < sum(c.total_uncompressed_size for c in seqno)


def test_a_column_stored_plain_in_one_input_or_missing_from_one_is_decoded_as_plain_strings(tmp_path):
    inputs = write_inputs(tmp_path / "plain", plain_category_in=1)
    found = sources(tmp_path / "plain", inputs)
    assert "category" not in dictionary_columns(job.merged_schema([s.schema for s in found]), found)

    inputs = write_inputs(tmp_path / "evolved")
    oldest = tmp_path / "evolved" / inputs[0]
    pq.write_table(pq.read_table(oldest).drop_columns(["code"]), oldest, store_schema=False)
    found = sources(tmp_path / "evolved", inputs)
    schema = job.merged_schema([s.schema for s in found])
    assert "code" in schema.names and "code" not in dictionary_columns(schema, found)


def test_the_budget_bounds_the_dictionaries_summed_over_the_inputs(tmp_path, monkeypatch):
    inputs = write_inputs(tmp_path)
    found = sources(tmp_path, inputs)
    schema = job.merged_schema([s.schema for s in found])
    monkeypatch.setattr(job, "SMALL_DICTIONARY_BYTES", 0)

    assert dictionary_columns(schema, found) == frozenset()


@pytest.mark.parametrize("buffer_bytes", [job.ROW_GROUP_BUFFER_BYTES, 96 * 1024])
def test_the_file_reads_as_the_plain_path_writes_it_and_stays_dictionary_encoded(tmp_path, monkeypatch, buffer_bytes):
    inputs = write_inputs(tmp_path / "dict")
    write_inputs(tmp_path / "plain")
    group = GroupRewrite("p", "new-0", inputs)

    fast = rewrite_group(LocalStorage(str(tmp_path / "dict")), group, INSTANT, "0-0-0",
                         batch_rows=1500, buffer_bytes=buffer_bytes)
    monkeypatch.setattr(job, "SMALL_DICTIONARY_BYTES", 0)  # every column decoded to plain values
    plain = rewrite_group(LocalStorage(str(tmp_path / "plain")), group, INSTANT, "0-0-0",
                          batch_rows=1500, buffer_bytes=buffer_bytes)

    a, b = pq.ParquetFile(tmp_path / "dict" / fast.path), pq.ParquetFile(tmp_path / "plain" / plain.path)
    assert a.read().equals(b.read())
    assert a.schema.equals(b.schema)
    assert a.schema.equals(pq.ParquetFile(tmp_path / "dict" / inputs[0]).schema)  # still plain BYTE_ARRAY
    assert a.schema_arrow.field("category").type == pa.string()
    assert a.metadata.metadata == b.metadata.metadata  # the record-key footer
    if buffer_bytes < job.ROW_GROUP_BUFFER_BYTES:
        assert a.metadata.num_row_groups > 1  # batches split across row groups
    for rg in range(a.metadata.num_row_groups):
        for column in ("_hoodie_commit_time", "category", "code"):
            leaf = a.schema_arrow.names.index(column)
            fast_chunk = a.metadata.row_group(rg).column(leaf)
            assert fast_chunk.statistics is not None
            if a.metadata.num_row_groups == b.metadata.num_row_groups:
                assert fast_chunk.statistics == b.metadata.row_group(rg).column(leaf).statistics
    # the inputs' dictionaries differ file by file; without one dictionary per row group the writer
    # would write the rest of the chunk as plain pages
    for column in ("_hoodie_commit_time", "_hoodie_partition_path", "category", "code"):
        assert data_page_encodings(tmp_path / "dict" / fast.path, column) <= {RLE_DICTIONARY, PLAIN_DICTIONARY}
    assert fast.records == plain.records == 12000


PLAIN = 0


def test_distinct_columns_are_written_plain_and_few_valued_ones_with_a_dictionary_as_hudi_chooses(tmp_path):
    """Hudi's dictionary rule (parquet-mr's first page, `runner.hudi.parquet_dictionary`) on the
    file's first rows, not Arrow's default of a dictionary on every column until it overflows: the
    distinct record key gets no dictionary page at all, the few-valued columns keep theirs, and
    every column not decoded as an Arrow dictionary has a dictionary exactly when the rule says so."""
    inputs = write_inputs(tmp_path)
    arrow_dictionaries = dictionary_columns(job.merged_schema([s.schema for s in sources(tmp_path, inputs)]),
                                            sources(tmp_path, inputs))
    done = rewrite_group(LocalStorage(str(tmp_path)), GroupRewrite("p", "new-0", inputs), INSTANT, "0-0-0",
                         batch_rows=1500)
    out = tmp_path / done.path
    parquet = pq.ParquetFile(out)
    names = parquet.schema_arrow.names
    assert data_page_encodings(out, "_hoodie_record_key") == {PLAIN}
    assert not parquet.metadata.row_group(0).column(names.index("_hoodie_record_key")).has_dictionary_page
    for column in ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name", "category", "code"):
        assert data_page_encodings(out, column) <= {RLE_DICTIONARY, PLAIN_DICTIONARY}, column
    rows = parquet.read()
    rule = set(parquet_dictionary.dictionary_columns(rows.slice(0, parquet_dictionary.PAGE_ROWS)))
    for column in names:
        expected = column in rule or column in arrow_dictionaries or column == "_hoodie_file_name"
        assert parquet.metadata.row_group(0).column(names.index(column)).has_dictionary_page == expected, column
    assert "amount" in rule  # 4,000 values three times over: the dictionary pays, as parquet-mr finds
    assert rows.num_rows == done.records == 12000


def test_leaves_of_nested_columns_keep_their_dictionary_under_the_inputs_element_names(tmp_path):
    """Nested leaves keep a dictionary (as the writer's rule has it), named as the rewrite writes them
    (the inputs' element names, not Arrow's compliant ones): a name that matched no leaf would
    silently write them plain."""
    (tmp_path / "p").mkdir()
    inputs = []
    for n in range(2):
        rows = 3000
        name = f"f{n}-0_0-1-{n}_2024010{n + 1}000000000.parquet"
        keys = [f"key-{n}-{i:06d}" for i in range(rows)]
        tags = pa.array([["a", "b"][: i % 3] for i in range(rows)], pa.list_(pa.field("array", pa.string())))
        pq.write_table(pa.table({
            "_hoodie_commit_time": [f"2024010{n + 1}000000000"] * rows, "_hoodie_commit_seqno": keys,
            "_hoodie_record_key": keys, "_hoodie_partition_path": ["p"] * rows, "_hoodie_file_name": [name] * rows,
            "tags": tags,
        }), tmp_path / "p" / name, store_schema=False, use_compliant_nested_type=False)
        inputs.append(f"p/{name}")
    done = rewrite_group(LocalStorage(str(tmp_path)), GroupRewrite("p", "new-0", tuple(inputs)), INSTANT, "0-0-0")
    parquet = pq.ParquetFile(tmp_path / done.path)
    leaf = next(i for i in range(len(parquet.schema)) if parquet.schema.column(i).path.startswith("tags."))
    assert parquet.schema.column(leaf).path == "tags.list.array"
    assert parquet.metadata.row_group(0).column(leaf).has_dictionary_page
    assert parquet.read().column("tags").to_pylist() == [["a", "b"][: i % 3] for i in range(3000)] * 2
