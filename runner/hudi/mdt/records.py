"""`HoodieMetadataRecord` values: the Avro payload of every metadata-table HFile cell.

Each cell value is the schemaless Avro binary of one `HoodieMetadataRecord`, written with the schema
carried in its log block's SCHEMA header (and in the HFile's `schema` file-info entry). The schema
changes between Hudi releases, so values are always decoded, and written, with the table's own
schema string, never a packaged copy (apache/hudi `hudi-common/src/main/avro/HoodieMetadata.avsc`).

`type` says which payload field is set (HoodieMetadataPayload):
1 partition list, 2 file list of one partition, 3 column stats, 4 bloom filter, 5 record index,
6 partition stats, 7 secondary index.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable, Mapping
from typing import Any

import fastavro
from fastavro.types import Schema

from runner.errors import CorruptMetadataError

PARTITION_LIST = 1
FILE_LIST = 2
COLUMN_STATS = 3
BLOOM_FILTER = 4
RECORD_INDEX = 5
PARTITION_STATS = 6
SECONDARY_INDEX = 7

# The file-list key of the list of all partitions, and the partition name Hudi uses for the
# root folder of a non-partitioned table.
ALL_PARTITIONS_KEY = "__all_partitions__"
NON_PARTITIONED_NAME = "."

MetadataRecord = dict[str, Any]


class BadRecordSchema(ValueError):
    """A block's HoodieMetadataRecord schema that is not an Avro record schema (the caller names the file)."""


def record_schema_fields(schema_json: str) -> dict[str, Any]:
    """The schema JSON as an Avro record schema object, checked: JSON of a record with a list of
    fields, nested within Python's limits. A log block's header, or an HFile's file info, is bytes
    from storage: a damaged one must fail by name, not with a decoder's traceback.

    Raises:
        BadRecordSchema: what was found instead.
    """
    try:
        parsed = json.loads(schema_json)
    except json.JSONDecodeError as error:
        raise BadRecordSchema(f"the HoodieMetadataRecord schema is not JSON ({error})") from None
    except RecursionError:
        raise BadRecordSchema("the HoodieMetadataRecord schema is JSON nested too deeply to read") from None
    if not isinstance(parsed, dict) or parsed.get("type") != "record" or not isinstance(parsed.get("fields"), list):
        found = type(parsed).__name__ if not isinstance(parsed, dict) else f"type {parsed.get('type')!r}"
        raise BadRecordSchema(f"expected the HoodieMetadataRecord schema as an Avro record with fields, found {found}")
    return parsed


@functools.lru_cache(maxsize=16)
def _schema(schema_json: str) -> Schema:
    parsed = record_schema_fields(schema_json)
    try:
        return fastavro.parse_schema(parsed)
    except RecursionError:
        raise BadRecordSchema("the HoodieMetadataRecord schema nests too deeply to parse") from None
    except Exception as error:  # fastavro's SchemaParseException, UnknownType, and KeyError/TypeError of odd shapes
        raise BadRecordSchema(f"the HoodieMetadataRecord schema is not a valid Avro schema ({error})") from None


def check_record_schema(schema_json: str, *, where: str) -> None:
    """Refuse, naming `where`, a HoodieMetadataRecord schema the records cannot be written with."""
    try:
        _schema(schema_json)
    except BadRecordSchema as error:
        raise CorruptMetadataError(f"{where}: {error}", path=where) from None


def decode_record(schema_json: str, value: bytes, *, where: str, with_names: bool = False) -> MetadataRecord:
    """Decode one cell value with its block's schema; errors name the file.

    `with_names`: values of unions of several records (the column-stats min/max wrappers) come as
    `(record name, record)` pairs, which `encode_record` writes back as the same branch; without
    the name an `IntWrapper` and a `LongWrapper` decode alike.
    """
    try:
        record = fastavro.schemaless_reader(io.BytesIO(value), _schema(schema_json), None,
                                            return_record_name=with_names, return_record_name_override=with_names)
    except (ValueError, EOFError, IndexError, TypeError) as error:  # BadRecordSchema is a ValueError
        raise CorruptMetadataError(
            f"{where}: a metadata-table record does not decode with the block's HoodieMetadataRecord schema: {error}",
            path=where,
        ) from error
    if not isinstance(record, dict) or "type" not in record:
        raise CorruptMetadataError(
            f"{where}: expected a HoodieMetadataRecord with a `type`, found {record!r:.80}", path=where
        )
    return record


def encode_record(schema_json: str, record: Mapping[str, Any]) -> bytes:
    """Encode a record with the table's schema; fields it leaves out take the schema's defaults."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _schema(schema_json), dict(record))
    return out.getvalue()


def file_list_record(files: Mapping[str, tuple[int, bool]], *, record_type: int = FILE_LIST) -> MetadataRecord:
    """A type-1/2 record: file (or partition) name -> (size, isDeleted)."""
    return {
        "key": "",
        "type": record_type,
        "filesystemMetadata": {name: {"size": size, "isDeleted": deleted} for name, (size, deleted) in files.items()},
    }


def bloom_filter_record(type_code: str, timestamp: str, serialized: bytes, *, deleted: bool = False) -> MetadataRecord:
    """A type-4 record (`HoodieMetadataPayload.createBloomFilterMetadataRecord`): the filter's type
    code, the instant that wrote it, the filter as `serializeToString()` bytes, and `isDeleted`."""
    return {
        "key": "",
        "type": BLOOM_FILTER,
        "BloomFilterMetadata": {"type": type_code, "timestamp": timestamp, "bloomFilter": serialized,
                                "isDeleted": deleted},
    }


def file_entries(record: Mapping[str, Any]) -> dict[str, tuple[int, bool]]:
    """The (size, isDeleted) map of a type-1/2 record."""
    entries = record.get("filesystemMetadata") or {}
    return {name: (int(info["size"]), bool(info["isDeleted"])) for name, info in entries.items()}


def avro_length(value: int) -> bytes:
    """Avro's zig-zag varint of a non-negative length (the head of a string or bytes)."""
    value <<= 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string_template(schema_json: str, build: Callable[[str, str], MetadataRecord]) -> tuple[bytes, bytes, bytes]:
    """(head, mid, tail) such that `head + avro_string(x) + mid + avro_string(y) + tail` is the
    encoding of `build(x, y)`: a fast path for records that differ only in two string fields.

    A clean of 100,000 files writes 16 column-stats tombstones per file; encoding each through
    fastavro costs ~100 µs, splicing the strings into a template well under 1 µs.
    """
    first, second = "\x01first-marker\x01", "\x02second-marker\x02"
    encoded = encode_record(schema_json, build(first, second))
    a, b = avro_string(first), avro_string(second)
    i, j = encoded.find(a), encoded.find(b)
    if i < 0 or j < i or encoded.count(a) != 1 or encoded.count(b) != 1:
        raise ValueError("string_template needs the first marker before the second, each once")
    return encoded[:i], encoded[i + len(a) : j], encoded[j + len(b) :]


def avro_string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return avro_length(len(raw)) + raw


def encode_file_list(
    schema_json: str, files: Mapping[str, tuple[int, bool]], *, record_type: int = FILE_LIST
) -> bytes:
    """`encode_record(schema_json, file_list_record(files, record_type=...))`, spliced from a
    template: a clean of 100,000 files lists every one of them, and fastavro takes ~10 µs a name.

    fastavro writes a non-empty map as one block: its count, the entries, then 0.
    """
    head, tail = _file_list_template(schema_json, record_type)
    if not files:
        return head + b"\x00" + tail
    infos: dict[tuple[int, bool], bytes] = {}
    parts = [head, avro_length(len(files))]  # the count has avro_length's zig-zag encoding
    heads = _SHORT_LENGTHS  # a file name's length prefix by table, not by a varint loop per name
    for name, info in files.items():
        encoded = infos.get(info)
        if encoded is None:
            encoded = infos[info] = _file_info(schema_json, record_type, info)
        raw = name.encode("utf-8")
        size = len(raw)
        parts += (heads[size] if size < len(heads) else avro_length(size), raw, encoded)
    parts += (b"\x00", tail)
    return b"".join(parts)


# `avro_length` of every length a file name has in practice (Hudi file names are ~60-120 bytes).
_SHORT_LENGTHS = tuple(avro_length(n) for n in range(1024))


_MARKER = "\x01file-list-marker\x01"


@functools.lru_cache(maxsize=16)
def _file_list_template(schema_json: str, record_type: int) -> tuple[bytes, bytes]:
    """(head, tail) around the map of a file-list record: the empty map is the single byte 0."""
    empty = encode_record(schema_json, file_list_record({}, record_type=record_type))
    one = encode_record(schema_json, file_list_record({_MARKER: (0, False)}, record_type=record_type))
    entry = avro_length(1) + avro_string(_MARKER)
    at = one.find(entry)
    if at < 0 or one.count(entry) != 1 or empty[at : at + 1] != b"\x00" or empty[:at] != one[:at]:
        raise ValueError("the schema's file-list record does not encode as head + map + tail")
    return empty[:at], empty[at + 1 :]


@functools.lru_cache(maxsize=1024)
def _file_info(schema_json: str, record_type: int, info: tuple[int, bool]) -> bytes:
    """The encoded HoodieMetadataFileInfo of one map entry."""
    head, tail = _file_list_template(schema_json, record_type)
    one = encode_record(schema_json, file_list_record({_MARKER: info}, record_type=record_type))
    prefix = head + avro_length(1) + avro_string(_MARKER)
    suffix = b"\x00" + tail
    if not (one.startswith(prefix) and one.endswith(suffix)):
        raise ValueError("the schema's file-list record does not encode as head + map + tail")
    return one[len(prefix) : len(one) - len(suffix)]
