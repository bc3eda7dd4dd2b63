"""The resize task streams: bounded row groups, the same content as one large row group, never an
overwritten target, and a crash mid-stream that leaves only a temporary file the next apply removes."""

from __future__ import annotations

import glob
import random
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runner.execute.resize import finish_pending_resize
from runner.execute.resize_job import GroupRewrite, rewrite_group
from runner.hudi import bloom, footer
from runner.hudi.state import read_table_metadata
from runner.storage import AlreadyExists, LocalStorage, storage_for
from tests.execute.resize_crash import kill_group_task
from tests.execute.test_resize import clock, plan, snapshot, v6_small  # noqa: F401 - v6_small is a fixture
from tests.s3 import S3Server, upload_tree

INSTANT = "20240105000000000"
OUTPUT = f"p/new-0_0-0-0_{INSTANT}.parquet"


def write_inputs(root: Path, files: int = 3, rows: int = 3000) -> tuple[str, ...]:
    """`files` Hudi-like base files in partition `p`, older to newer, snappy, with a decimal and a list."""
    (root / "p").mkdir(parents=True)
    paths = []
    for n in range(files):
        name = f"f{n}-0_0-1-{n}_2024010{n + 1}000000000.parquet"
        keys = [f"key-{n}-{i:06d}" for i in range(rows)]
        rng = random.Random(n)
        table = pa.table({
            "_hoodie_commit_time": [f"2024010{n + 1}000000000"] * rows,
            "_hoodie_commit_seqno": [f"2024010{n + 1}000000000_0_{i}" for i in range(rows)],
            "_hoodie_record_key": keys,
            "_hoodie_partition_path": ["p"] * rows,
            "_hoodie_file_name": [name] * rows,
            "amount": pa.array([i * 7 % 1000 for i in range(rows)], pa.decimal128(10, 2)),
            "tags": [[f"t{i % 5}", "x"] for i in range(rows)],
            "payload": [f"{rng.getrandbits(96):024x}" for _ in range(rows)],
        })
        pq.write_table(table, root / "p" / name, compression="snappy", store_schema=False)
        paths.append(f"p/{name}")
    return tuple(paths)


def expected_rows(root: Path, inputs: tuple[str, ...], name: str) -> list[dict[str, object]]:
    """The inputs newest first, each row with the new file name: what Hudi's clustering writes."""
    tables = [pq.read_table(root / path) for path in reversed(inputs)]
    rows = pa.concat_tables(tables).to_pylist()
    return [row | {"_hoodie_file_name": name} for row in rows]


def test_a_group_larger_than_the_buffer_is_written_in_bounded_row_groups_with_the_same_content(tmp_path):
    inputs = write_inputs(tmp_path / "streamed")
    write_inputs(tmp_path / "whole")
    group = GroupRewrite("p", "new-0", inputs)

    streamed = rewrite_group(LocalStorage(str(tmp_path / "streamed")), group, INSTANT, "0-0-0",
                             batch_rows=500, buffer_bytes=64 * 1024)
    whole = rewrite_group(LocalStorage(str(tmp_path / "whole")), group, INSTANT, "0-0-0")

    small = pq.ParquetFile(tmp_path / "streamed" / streamed.path)
    large = pq.ParquetFile(tmp_path / "whole" / whole.path)
    # the default buffer takes these 9,000 rows in one row group; a 64 KiB buffer needs several
    assert large.metadata.num_row_groups == 1
    assert small.metadata.num_row_groups > 3
    decoded_per_row = pq.read_table(tmp_path / "whole" / whole.path).nbytes / 9000
    most = max(small.metadata.row_group(i).num_rows for i in range(small.metadata.num_row_groups))
    assert most <= 64 * 1024 / decoded_per_row + 500  # the buffer, overshot by at most one batch

    name = OUTPUT.rsplit("/", 1)[-1]
    assert small.read().to_pylist() == large.read().to_pylist() == expected_rows(tmp_path / "streamed", inputs, name)
    assert small.schema.equals(large.schema)
    assert small.schema.equals(pq.ParquetFile(tmp_path / "streamed" / inputs[0]).schema)  # same Parquet types
    assert small.metadata.metadata == large.metadata.metadata
    keys = pa.concat_tables([pq.read_table(tmp_path / "streamed" / p) for p in reversed(inputs)])["_hoodie_record_key"]
    footer = small.metadata.metadata
    assert footer[b"org.apache.hudi.bloomfilter"].decode() == bloom.serialize(keys.combine_chunks())
    assert (footer[b"hoodie_min_record_key"], footer[b"hoodie_max_record_key"]) == (b"key-0-000000", b"key-2-002999")
    codecs = {small.metadata.row_group(r).column(c).compression
              for r in range(small.metadata.num_row_groups) for c in range(small.metadata.num_columns)}
    assert codecs == {"SNAPPY"}
    assert (streamed.records, streamed.input_files) == (9000, 3)
    assert streamed.size == (tmp_path / "streamed" / streamed.path).stat().st_size
    assert streamed.input_bytes == sum((tmp_path / "streamed" / p).stat().st_size for p in inputs)


def test_an_existing_target_is_never_overwritten(tmp_path):
    inputs = write_inputs(tmp_path)
    (tmp_path / OUTPUT).write_bytes(b"someone else's file")
    before = sorted(p.name for p in (tmp_path / "p").iterdir())

    with pytest.raises(AlreadyExists, match="it already exists"):
        rewrite_group(LocalStorage(str(tmp_path)), GroupRewrite("p", "new-0", inputs), INSTANT, "0-0-0")

    assert (tmp_path / OUTPUT).read_bytes() == b"someone else's file"
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == before


@pytest.mark.s3
def test_on_s3_the_stream_is_sent_as_one_object_with_the_same_content(tmp_path, s3_server: S3Server, s3_bucket: str):
    inputs = write_inputs(tmp_path / "t")
    upload_tree(tmp_path / "t", s3_bucket, "t", s3_server)
    storage = storage_for(f"s3://{s3_bucket}/t", options=s3_server.options())

    done = rewrite_group(storage, GroupRewrite("p", "new-0", inputs), INSTANT, "0-0-0", batch_rows=1000)

    written = pq.ParquetFile(pa.BufferReader(storage.read(done.path)))
    assert written.read().to_pylist() == expected_rows(tmp_path / "t", inputs, OUTPUT.rsplit("/", 1)[-1])
    assert done.size == len(storage.read(done.path)) and done.records == 9000
    with pytest.raises(AlreadyExists):
        rewrite_group(storage, GroupRewrite("p", "new-0", inputs), INSTANT, "0-0-0")


CRASHING_TASK = textwrap.dedent("""
    import sys
    from runner.execute.resize_job import GroupRewrite, rewrite_group
    from runner.storage import storage_for

    base, partition, file_id, instant, *inputs = sys.argv[1:]
    group = GroupRewrite(partition, file_id, tuple(inputs))
    rewrite_group(storage_for(base), group, instant, "0-9-9", batch_rows=500, buffer_bytes=64 * 1024)
""")


def test_a_crash_mid_stream_leaves_only_a_temporary_file_which_the_next_apply_removes(
        v6_small, spark, tmp_path):  # noqa: F811
    before = snapshot(v6_small)
    storage, state, step = plan(v6_small)
    group = step.groups[0]
    killed = kill_group_task(v6_small, storage, state.metadata, spark, step, group,
                             script=CRASHING_TASK, workdir=tmp_path)

    assert (killed.folder / killed.left).stat().st_size > 0  # a row group was written before the crash
    assert snapshot(v6_small) == before

    outcome = finish_pending_resize(storage, read_table_metadata(storage), spark=spark, clock=clock)

    assert outcome is not None and outcome.instants == (str(killed.pending.time),)
    assert f"{group.partition}/{killed.left}" in outcome.partial_files_deleted
    assert not list(v6_small.rglob("*.tmp"))
    assert snapshot(v6_small) == before
    assert not read_table_metadata(storage).timeline.pending()


def test_spark_reads_a_file_of_several_row_groups_as_written(tmp_path, spark):
    inputs = write_inputs(tmp_path)
    done = rewrite_group(LocalStorage(str(tmp_path)), GroupRewrite("p", "new-0", inputs), INSTANT, "0-0-0",
                         batch_rows=500, buffer_bytes=64 * 1024)
    assert pq.ParquetFile(tmp_path / done.path).metadata.num_row_groups > 3

    frame = spark.read.parquet(str(tmp_path / done.path))
    read = [(r["_hoodie_record_key"], r["_hoodie_file_name"], r["tags"]) for r in frame.collect()]

    expected = [(r["_hoodie_record_key"], r["_hoodie_file_name"], r["tags"])
                for r in expected_rows(tmp_path, inputs, done.path.rsplit("/", 1)[-1])]
    assert sorted(read) == sorted(expected) and len(read) == 9000


def test_a_hudi_file_without_meta_fields_is_rewritten_without_a_key_footer(hudi_fixture, tmp_path):
    """`hoodie.populate.meta.fields=false`: Hudi writes the meta columns null and no key footer, so
    the rewrite writes none either (a bloom filter of null keys is not something Hudi can build)."""
    base = hudi_fixture("sample_table/cow/v6_simplekeygen_hivestyle_no_metafields")
    (path,) = glob.glob(f"{base}/byteField=10/*.parquet")
    relative = f"byteField=10/{Path(path).name}"
    written = rewrite_group(LocalStorage(str(base)), GroupRewrite("byteField=10", "n-0", (relative,)),
                            "20990101000000000", "0-0-0")
    out = pq.ParquetFile(base / written.path)
    assert out.read().drop_columns(["_hoodie_file_name"]).to_pylist() == \
        pq.read_table(path).drop_columns(["_hoodie_file_name"]).to_pylist()
    assert not {footer.BLOOM_FILTER.encode(), footer.MIN_RECORD_KEY.encode()} & set(out.metadata.metadata or {})
