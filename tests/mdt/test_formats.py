"""HFile and log-file codecs against every metadata-table file Hudi wrote in the fixtures."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from runner.errors import CorruptMetadataError
from runner.hudi.mdt.hfile import CHECKSUM_CRC32C, CHECKSUM_NULL, read_hfile, standard_file_info, write_hfile
from runner.hudi.mdt.logfile import BlockType, HeaderKey, LogBlock, encode_log_block, read_log_blocks
from tests.mdt.conftest import MDT_IDS, mdt_files


def _log_files(base: Path) -> list[Path]:
    return [p for p in mdt_files(base) if ".log." in p.name]


@pytest.mark.parametrize("fixture", MDT_IDS)
def test_every_log_file_decodes_and_reencodes_byte_for_byte(mdt_tables: dict[str, Path], fixture: str) -> None:
    logs = _log_files(mdt_tables[fixture])
    assert logs
    for path in logs:
        data = path.read_bytes()
        blocks = list(read_log_blocks(data, where=str(path)))
        assert blocks, path
        assert b"".join(encode_log_block(b) for b in blocks) == data, path


@pytest.mark.parametrize("fixture", MDT_IDS)
def test_every_hfile_in_the_metadata_table_reads(mdt_tables: dict[str, Path], fixture: str) -> None:
    cells = 0
    for path in mdt_files(mdt_tables[fixture]):
        if path.name.endswith(".hfile"):
            hfile = read_hfile(path.read_bytes(), where=str(path))
        elif ".log." in path.name:
            blocks = [
                b for b in read_log_blocks(path.read_bytes(), where=str(path)) if b.block_type is BlockType.HFILE_DATA
            ]
            if not blocks:
                continue
            hfile = read_hfile(blocks[0].content, where=str(path))
            assert blocks[0].header[HeaderKey.SCHEMA].encode() == hfile.file_info[b"schema"]
        else:
            continue
        rows = [row for row, _ in hfile.cells]
        assert rows == sorted(set(rows)), path
        last = rows[-1] if rows else b""
        # Hudi 1.1 stores the row; Hudi 1.0 (HBase's writer) the whole key, row first
        # (HBase's writer leaves LASTKEY out of an empty HFile)
        assert hfile.file_info.get(b"hfile.LASTKEY", b"\0\0")[2 : 2 + len(last)] == last, path
        cells += len(rows)
    assert cells > 0


@pytest.mark.parametrize("fixture", MDT_IDS)
def test_hudi_1_1_log_blocks_reencode_byte_identically(mdt_tables: dict[str, Path], fixture: str) -> None:
    """Hudi 1.1's native writer (checksum type NULL) is what write_hfile reproduces exactly."""
    compared = 0
    for path in _log_files(mdt_tables[fixture]):
        for block in read_log_blocks(path.read_bytes(), where=str(path)):
            if block.block_type is not BlockType.HFILE_DATA:
                continue
            hfile = read_hfile(block.content, where=str(path))
            if hfile.checksum_type != CHECKSUM_NULL:
                continue  # Hudi 1.0 wrote these with HBase's writer; read-only here
            created = struct.unpack(">q", hfile.file_info[b"hfile.CREATE_TIME_TS"])[0]
            info = [(b"schema", hfile.file_info[b"schema"]), *standard_file_info(hfile.cells, created_ms=created)]
            assert write_hfile(hfile.cells, info) == block.content, path
            compared += 1
    if fixture.startswith("quickstart_trips_table/mor/avro/v8"):
        assert compared == 0
    else:
        assert compared > 0


def test_hudi_1_0_log_blocks_reencode_byte_identically_in_hbase_layout(mdt_tables: dict[str, Path]) -> None:
    """Hudi 1.0 wrote log blocks with HBase's HFile writer, as Hudi 0.14/0.15 (table version 6)
    did; `hbase=True` reproduces them exactly, so 0.x's HBase reader reads what the runner writes."""
    compared = 0
    for path in _log_files(mdt_tables["quickstart_trips_table/mor/avro/v8_trips_8i3u1d"]):
        for block in read_log_blocks(path.read_bytes(), where=str(path)):
            if block.block_type is not BlockType.HFILE_DATA:
                continue
            hfile = read_hfile(block.content, where=str(path))
            assert hfile.checksum_type == CHECKSUM_CRC32C
            info = [(b"schema", hfile.file_info[b"schema"]), *standard_file_info(hfile.cells, created_ms=0, hbase=True)]
            assert write_hfile(hfile.cells, info, checksum_type=CHECKSUM_CRC32C, hbase=True) == block.content, path
            compared += 1
    assert compared == 35


@pytest.mark.parametrize("hbase", [False, True])
def test_hbase_layout_round_trips_across_many_blocks(hbase: bool) -> None:
    cells = [(f"key-{i:06d}".encode(), bytes([i % 251]) * (i % 300)) for i in range(3000)]
    info = [(b"schema", b"{}"), *standard_file_info(cells, created_ms=0, hbase=hbase)]
    data = write_hfile(cells, info, checksum_type=CHECKSUM_CRC32C, block_size=4096, hbase=hbase)
    hfile = read_hfile(data, where="mem")
    assert list(hfile.cells) == cells
    # HBase's comparator parses index keys and LASTKEY as whole KeyValue keys: row, family, ts, type
    whole_key = b"\x00" + b"\x7f" + b"\xff" * 7 + b"\x04" if hbase else b""
    assert hfile.file_info[b"hfile.LASTKEY"] == b"\x00\x0a" + cells[-1][0] + whole_key


def test_hbase_layout_takes_long_first_keys_as_hadoop_vints() -> None:
    # HBase writes index key lengths with Hadoop's writeVInt (0x8f 0xc8 for 200), which its reader
    # and hudi-io's read; long partition paths make such keys.
    cells = [(("p" * 300 + f"/{i:04d}").encode(), b"v" * 200) for i in range(400)]
    info = [(b"schema", b"{}"), *standard_file_info(cells, created_ms=0, hbase=True)]
    data = write_hfile(cells, info, checksum_type=CHECKSUM_CRC32C, block_size=4096, hbase=True)
    assert list(read_hfile(data, where="mem").cells) == cells
    with pytest.raises(ValueError, match="too long"):
        write_hfile(cells, info, block_size=4096)


@pytest.mark.parametrize("checksum", [CHECKSUM_NULL, CHECKSUM_CRC32C])
def test_write_then_read_round_trips_across_many_blocks(checksum: int) -> None:
    cells = [(f"key-{i:06d}".encode(), bytes([i % 251]) * (i % 300)) for i in range(3000)]
    info = [(b"schema", b"{}"), *standard_file_info(cells, created_ms=1)]
    data = write_hfile(cells, info, checksum_type=checksum, block_size=4096)
    hfile = read_hfile(data, where="mem")
    assert list(hfile.cells) == cells
    assert hfile.file_info[b"schema"] == b"{}"
    assert hfile.checksum_type == checksum


def test_empty_hfile_round_trips() -> None:
    data = write_hfile([], standard_file_info([], created_ms=0))
    assert read_hfile(data, where="mem").cells == ()


def test_writer_refuses_unsorted_or_duplicate_keys() -> None:
    with pytest.raises(ValueError, match="strictly ascending"):
        write_hfile([(b"b", b""), (b"a", b"")], [])
    with pytest.raises(ValueError, match="strictly ascending"):
        write_hfile([(b"a", b""), (b"a", b"")], [])


def test_log_block_round_trip_keeps_header_order_and_footer() -> None:
    block = LogBlock(
        BlockType.HFILE_DATA,
        {HeaderKey.SCHEMA: "s", HeaderKey.INSTANT_TIME: "20260101000000000"},
        b"xyz",
        {HeaderKey.BLOCK_IDENTIFIER: "1"},
    )
    data = encode_log_block(block) * 2
    assert list(read_log_blocks(data, where="mem")) == [block, block]


def test_corrupt_inputs_name_the_file() -> None:
    with pytest.raises(CorruptMetadataError, match=re.escape("some/file.log")):
        list(read_log_blocks(b"#HUDX#" + b"\0" * 40, where="some/file.log"))
    good = encode_log_block(LogBlock(BlockType.DELETE, {}, b"\0\0\0\3\0\0\0\1\0"))
    with pytest.raises(CorruptMetadataError, match="truncated"):
        list(read_log_blocks(good[:-5], where="x.log"))
    with pytest.raises(CorruptMetadataError, match=re.escape("x.hfile: not a readable HFile")):
        read_hfile(b"\0" * 5000, where="x.hfile")


def test_a_truncated_block_is_a_clear_error() -> None:
    cells = [(b"k%03d" % i, b"v" * 50) for i in range(50)]
    data = bytearray(write_hfile(cells, standard_file_info(cells, created_ms=0)))
    data[40:44] = b"\xff\xff\xff\xff"  # corrupt the data block's compressed bytes
    with pytest.raises(CorruptMetadataError, match=re.escape("broken.hfile")):
        read_hfile(bytes(data), where="broken.hfile")
