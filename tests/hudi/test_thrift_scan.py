"""`thrift_compact.scan_struct`: a struct's fields read without building nested values must agree
with the full decoder on every field (id, type, integer and boolean values) and on where each value
and the struct end; and `zigzag_varint` must encode what the decoder reads back."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import CorruptMetadataError
from runner.hudi.thrift_compact import (
    BINARY,
    BYTE,
    DOUBLE,
    I16,
    I32,
    I64,
    LIST,
    MAP,
    SET,
    STRUCT,
    TRUE,
    Struct,
    ThriftList,
    ThriftMap,
    decode_struct,
    encode_struct,
    scan_struct,
    zigzag_varint,
)

_INTS = {I16: st.integers(-(2**15), 2**15 - 1), I32: st.integers(-(2**31), 2**31 - 1),
         I64: st.integers(-(2**63), 2**63 - 1), BYTE: st.integers(-128, 127)}


def _values(kind: int, depth: int) -> st.SearchStrategy[object]:
    if kind in _INTS:
        return _INTS[kind]
    if kind == TRUE:
        return st.booleans()
    if kind == DOUBLE:
        return st.floats(allow_nan=False)
    if kind == BINARY:
        return st.binary(max_size=40)
    if kind == STRUCT:
        return _structs(depth + 1)
    if kind in (LIST, SET):
        element = st.sampled_from([I32, I64, BINARY, TRUE, DOUBLE] + ([STRUCT] if depth < 2 else []))
        return element.flatmap(lambda e: st.lists(_values(e, depth + 1), max_size=18).map(
            lambda vs, e=e: ThriftList(e, vs, kind)))
    assert kind == MAP
    return st.lists(st.tuples(_INTS[I32], st.binary(max_size=8)), max_size=4).map(
        lambda entries: ThriftMap(I32, BINARY, entries))


def _structs(depth: int = 0) -> st.SearchStrategy[Struct]:
    kinds = [I16, I32, I64, BYTE, TRUE, DOUBLE, BINARY, LIST, SET, MAP] + ([STRUCT] if depth < 2 else [])
    # Ids apart by more than 15 (and the first above 15) take the long field header.
    ids = st.lists(st.integers(1, 400), max_size=8, unique=True).map(sorted)
    return ids.flatmap(lambda fids: st.tuples(*[
        st.sampled_from(kinds).flatmap(lambda k, fid=fid: _values(k, depth).map(lambda v, k=k, fid=fid: (fid, k, v)))
        for fid in fids
    ])).map(lambda fields: Struct(list(fields)))


@settings(max_examples=300, deadline=None)
@given(value=_structs(), before=st.binary(max_size=5), after=st.binary(max_size=5))
def test_scanned_fields_agree_with_the_decoder(value: Struct, before: bytes, after: bytes) -> None:
    encoded = encode_struct(value)
    data = before + encoded + after
    fields, end = scan_struct(data, what="t", offset=len(before))
    decoded, decoded_end = decode_struct(data, what="t", offset=len(before))
    assert end == decoded_end == len(before) + len(encoded)
    assert [(f[0], f[1]) for f in fields] == [(fid, kind) for fid, kind, _ in decoded.fields]
    for (_, kind, scanned, start, stop), (_, _, full) in zip(fields, decoded.fields, strict=True):
        if kind == TRUE:
            assert scanned is full and start == stop
        elif kind in (I16, I32, I64):
            assert scanned == full
            assert data[start:stop] == zigzag_varint(full)  # type: ignore[arg-type]
        else:
            assert scanned is None
            # The span holds exactly the value: a struct of that one field decodes to it.
            alone, _ = decode_struct(bytes([0x10 | kind]) + data[start:stop] + b"\x00", what="t") \
                if kind not in (BYTE, TRUE) else (None, 0)
            if alone is not None:
                assert alone.fields[0][2] == full


@given(st.integers(-(2**63), 2**63 - 1))
def test_zigzag_varint_reads_back(n: int) -> None:
    field = bytes([0x16]) + zigzag_varint(n) + b"\x00"  # field 1, i64
    assert decode_struct(field, what="t")[0].get_int(1) == n


@pytest.mark.parametrize("data", [b"\x18\x05ab", b"\x16\xff\xff", b"\x1c\x15", b"\x19\xf5"])
def test_truncated_structs_are_reported_as_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptMetadataError, match="not valid Thrift"):
        scan_struct(data, what="a page header")
