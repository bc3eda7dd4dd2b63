"""A Parquet footer assembled from row groups moved to a new file: shared by the binary copy
(`parquet_copy`) and the deflating writer (`parquet_deflate`), which both write column chunks
somewhere other than where their first writer put them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runner.hudi.parquet_ids import (
    C_FILE_OFFSET,
    C_META,
    C_PAGE_INDEX,
    F_KEY_VALUE,
    F_NUM_ROWS,
    F_ROW_GROUPS,
    M_BLOOM,
    M_COMPRESSED,
    M_DATA_PAGE,
    M_DICTIONARY_PAGE,
    M_INDEX_PAGE,
    MAGIC,
    R_COLUMNS,
    R_FILE_OFFSET,
    R_ORDINAL,
    R_TOTAL_BYTE_SIZE,
    R_TOTAL_COMPRESSED,
)
from runner.hudi.thrift_compact import BINARY, I16, I64, LIST, STRUCT, Struct, ThriftList, encode_struct


def row_group(rg: Struct, columns: Sequence[Struct], byte_size: int, ordinal: int) -> Struct:
    """`rg` holding `columns` (ColumnChunks already at their new offsets) as the `ordinal`-th row
    group, `byte_size` its uncompressed bytes."""
    new = Struct(list(rg.fields))
    new.put(R_COLUMNS, LIST, ThriftList(STRUCT, list(columns)))
    new.put(R_TOTAL_BYTE_SIZE, I64, byte_size)
    first = columns[0].get_struct(C_META)
    assert first is not None
    starts = [first.get_int(M_DICTIONARY_PAGE) or 0, first.get_int(M_DATA_PAGE) or 0]
    new.put(R_FILE_OFFSET, I64, min(s for s in starts if s > 0))
    if new.has(R_TOTAL_COMPRESSED):
        new.put(R_TOTAL_COMPRESSED, I64, sum(_compressed(c) for c in columns))
    if new.has(R_ORDINAL):
        new.put(R_ORDINAL, I16, ordinal)
    return new


def footer(first: Struct, records: int, row_groups: Sequence[Struct], key_values: Mapping[str, str | None]) -> bytes:
    """The file's tail: `first`'s FileMetaData with these row groups, row count and key-value
    metadata (in this order; a None value is a key without one), its length, and the magic."""
    meta = Struct(list(first.fields))
    meta.put(F_NUM_ROWS, I64, records)
    meta.put(F_ROW_GROUPS, LIST, ThriftList(STRUCT, list(row_groups)))
    entries = [Struct([(1, BINARY, k.encode()), *([] if v is None else [(2, BINARY, v.encode())])])
               for k, v in key_values.items()]
    if entries:
        meta.put(F_KEY_VALUE, LIST, ThriftList(STRUCT, list(entries)))
    else:
        meta.drop(F_KEY_VALUE)
    encoded = encode_struct(meta)
    return encoded + len(encoded).to_bytes(4, "little") + MAGIC


def key_values(meta: Struct) -> dict[str, str | None]:
    """A footer's key-value metadata in order (the first of a repeated key wins)."""
    found: dict[str, str | None] = {}
    for entry in meta.get_list(F_KEY_VALUE):
        assert isinstance(entry, Struct)
        key, value = entry.get(1), entry.get(2)
        assert isinstance(key, bytes)
        found.setdefault(key.decode("utf-8", "replace"),
                         value.decode("utf-8", "replace") if isinstance(value, bytes) else None)
    return found


def moved_chunk(chunk: Struct, start: int, length: int, new_start: int) -> Struct:
    """A ColumnChunk whose pages lay at `start` (`length` bytes) moved to `new_start`, without page
    index or bloom filter (neither is copied with the pages)."""
    delta = new_start - start
    meta = chunk.get_struct(C_META)
    assert meta is not None
    new_meta = Struct(list(meta.fields))
    for fid in (M_DATA_PAGE, M_INDEX_PAGE, M_DICTIONARY_PAGE):
        value = new_meta.get_int(fid)
        if value is not None and value > 0:
            new_meta.put(fid, I64, value + delta)
    new_meta.drop(*M_BLOOM)
    new = Struct(list(chunk.fields))
    new.drop(*C_PAGE_INDEX)
    new.put(C_META, STRUCT, new_meta)
    # Deprecated and unread; writers put the chunk's start (or its metadata's offset) here.
    old = new.get_int(C_FILE_OFFSET) or 0
    new.put(C_FILE_OFFSET, I64, old + delta if start <= old <= start + length else new_start)
    return new


def _compressed(column: Struct) -> int:
    meta = column.get_struct(C_META)
    value = meta.get_int(M_COMPRESSED) if meta is not None else None
    assert value is not None
    return value
