"""Hudi log files (`HoodieLogFormat` version 1): a sequence of blocks, each framed by a magic.

    #HUDI# | u64 blockLength | u32 format version (1) | u32 block type
    | u32 header count | (u32 key ordinal, u32 length, UTF-8 value)*
    | u64 content length | content | u32 footer count | footer entries | u64 total block length

`blockLength` counts the bytes after itself up to and including the final total-length field, and
the total length is `blockLength + 6` (apache/hudi `HoodieLogFormatWriter.appendBlocks`,
`HoodieLogFileReader.readBlock`). The metadata table writes one HFILE_DATA block per log file in
table version 8+, and an empty DELETE block when it initializes a partition.

Pure: bytes in, bytes out.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from runner.errors import CorruptMetadataError

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1


class BlockType(enum.IntEnum):
    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC = 6


class HeaderKey(enum.IntEnum):
    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


@dataclass(frozen=True, slots=True)
class LogBlock:
    """One block: its type, header and footer maps (in file order) and raw content."""

    block_type: BlockType
    header: Mapping[HeaderKey, str]
    content: bytes
    footer: Mapping[HeaderKey, str] = field(default_factory=dict)

    @property
    def instant_time(self) -> str:
        return self.header.get(HeaderKey.INSTANT_TIME, "")


def read_log_blocks(data: bytes, *, where: str) -> Iterator[LogBlock]:
    """Decode every block of a log file; `where` names the file in error messages."""
    pos = 0
    while pos < len(data):
        if data[pos : pos + 6] != MAGIC:
            raise _corrupt(where, f"#HUDI# at offset {pos}", repr(data[pos : pos + 6]))
        block, pos = _read_block(data, pos, where)
        yield block


def _read_block(data: bytes, start: int, where: str) -> tuple[LogBlock, int]:
    try:
        (length,) = struct.unpack_from(">Q", data, start + 6)
        end = start + 14 + length
        version, type_code = struct.unpack_from(">II", data, start + 14)
        if version != LOG_FORMAT_VERSION:
            raise _corrupt(where, f"log format version {LOG_FORMAT_VERSION}", f"version {version} at offset {start}")
        header, pos = _read_map(data, start + 22, where)
        (content_len,) = struct.unpack_from(">Q", data, pos)
        content = data[pos + 8 : pos + 8 + content_len]
        footer, pos = _read_map(data, pos + 8 + content_len, where)
        (total,) = struct.unpack_from(">Q", data, pos)
    except struct.error as error:
        raise _corrupt(where, "a complete log block", f"truncated block at offset {start}") from error
    if pos + 8 != end or total != length + 6 or len(content) != content_len:
        raise _corrupt(where, f"block length {length} at offset {start}", f"fields ending at {pos + 8}, total {total}")
    try:
        block_type = BlockType(type_code)
    except ValueError as error:
        raise _corrupt(where, "block type 0-6", f"type {type_code}") from error
    return LogBlock(block_type, header, content, footer), end


def _read_map(data: bytes, pos: int, where: str) -> tuple[dict[HeaderKey, str], int]:
    (count,) = struct.unpack_from(">I", data, pos)
    pos += 4
    entries: dict[HeaderKey, str] = {}
    for _ in range(count):
        key, length = struct.unpack_from(">II", data, pos)
        try:
            entries[HeaderKey(key)] = data[pos + 8 : pos + 8 + length].decode("utf-8")
        except (ValueError, UnicodeDecodeError) as error:
            raise _corrupt(where, "header keys 0-8 with UTF-8 values", f"key {key}") from error
        pos += 8 + length
    return entries, pos


def encode_log_block(block: LogBlock) -> bytes:
    """Frame one block; maps are written in their iteration order (Hudi's is SCHEMA, INSTANT_TIME)."""
    # One join: the content is tens of MB for a large clean's index tombstones, so it is copied once.
    head = struct.pack(">II", LOG_FORMAT_VERSION, block.block_type) + _encode_map(block.header)
    footer = _encode_map(block.footer)
    length = len(head) + 8 + len(block.content) + len(footer) + 8
    return b"".join((MAGIC, struct.pack(">Q", length), head, struct.pack(">Q", len(block.content)), block.content,
                     footer, struct.pack(">Q", length + 6)))


def _encode_map(entries: Mapping[HeaderKey, str]) -> bytes:
    out = bytearray(struct.pack(">I", len(entries)))
    for key, value in entries.items():
        raw = value.encode("utf-8")
        out += struct.pack(">II", key, len(raw)) + raw
    return bytes(out)


def _corrupt(where: str, expected: str, found: str) -> CorruptMetadataError:
    return CorruptMetadataError(
        f"{where}: not a readable Hudi log file: expected {expected}, found {found}", path=where
    )
