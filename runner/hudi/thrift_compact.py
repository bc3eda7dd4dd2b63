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
        return any(fid == field_id for fid, _, _ in self.fields)

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


def decode_struct(data: bytes, *, what: str, offset: int = 0) -> tuple[Struct, int]:
    """Decode one struct starting at `offset` in `data`; returns it and the offset after it.

    Raises:
        CorruptMetadataError: the bytes are not a compact-protocol struct (`what` names the file).
    """
    reader = _Reader(data, what)
    reader.pos = offset
    try:
        value = reader.struct(0)
    except (IndexError, struct.error, ValueError) as error:
        raise CorruptMetadataError(f"{what}: the Parquet footer is not valid Thrift ({error})", path=what) from error
    return value, reader.pos


def encode_struct(value: Struct) -> bytes:
    out = bytearray()
    _write_struct(out, value)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def byte(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise ValueError(f"varint too long at byte {self.pos}")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def binary(self) -> bytes:
        size = self.varint()
        if self.pos + size > len(self.data):
            raise ValueError(f"binary of {size} bytes runs past the end at byte {self.pos}")
        value = self.data[self.pos:self.pos + size]
        self.pos += size
        return value

    def value(self, kind: int, depth: int) -> Value:
        if kind in (TRUE, FALSE):  # inside a collection: one byte
            return self.byte() == TRUE
        if kind == BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if kind in _INTEGERS:
            return self.zigzag()
        if kind == DOUBLE:
            (number,) = struct.unpack_from("<d", self.data, self.pos)
            self.pos += 8
            return float(number)
        if kind == BINARY:
            return self.binary()
        if kind in (LIST, SET):
            header = self.byte()
            size, element = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            return ThriftList(element, [self.value(element, depth + 1) for _ in range(size)], kind)
        if kind == MAP:
            size = self.varint()
            if size == 0:
                return ThriftMap(0, 0, [])
            types = self.byte()
            key, val = types >> 4, types & 0x0F
            return ThriftMap(key, val, [(self.value(key, depth + 1), self.value(val, depth + 1))
                                        for _ in range(size)])
        if kind == STRUCT:
            return self.struct(depth + 1)
        raise ValueError(f"unknown Thrift type {kind} at byte {self.pos}")

    def struct(self, depth: int) -> Struct:
        if depth > _MAX_DEPTH:
            raise ValueError("structs nested too deeply")
        fields: list[tuple[int, int, Value]] = []
        last = 0
        while True:
            header = self.byte()
            if header == STOP:
                return Struct(fields)
            delta, kind = header >> 4, header & 0x0F
            fid = last + delta if delta else self.zigzag()
            value: Value = kind == TRUE if kind in (TRUE, FALSE) else self.value(kind, depth)
            fields.append((fid, TRUE if kind in (TRUE, FALSE) else kind, value))
            last = fid


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
    if kind in (TRUE, FALSE):
        out.append(TRUE if value else FALSE)
    elif kind == BYTE:
        assert isinstance(value, int)
        out.append(value & 0xFF)
    elif kind in _INTEGERS:
        assert isinstance(value, int)
        _zigzag(out, value)
    elif kind == DOUBLE:
        assert isinstance(value, float)
        out += struct.pack("<d", value)
    elif kind == BINARY:
        assert isinstance(value, bytes)
        _varint(out, len(value))
        out += value
    elif kind in (LIST, SET):
        assert isinstance(value, ThriftList)
        size = len(value.values)
        out.append((min(size, 15) << 4) | value.element_type)
        if size >= 15:
            _varint(out, size)
        for item in value.values:
            _write_value(out, value.element_type, item)
    elif kind == MAP:
        assert isinstance(value, ThriftMap)
        _varint(out, len(value.entries))
        if value.entries:
            out.append((value.key_type << 4) | value.value_type)
        for key, val in value.entries:
            _write_value(out, value.key_type, key)
            _write_value(out, value.value_type, val)
    elif kind == STRUCT:
        assert isinstance(value, Struct)
        _write_struct(out, value)
    else:
        raise ValueError(f"unknown Thrift type {kind}")


def _write_struct(out: bytearray, value: Struct) -> None:
    last = 0
    for fid, kind, item in value.fields:
        wire = (TRUE if item else FALSE) if kind in (TRUE, FALSE) else kind
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | wire)
        else:
            out.append(wire)
            _zigzag(out, fid)
        if kind not in (TRUE, FALSE):
            _write_value(out, kind, item)
        last = fid
    out.append(STOP)
