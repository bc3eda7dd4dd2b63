"""Which columns of a base file are dictionary-encoded: the choice Hudi's Parquet writer makes.

Hudi writes Parquet with parquet-mr (`HoodieBaseParquetWriter`: dictionary encoding on, writer
version `PARQUET_1_0`, page and dictionary page size 1 MiB). parquet-mr tries the dictionary on each
column chunk's first page and keeps it only if it pays (`FallbackValuesWriter.getBytes`,
`DictionaryValuesWriter.isCompressionSatisfying`: dictionary bytes plus encoded indices smaller than
the plain values); otherwise the column is written plain. So in Hudi's files a column of distinct
values (`_hoodie_record_key`, `_hoodie_commit_seqno`, ids, amounts) is plain, and a column of few
values (`_hoodie_commit_time`, the partition path, the file name) has a dictionary.

Arrow's writer instead keeps a dictionary for every column until it outgrows its page size limit.
For distinct values that is pure cost: every value is hashed, the dictionary page repeats the values
and the indices come on top, which made our gzip files about twice the size of plain ones and their
encoding slower. `dictionary_columns` applies parquet-mr's rule to the first page's worth of rows
(at most `PAGE_ROWS` rows, parquet-mr's page row count limit, and about `PAGE_BYTES` of plain
values) and gives Arrow the columns that keep a dictionary.

Decided once per file, on the first rows written to it (parquet-mr decides per row group; our files
are one row group up to `ROW_GROUP_ROWS` rows). A merge that keeps its old file's first page of rows
as they were writes plain, without hashing the page, the columns the old file wrote plain there
(`old_file_plain_columns`): the rule, applied by either writer to the same page, chose that.
Booleans never get a dictionary (neither writer has one for them); the leaves of nested columns keep
Arrow's default (a dictionary), as before.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

PAGE_ROWS = 20_000  # parquet-mr's `ParquetProperties.DEFAULT_PAGE_ROW_COUNT_LIMIT`
PAGE_BYTES = 1024 * 1024  # Hudi's `hoodie.parquet.page.size`, also its dictionary page size
_LENGTH_PREFIX = 4  # PLAIN byte arrays carry a 4-byte length


def dictionary_columns(rows: pa.Table, *, compliant_nested: bool = True,
                       distinct: Collection[str] = (), plain: Collection[str] = ()) -> list[str]:
    """The Parquet column paths of `rows`' schema to write with a dictionary (see the module doc);
    `compliant_nested`: as the writer's `use_compliant_nested_type`, which names nested leaves.

    `distinct`: top-level columns whose values the caller knows to be distinct (a file's commit
    sequence numbers, the keys of a file group after a de-duplicated upsert). A dictionary of
    distinct values repeats every value and adds the indices, so it never pays: such a column is
    plain without hashing its page. Were the caller wrong, the column would be plain where
    parquet-mr might keep a dictionary: a file as valid, of another size.

    `plain`: flat top-level columns written plain, as `distinct` are, because an old file wrote
    them plain on the same first page of rows (`old_file_plain_columns`)."""
    chosen: list[str] = []
    for field in rows.schema:
        if _is_nested(field.type):
            chosen.extend(p for p in leaf_paths(rows.schema, compliant_nested) if p.split(".", 1)[0] == field.name)
        elif field.name not in distinct and field.name not in plain and _dictionary_pays(rows.column(field.name)):
            chosen.append(field.name)
    return chosen


def old_file_plain_columns(metadata: pq.FileMetaData) -> frozenset[str]:
    """The flat top-level columns a base file wrote plain (no dictionary page) in its first row
    group, holding values there: the rule's choice on that chunk's first page, whether parquet-mr
    (Hudi) or this writer applied it. A new file that starts with the same `PAGE_ROWS` rows gets the
    same choice from the rule, so a merge that keeps those rows as they are passes it on instead of
    hashing the page again (`plain`); these are mostly the distinct columns, whose hashing costs
    most. Only plain is passed on: a dictionary the old file kept may come from a writer that keeps
    every dictionary (Arrow's default, the runner's files before the rule), so it is decided afresh.
    Nothing when the first row group is shorter than a page (the new file's first page then holds
    other rows too)."""
    if not metadata.num_row_groups or metadata.row_group(0).num_rows < PAGE_ROWS:
        return frozenset()
    group = metadata.row_group(0)
    found = set()
    for i in range(group.num_columns):
        chunk = group.column(i)
        statistics = chunk.statistics
        if "." in chunk.path_in_schema or chunk.num_values == 0 or chunk.has_dictionary_page:
            continue  # nested leaves keep Arrow's default
        if statistics is not None and statistics.null_count == chunk.num_values:
            continue  # no values: plain by the rule, decided afresh at no cost
        found.add(chunk.path_in_schema)
    return frozenset(found)


def _is_nested(kind: pa.DataType) -> bool:
    import pyarrow.types as t

    return bool(t.is_struct(kind) or t.is_list(kind) or t.is_large_list(kind) or t.is_map(kind)
                or t.is_fixed_size_list(kind))


def _dictionary_pays(column: pa.ChunkedArray) -> bool:
    """parquet-mr's `isCompressionSatisfying` on the column's first page: dictionary + indices < plain."""
    import pyarrow.types as t

    kind = column.type
    if t.is_boolean(kind) or t.is_null(kind) or column.null_count == len(column):
        return False  # an all-null column (a table without meta fields): no values, plain, as below
    page = column.slice(0, PAGE_ROWS).drop_null()
    width = _plain_width(kind)
    if width is None:  # byte arrays: the page ends at about PAGE_BYTES of plain values
        page, plain = _byte_page(page)
        distinct, dictionary = _distinct_bytes(page)
    else:
        page = page.slice(0, max(1, PAGE_BYTES // width))
        plain = len(page) * width
        distinct = _distinct_fixed(page)
        dictionary = distinct * width
    if not len(page):
        return False  # no values: 0 + 0 < 0 fails, parquet-mr falls back to plain
    bit_width = max(distinct - 1, 0).bit_length()
    indices = 1 + math.ceil(len(page) * bit_width / 8)  # bit width byte, then bit-packed indices
    return dictionary + indices < plain


def _byte_page(values: pa.ChunkedArray) -> tuple[pa.ChunkedArray, int]:
    """The first page of a byte-array column without nulls (about `PAGE_BYTES` of plain values), and
    its plain size."""
    plain = _plain_bytes(values)
    if plain <= PAGE_BYTES:
        return values, plain
    page = values.slice(0, max(1, int(len(values) * PAGE_BYTES / plain)))
    return page, _plain_bytes(page)


def _plain_bytes(values: pa.ChunkedArray | pa.Array) -> int:
    """PLAIN size of byte arrays without nulls: their bytes, read off the offsets, and a length each."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.types as t

    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    data = 0
    for chunk in chunks:
        if len(chunk):
            wide = t.is_large_string(chunk.type) or t.is_large_binary(chunk.type)
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64 if wide else np.int32)
            # A slice shares its parent's offsets: its values lie between its first and last bound.
            data += int(offsets[chunk.offset + len(chunk)] - offsets[chunk.offset])
    return data + _LENGTH_PREFIX * len(values)


def _distinct_bytes(page: pa.ChunkedArray) -> tuple[int, int]:
    """Distinct values of a byte-array page and the PLAIN size of its dictionary. A page of one
    value throughout (commit time, partition path, file name) is told by comparing with its first
    value, which costs a tenth of hashing the page."""
    import pyarrow.compute as pc

    if len(page) and pc.all(pc.equal(page, page[0])).as_py():
        return 1, _plain_bytes(page.slice(0, 1))
    values = pc.unique(page)
    return len(values), _plain_bytes(values)


def _distinct_fixed(page: pa.ChunkedArray) -> int:
    """Distinct values of a fixed-width page. Two shapes common in base files skip the hashing:
    one value throughout (a commit time, a partition column), and strictly increasing numbers
    (ids, sequence numbers, running amounts), which are all distinct. A float page with NaN or
    with both -0.0 and 0.0 is never strictly increasing (those compare false), so it is hashed,
    which keeps them apart as the dictionary does."""
    import pyarrow.compute as pc
    import pyarrow.types as t

    if len(page) and t.is_integer(page.type) and _one_value(page):
        return 1
    if len(page) and (t.is_integer(page.type) or t.is_floating(page.type)):
        values = page.combine_chunks().to_numpy(zero_copy_only=False)
        if bool((values[1:] > values[:-1]).all()):
            return len(values)
    return len(pc.unique(page))


def _one_value(page: pa.ChunkedArray) -> bool:
    """Whether a non-empty page of integers (no nulls) holds a single value."""
    import pyarrow.compute as pc

    if not len(page):
        return False
    bounds = pc.min_max(page)
    return bool(bounds["min"].as_py() == bounds["max"].as_py())


def _plain_width(kind: pa.DataType) -> int | None:
    """Bytes per PLAIN value of a fixed-width type; None for byte arrays."""
    import pyarrow.types as t

    if t.is_binary(kind) or t.is_string(kind) or t.is_large_binary(kind) or t.is_large_string(kind):
        return None
    if t.is_decimal(kind):
        # Arrow writes decimals as fixed-length byte arrays of the precision's minimal width, as parquet-avro does.
        return max(1, math.ceil((int(kind.precision) * math.log2(10) + 1) / 8))
    if t.is_fixed_size_binary(kind):
        return int(kind.byte_width)
    bits = int(kind.bit_width)
    return 4 if bits <= 32 else 8 if bits <= 64 else 12  # INT32 (and smaller ints, dates), INT64, INT96


@functools.lru_cache(maxsize=64)
def leaf_paths(schema: pa.Schema, compliant_nested: bool = True) -> tuple[str, ...]:
    """The Parquet column paths of `schema`'s leaves, as Arrow's writer names them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink, store_schema=False, use_compliant_nested_type=compliant_nested)
    parquet_schema = pq.ParquetFile(pa.BufferReader(sink.getvalue())).schema
    return tuple(parquet_schema.column(i).path for i in range(len(parquet_schema)))
