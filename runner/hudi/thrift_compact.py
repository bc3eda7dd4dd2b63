"""A lossless reader and writer for Thrift's compact protocol, enough for a Parquet footer.

A Parquet footer (`FileMetaData`) is a Thrift struct in the compact protocol. Binary-copy resize
rewrites a few of its fields (offsets, row counts, key-value metadata) and must carry every other
field through unchanged, including fields newer than this code knows (size statistics, geospatial
statistics, ...). So structs decode into a generic form, field id → typed value, that encodes back
to the same bytes; callers look up the fields they understand by their ids in the Parquet spec
(`parquet.thrift`).

Compact protocol, as specified by Apache Thrift (`doc/specs/thrift-compact-protocol.md`):
- a field header is one byte, the field id delta from the previous field (1..15) in the high
  nibble and the type in the low one; a delta of 0 means the id follows as a zigzag varint;
- booleans live in the field header's type (1 true, 2 false), as one byte 1/2 inside collections;
- integers are zigzag varints (i8 a plain byte), doubles 8 bytes little-endian, binary a varint
  length then the bytes;
- a list/set header holds its size in the high nibble (15: a varint follows) and the element type
  in the low one; a map has a varint size, then (if not empty) one byte of key and value types.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TypeAlias

from runner.errors import CorruptMetadataError

STOP = 0
TRUE = 1
FALSE = 2
BYTE = 3
I16 = 4
I32 = 5
I64 = 6
DOUBLE = 7
BINARY = 8
LIST = 9
SET = 10
MAP = 11
STRUCT = 12

_INTEGERS = frozenset({BYTE, I16, I32, I64})
# Nesting Parquet never comes near; a bound keeps a corrupt footer from recursing without end.
_MAX_DEPTH = 64


@dataclass(slots=True)
class ThriftList:
    """A list or set: its element type and values (`kind` is LIST or SET)."""

    element_type: int
    values: list[Value]
    kind: int = LIST


@dataclass(slots=True)
class ThriftMap:
    key_type: int
    value_type: int
    entries: list[tuple[Value, Value]]


@dataclass(slots=True)
class Struct:
    """A struct's fields in wire order: (field id, type, value); booleans have type TRUE."""

    fields: list[tuple[int, int, Value]] = field(default_factory=list)

    def get(self, field_id: int) -> Value | None:
        for fid, _, value in self.fields:
            if fid == field_id:
                return value
        return None

    def has(self, field_id: int) -> bool:
        for fid, _, _ in self.fields:  # a loop, not `any` over a generator: called per page and chunk
            if fid == field_id:
                return True
        return False

    def get_int(self, field_id: int) -> int | None:
        value = self.get(field_id)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def get_struct(self, field_id: int) -> Struct | None:
        value = self.get(field_id)
        return value if isinstance(value, Struct) else None

    def get_list(self, field_id: int) -> list[Value]:
        value = self.get(field_id)
        return value.values if isinstance(value, ThriftList) else []

    def put(self, field_id: int, kind: int, value: Value) -> None:
        """Replace the field's value, or add the field in id order."""
        for i, (fid, _, _) in enumerate(self.fields):
            if fid == field_id:
                self.fields[i] = (field_id, kind, value)
                return
        self.fields.append((field_id, kind, value))
        self.fields.sort(key=lambda f: f[0])

    def drop(self, *field_ids: int) -> None:
        self.fields = [f for f in self.fields if f[0] not in field_ids]


Value: TypeAlias = bool | int | float | bytes | ThriftList | ThriftMap | Struct
Buffer: TypeAlias = bytes | memoryview


def decode_struct(data: Buffer, *, what: str, offset: int = 0) -> tuple[Struct, int]:
    """Decode one struct starting at `offset` in `data` (bytes, or a view of a buffer); returns it and
    the offset after it.

    Raises:
        CorruptMetadataError: the bytes are not a compact-protocol struct (`what` names the file).
    """
    try:
        return _struct_at(data, offset, 0)
    except (IndexError, struct.error, ValueError) as error:
        raise CorruptMetadataError(f"{what}: the Parquet footer is not valid Thrift ({error})", path=what) from error


def encode_struct(value: Struct) -> bytes:
    out = bytearray()
    _write_struct(out, value)
    return bytes(out)


# A struct field as `scan_struct` gives it: id, type, value (integers and booleans; None for the
# other types) and the span of its encoded value in the buffer (empty for a boolean, which lives
# in the field header).
ScannedField: TypeAlias = tuple[int, int, "int | bool | None", int, int]


def scan_struct(data: Buffer, *, what: str, offset: int = 0) -> tuple[list[ScannedField], int]:
    """The fields of the struct at `offset`, without building its nested values (see
    `ScannedField`), and the offset after it: for a caller that reads a few integer fields of
    many small structs (page headers) and splices bytes rather than re-encoding them; a nested
    struct's own fields are scanned from its span in turn.

    Raises:
        CorruptMetadataError: the bytes are not a compact-protocol struct (`what` names the file).
    """
    try:
        return _scanned_at(data, offset)
    except (IndexError, ValueError) as error:
        raise CorruptMetadataError(f"{what}: the Parquet footer is not valid Thrift ({error})", path=what) from error


def zigzag_varint(n: int) -> bytes:
    """An i16/i32/i64 value as the compact protocol encodes it."""
    out = bytearray()
    _zigzag(out, n)
    return bytes(out)


# The decoder is a few plain functions passing the position along rather than a reader object, and
# tests types with chains of `==` (cheaper than `in` on a set) in order of frequency: a resize group
# decodes and encodes footers of a hundred files and more, and attribute lookups and method calls
# per byte were most of that time.


def _varint_at(data: Buffer, pos: int) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:
        return b, pos + 1
    result, shift = b & 0x7F, 7
    while True:
        pos += 1
        b = data[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 70:
            raise ValueError(f"varint too long at byte {pos}")


def _value_at(data: Buffer, pos: int, kind: int, depth: int) -> tuple[Value, int]:
    if kind == I32 or kind == I64 or kind == I16:
        b = data[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        n, pos = _varint_at(data, pos)
        return (n >> 1) ^ -(n & 1), pos
    if kind == BINARY:
        size, pos = _varint_at(data, pos)
        end = pos + size
        if end > len(data):
            raise ValueError(f"binary of {size} bytes runs past the end at byte {pos}")
        return bytes(data[pos:end]), end  # a copy only when `data` is a view (of bytes, none)
    if kind == STRUCT:
        return _struct_at(data, pos, depth + 1)
    if kind == LIST or kind == SET:
        header = data[pos]
        pos += 1
        size, element = header >> 4, header & 0x0F
        if size == 15:
            size, pos = _varint_at(data, pos)
        values: list[Value] = []
        for _ in range(size):
            item, pos = _value_at(data, pos, element, depth + 1)
            values.append(item)
        return ThriftList(element, values, kind), pos
    if kind == TRUE or kind == FALSE:
        return data[pos] == TRUE, pos + 1
    if kind == BYTE:
        b = data[pos]
        return (b - 256 if b > 127 else b), pos + 1
    if kind == DOUBLE:
        (number,) = struct.unpack_from("<d", data, pos)
        return float(number), pos + 8
    if kind == MAP:
        size, pos = _varint_at(data, pos)
        if size == 0:
            return ThriftMap(0, 0, []), pos
        types = data[pos]
        pos += 1
        key_type, value_type = types >> 4, types & 0x0F
        entries: list[tuple[Value, Value]] = []
        for _ in range(size):
            key, pos = _value_at(data, pos, key_type, depth + 1)
            item, pos = _value_at(data, pos, value_type, depth + 1)
            entries.append((key, item))
        return ThriftMap(key_type, value_type, entries), pos
    raise ValueError(f"unknown Thrift type {kind} at byte {pos}")


def _struct_at(data: Buffer, pos: int, depth: int) -> tuple[Struct, int]:
    if depth > _MAX_DEPTH:
        raise ValueError("structs nested too deeply")
    fields: list[tuple[int, int, Value]] = []
    last = 0
    while True:
        header = data[pos]
        pos += 1
        if header == STOP:
            return Struct(fields), pos
        delta, kind = header >> 4, header & 0x0F
        if delta:
            fid = last + delta
        else:
            n, pos = _varint_at(data, pos)
            fid = (n >> 1) ^ -(n & 1)
        if kind == TRUE or kind == FALSE:
            fields.append((fid, TRUE, kind == TRUE))
        else:
            value, pos = _value_at(data, pos, kind, depth)
            fields.append((fid, kind, value))
        last = fid


def _scanned_at(data: Buffer, pos: int) -> tuple[list[ScannedField], int]:
    # The field header is read as in `_struct_at`, inline in both: a call per field would cost more
    # than reading it.
    fields: list[ScannedField] = []
    last = 0
    while True:
        header = data[pos]
        pos += 1
        if header == STOP:
            return fields, pos
        delta, kind = header >> 4, header & 0x0F
        if delta:
            fid = last + delta
        else:
            n, pos = _varint_at(data, pos)
            fid = (n >> 1) ^ -(n & 1)
        if kind == TRUE or kind == FALSE:
            fields.append((fid, TRUE, kind == TRUE, pos, pos))
        elif kind == I32 or kind == I64 or kind == I16:
            n, end = _varint_at(data, pos)
            fields.append((fid, kind, (n >> 1) ^ -(n & 1), pos, end))
            pos = end
        else:
            end = _skipped(data, pos, kind, 0)
            fields.append((fid, kind, None, pos, end))
            pos = end
        last = fid


def _skipped(data: Buffer, pos: int, kind: int, depth: int) -> int:
    """The offset after a value of `kind` at `pos`, walking it without building it."""
    if depth > _MAX_DEPTH:
        raise ValueError("structs nested too deeply")
    if kind == I32 or kind == I64 or kind == I16:
        while data[pos] >= 0x80:
            pos += 1
        return pos + 1
    if kind == BINARY:
        size, pos = _varint_at(data, pos)
        if pos + size > len(data):
            raise ValueError(f"binary of {size} bytes runs past the end at byte {pos}")
        return pos + size
    if kind == STRUCT:
        while True:
            header = data[pos]
            pos += 1
            if header == STOP:
                return pos
            field_kind = header & 0x0F
            if not header >> 4:
                _, pos = _varint_at(data, pos)
            if field_kind != TRUE and field_kind != FALSE:
                pos = _skipped(data, pos, field_kind, depth + 1)
    if kind == LIST or kind == SET:
        header = data[pos]
        pos += 1
        size, element = header >> 4, header & 0x0F
        if size == 15:
            size, pos = _varint_at(data, pos)
        for _ in range(size):
            pos = _skipped(data, pos, element, depth + 1)
        return pos
    if kind == TRUE or kind == FALSE or kind == BYTE:
        return pos + 1
    if kind == DOUBLE:
        if pos + 8 > len(data):
            raise ValueError(f"a double runs past the end at byte {pos}")
        return pos + 8
    if kind == MAP:
        size, pos = _varint_at(data, pos)
        if size == 0:
            return pos
        types = data[pos]
        pos += 1
        for _ in range(size):
            pos = _skipped(data, pos, types >> 4, depth + 1)
            pos = _skipped(data, pos, types & 0x0F, depth + 1)
        return pos
    raise ValueError(f"unknown Thrift type {kind} at byte {pos}")


def _varint(out: bytearray, n: int) -> None:
    while True:
        if n < 0x80:
            out.append(n)
            return
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63) if n < 0 else n << 1)


def _write_value(out: bytearray, kind: int, value: Value) -> None:
    if kind == I32 or kind == I64 or kind == I16:
        assert isinstance(value, int)
        n = (value << 1) ^ (value >> 63) if value < 0 else value << 1
        if n < 0x80:
            out.append(n)
        else:
            _varint(out, n)
    elif kind == BINARY:
        assert isinstance(value, bytes)
        _varint(out, len(value))
        out += value
    elif kind == STRUCT:
        assert isinstance(value, Struct)
        _write_struct(out, value)
    elif kind == LIST or kind == SET:
        assert isinstance(value, ThriftList)
        size = len(value.values)
        out.append((min(size, 15) << 4) | value.element_type)
        if size >= 15:
            _varint(out, size)
        element = value.element_type
        for item in value.values:
            _write_value(out, element, item)
    elif kind == TRUE or kind == FALSE:
        out.append(TRUE if value else FALSE)
    elif kind == BYTE:
        assert isinstance(value, int)
        out.append(value & 0xFF)
    elif kind == DOUBLE:
        assert isinstance(value, float)
        out += struct.pack("<d", value)
    elif kind == MAP:
        assert isinstance(value, ThriftMap)
        _varint(out, len(value.entries))
        if value.entries:
            out.append((value.key_type << 4) | value.value_type)
        for key, val in value.entries:
            _write_value(out, value.key_type, key)
            _write_value(out, value.value_type, val)
    else:
        raise ValueError(f"unknown Thrift type {kind}")


def _write_struct(out: bytearray, value: Struct) -> None:
    last = 0
    for fid, kind, item in value.fields:
        delta = fid - last
        boolean = kind == TRUE or kind == FALSE
        wire = (TRUE if item else FALSE) if boolean else kind
        if 0 < delta <= 15:
            out.append((delta << 4) | wire)
        else:
            out.append(wire)
            _zigzag(out, fid)
        if not boolean:
            _write_value(out, kind, item)
        last = fid
    out.append(STOP)
