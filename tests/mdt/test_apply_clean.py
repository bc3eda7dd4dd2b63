"""Acceptance: `apply` cleans tables that have a metadata table and keeps the MDT in step.

On every fixture with a metadata table: the independent `hudi` reader sees the same latest rows,
every completed instant still reads (a cleaned one may return fewer rows, never NotFound), our MDT
reader agrees with storage, the MDT deltacommit has the clean's instant time and completed first,
and a second plan is in sync.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner.declarations.model import CleanPolicy, CleanPolicyName, FileSizing, SparkSettings, TableDeclaration
from runner.errors import RefusedError
from runner.execute.apply import apply_table
from runner.hudi.instant import Action
from runner.hudi.mdt import records as rec
from runner.hudi.mdt.check import check_metadata_table
from runner.hudi.mdt.keys import column_stats_key
from runner.hudi.mdt.reader import read_metadata_table, read_partition
from runner.hudi.state import read_table_metadata, read_table_state
from runner.plan.model import TableStatus
from runner.planner import plan_one
from runner.storage import storage_for
from tests.conftest import FIXTURES, extract_fixture
from tests.execute.conftest import oracle_snapshot
from tests.mdt.conftest import MDT_IDS

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
VERSIONS_1 = CleanPolicy(CleanPolicyName.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)


def _decl(base: Path, policy: CleanPolicy = VERSIONS_1) -> TableDeclaration:
    return TableDeclaration(name="t", path=str(base), source_file="tables/t.yml", clean=policy,
                            file_sizing=FileSizing(small_file_limit=0))


def _every_instant_reads(base: Path) -> None:
    from hudi import HudiReadOptions, HudiTable

    table = HudiTable(str(base))
    for instant in read_table_metadata(storage_for(str(base))).timeline.completed_writes:
        table.read(HudiReadOptions().with_as_of_timestamp(str(instant.time)))  # raises on NotFound


@pytest.mark.parametrize("fixture", MDT_IDS)
def test_clean_keeps_the_metadata_table_in_step(fixture: str, tmp_path: Path, spark_deleter) -> None:
    base = extract_fixture(FIXTURES / f"{fixture}.zip", tmp_path)
    decl = _decl(base)
    storage = storage_for(str(base))
    before = oracle_snapshot(base)
    planned = plan_one(decl, storage, now=NOW)

    result = apply_table(decl, None, now=NOW, spark_settings=SparkSettings(), deleter_factory=spark_deleter)

    assert result.status in ("success", "in_sync"), result
    assert oracle_snapshot(base) == before
    _every_instant_reads(base)
    state = read_table_state(storage)
    health = check_metadata_table(storage, state)
    assert health.ok, health.to_json()
    assert plan_one(decl, storage, now=NOW).status is TableStatus.IN_SYNC
    if result.status == "success" and planned.clean and not planned.clean.is_empty:
        _assert_recorded(base, planned.clean.files_to_delete)


def _assert_recorded(base: Path, deleted: tuple) -> None:
    storage = storage_for(str(base))
    meta = read_table_metadata(storage)
    (clean,) = meta.timeline.completed(Action.CLEAN)
    mdt = read_metadata_table(storage)
    mirror = next(i for i in mdt.timeline.completed(Action.DELTA_COMMIT) if i.time == clean.time)
    assert mirror.completion_time < clean.completion_time  # MDT first, then the data instant
    if "column_stats" in meta.config.metadata_partitions:
        stats, _ = read_partition(storage, meta, mdt, "column_stats")
        for f in deleted:
            partition, _, name = f.path.rpartition("/")
            key = column_stats_key("_hoodie_commit_time", partition or rec.NON_PARTITIONED_NAME, name)
            if key in stats:  # the file had stats: now a tombstone
                assert stats[key]["ColumnStatsMetadata"]["isDeleted"] is True


F9 = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"


def test_a_pending_mdt_write_is_refused_before_anything_is_deleted(tmp_path: Path) -> None:
    base = extract_fixture(F9, tmp_path)
    (base / ".hoodie/metadata/.hoodie/timeline/20260307170000000.deltacommit.inflight").write_bytes(b"")
    files = sorted(p for p in base.rglob("*.parquet"))
    refused = re.escape("pending or failed write: 20260307170000000.deltacommit.inflight")
    with pytest.raises(RefusedError, match=refused):
        apply_table(_decl(base), None, now=NOW, spark_settings=SparkSettings(), deleter_factory=_no_deletes)
    assert sorted(p for p in base.rglob("*.parquet")) == files


def test_an_index_the_runner_cannot_maintain_is_named_and_refused(tmp_path: Path) -> None:
    base = extract_fixture(F9, tmp_path)
    props = base / ".hoodie/hoodie.properties"
    text = props.read_text().replace("hoodie.table.metadata.partitions=column_stats,",
                                     "hoodie.table.metadata.partitions=column_stats,expr_index_upper_name,")
    props.write_text(text)
    with pytest.raises(RefusedError, match="expr_index_upper_name") as caught:
        apply_table(_decl(base), None, now=NOW, spark_settings=SparkSettings(), deleter_factory=_no_deletes)
    assert "metadata_table: disable" in str(caught.value)


def _no_deletes():
    def delete(storage, paths):
        raise AssertionError(f"nothing may be deleted, got {paths}")

    return delete


def test_a_large_clean_deflates_its_tombstones_faster_and_readers_see_the_same(
        tmp_path: Path, spark_deleter, monkeypatch: pytest.MonkeyPatch) -> None:
    """An HFile of `FAST_GZIP_FROM` cells or more is deflated with ISA-L (`write_hfile(fast=True)`),
    not as Hudi's writers do: other bytes, the same records for every reader. The threshold is
    lowered so that this small clean crosses it."""
    import struct
    import zlib

    from isal import isal_zlib

    import runner.hudi.mdt.writer as mdt_writer
    from runner.hudi.mdt.hfile import (
        DATA_MAGIC,
        FAST_GZIP_LEVEL,
        HEADER_SIZE,
        read_hfile,
        standard_file_info,
        write_hfile,
    )
    from runner.hudi.mdt.logfile import BlockType, read_log_blocks

    monkeypatch.setattr(mdt_writer, "FAST_GZIP_FROM", 1)
    base = extract_fixture(F9, tmp_path)
    decl = _decl(base)
    storage = storage_for(str(base))
    before = oracle_snapshot(base)
    planned = plan_one(decl, storage, now=NOW)
    assert planned.clean is not None and not planned.clean.is_empty

    result = apply_table(decl, None, now=NOW, spark_settings=SparkSettings(), deleter_factory=spark_deleter)

    assert result.status == "success", result
    assert oracle_snapshot(base) == before  # hudi-rs lists through the files partition, ISA-L-deflated here too
    _every_instant_reads(base)
    assert check_metadata_table(storage, read_table_state(storage)).ok
    assert plan_one(decl, storage, now=NOW).status is TableStatus.IN_SYNC
    _assert_recorded(base, planned.clean.files_to_delete)
    (clean,) = read_table_metadata(storage).timeline.completed(Action.CLEAN)
    compared = 0
    for path in (base / ".hoodie" / "metadata").rglob("*.log.*"):
        for block in read_log_blocks(path.read_bytes(), where=str(path)):
            if block.block_type is not BlockType.HFILE_DATA or block.instant_time != str(clean.time):
                continue
            hfile = read_hfile(block.content, where=str(path))
            created = struct.unpack(">q", hfile.file_info[b"hfile.CREATE_TIME_TS"])[0]
            info = [(b"schema", hfile.file_info[b"schema"]), *standard_file_info(hfile.cells, created_ms=created)]
            assert write_hfile(hfile.cells, info, fast=True) == block.content, path
            assert write_hfile(hfile.cells, info) != block.content, path
            # The first data block's deflate stream is ISA-L's, not zlib's at the same level.
            assert block.content[:8] == DATA_MAGIC
            (with_header,) = struct.unpack_from(">I", block.content, HEADER_SIZE - 4)  # header + gzip member
            member = block.content[HEADER_SIZE:with_header]
            payload = zlib.decompress(member, wbits=31)
            assert member[10:-8] == _deflated(isal_zlib, FAST_GZIP_LEVEL, payload) != _deflated(zlib, 1, payload)
            compared += 1
    assert compared > 0


def _deflated(library, level: int, payload: bytes) -> bytes:  # type: ignore[no-untyped-def]
    deflate = library.compressobj(level, library.DEFLATED, -15)
    return deflate.compress(payload) + deflate.flush()


def test_a_large_clean_of_a_version_6_table_writes_hbase_hfiles_deflated_fast_with_valid_checksums(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Version 6 (Hudi 0.14/0.15, HBase's HFile reader): the fast deflate goes into HBase's layout,
    whose blocks carry CRC32C sums of their 16 KiB chunks. The sums are checked against the
    polynomial's definition (not the library that wrote them), the blocks are ISA-L's, and the
    `hudi` reader and ours read the table as before."""
    import struct
    import zlib

    from isal import isal_zlib

    import runner.hudi.mdt.writer as mdt_writer
    from runner.hudi.mdt.hfile import (
        BYTES_PER_CHECKSUM,
        CHECKSUM_CRC32C,
        DATA_MAGIC,
        FAST_GZIP_LEVEL,
        HEADER_SIZE,
        read_hfile,
    )
    from runner.hudi.mdt.logfile import BlockType, read_log_blocks
    from tests.mdt.synthetic import build_with_mdt, latest_rows
    from tests.mdt.test_crc32c import _reference

    monkeypatch.setattr(mdt_writer, "FAST_GZIP_FROM", 1)
    base = Path(build_with_mdt(tmp_path / "t", 6, "COPY_ON_WRITE", True, ("column_stats", "bloom_filters")).path)
    decl = _decl(base)
    storage = storage_for(str(base))
    before = latest_rows(base)
    planned = plan_one(decl, storage, now=NOW)
    assert planned.clean is not None and not planned.clean.is_empty

    result = apply_table(decl, None, now=NOW, spark_settings=SparkSettings(master="local[1]"),
                         deleter_factory=lambda: lambda storage, paths: storage.delete_many(paths))

    assert result.status == "success", result
    assert latest_rows(base) == before
    _every_instant_reads(base)
    assert check_metadata_table(storage, read_table_state(storage)).ok
    assert not any((base / f.path).exists() for f in planned.clean.files_to_delete)
    (clean,) = read_table_metadata(storage).timeline.completed(Action.CLEAN)
    partitions = set()
    for path in (base / ".hoodie" / "metadata").rglob("*.log.*"):
        for block in read_log_blocks(path.read_bytes(), where=str(path)):
            if block.block_type is not BlockType.HFILE_DATA or block.instant_time != str(clean.time):
                continue
            content = block.content
            assert read_hfile(content, where=str(path)).cells  # our reader verifies and decodes it
            # The first data block, HBase's header: checksum type, bytes per checksum, data size with header.
            assert content[:8] == DATA_MAGIC
            kind, per_chunk, with_header = struct.unpack_from(">BII", content, HEADER_SIZE - 9)
            assert (kind, per_chunk) == (CHECKSUM_CRC32C, BYTES_PER_CHECKSUM)
            chunks = range(0, with_header, per_chunk)
            sums = struct.unpack_from(f">{len(chunks)}I", content, with_header)
            assert list(sums) == [_reference(content[i : min(i + per_chunk, with_header)]) for i in chunks]
            member = content[HEADER_SIZE:with_header]
            payload = zlib.decompress(member, wbits=31)
            deflate = isal_zlib.compressobj(FAST_GZIP_LEVEL, isal_zlib.DEFLATED, -15)
            assert member[10:-8] == deflate.compress(payload) + deflate.flush()
            partitions.add(path.parent.name)
    assert {"column_stats", "files"} <= partitions
