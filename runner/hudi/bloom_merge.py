"""One bloom filter for a file made of other files' rows, from those files' filters: no key hashed.

A resize writes a file of exactly its inputs' rows (binary copy, `runner.hudi.parquet_copy`, and
the rewrite alike), so its filter is theirs merged (`footer.merged_record_key_footer`). Hudi 1.x's own
binary-copy clustering (`HoodieFileMetadataMerger`) ORs the inputs' `org.apache.hudi.bloomfilter`
values into the first one (`InternalDynamicBloomFilter.or`, which requires equal row counts and
ORs row `i` into row `i`) and keeps the first input's header. This does the same with care:

- DYNAMIC_V0: every input must have the geometry this writer's filter has (`bloom.VECTOR_SIZE`
  bits, `bloom.NUM_HASHES` murmur hashes, rows of `bloom.ENTRIES`) and exactly the rows and
  `currentNbRecord` a Hudi filter of its file's row count has. The output gets the rows and header
  a Hudi filter of all N keys has (`bloom.row_count(N)`, `bloom.current_records(N)`), and each
  input row is ORed into the output row holding the fewest keys so far, largest input rows first,
  so the rows fill about as evenly as a rebuilt filter's and its false-positive rate stays close.
- SIMPLE (one standard filter): when every input has that same geometry, the OR is the filter the
  same keys would have built, bit for bit.
- Anything else (another geometry, a mismatched row count, an unreadable value, a missing filter,
  mixed types): `NotMergeable`, and the caller rebuilds the filter from the keys.

Why no key can go missing: Hudi's `membershipTest` answers yes when *any* row holds all of a key's
bit positions, and the positions depend only on the key, the vector size and the hash count, which
are checked equal. An input's key is a member of one of that input's rows; that row's bits are all
ORed into some output row, so they are all set there too. Which output row does not matter, and
bits are only ever added, so there is no false negative (a false negative would make Hudi's BLOOM
index miss a record this file holds and write it again as a duplicate). The row geometry and the
header are those of a filter Hudi built for N keys, so any reader decodes it as one.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pybase64

from runner.hudi import bloom

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

SIMPLE = "SIMPLE"
_HEADER = struct.Struct(">iibi")  # InternalFilter.write: version, nbHash, hashType, vectorSize
_DYNAMIC = struct.Struct(">iii")  # InternalDynamicBloomFilter.write: nr, currentNbRecord, rows
_ROW_BYTES = (bloom.VECTOR_SIZE + 7) // 8


class NotMergeable(Exception):
    """The inputs' filters cannot be merged safely; the message says why (rebuild from the keys)."""


@dataclass(frozen=True, slots=True)
class InputFilter:
    """One input file's footer entries and its row count (from the Parquet footer)."""

    path: str
    type_code: str | None
    value: str | bytes | None  # the Base64 text
    records: int
    # Reads the Base64 text when the merge needs it, in place of `value` (None then), so that a
    # group's values are not all held at once (`resize_job`: 38 MB for 89 inputs, whose fresh pages
    # cost more CPU than reading each value twice).
    load: Callable[[], str | bytes | None] | None = None

    def has_value(self) -> bool:
        return self.value is not None or self.load is not None


@dataclass(frozen=True, slots=True)
class MergedFilter:
    type_code: str
    value: str
    rows: npt.NDArray[np.uint8]  # (rows, bytes per row), for checking members


def merge(inputs: Sequence[InputFilter]) -> MergedFilter:
    """The filter of the inputs' keys together, in the type the inputs share.

    Raises:
        NotMergeable: an input has no filter, another type or geometry, or one inconsistent with
            its row count.
    """
    for f in inputs:
        if not f.has_value():
            raise NotMergeable(f"{f.path} has no bloom filter")
    types = {f.type_code for f in inputs}
    if types == {bloom.TYPE_CODE}:
        return _merge_dynamic(inputs)
    if types == {SIMPLE}:
        return _merge_simple(inputs)
    raise NotMergeable(f"filter types {sorted(str(t) for t in types)}: only all {bloom.TYPE_CODE} or all "
                       f"{SIMPLE} merge")


def _merge_dynamic(inputs: Sequence[InputFilter]) -> MergedFilter:
    import numpy as np

    total = sum(f.records for f in inputs)
    out = np.zeros((bloom.row_count(total), _ROW_BYTES), np.uint8)
    # Where each input row goes depends on the rows' sizes alone, which the row counts give; so
    # each input is then decoded and ORed in turn, its decoded value freed before the next. Holding
    # all of a group's decoded values at once (29 MB for 89 inputs) took fresh pages from the
    # kernel for each: 17 of the record-key footer's 61 ms a group (bench/README.md, "resize6 round").
    pieces = [(size, index, at) for index, f in enumerate(inputs) for at, size in enumerate(_row_sizes(f.records))]
    pieces.sort(key=lambda piece: -piece[0])  # stable: equal rows keep input order
    load = [0] * len(out)
    targets: dict[tuple[int, int], int] = {}
    for size, index, at in pieces:
        targets[index, at] = target = load.index(min(load))
        load[target] += size
    for index, f in enumerate(inputs):
        for at, bits in enumerate(dynamic_rows(f)):
            target = targets[index, at]
            np.bitwise_or(out[target], bits, out=out[target])
    header = _HEADER.pack(-1, bloom.NUM_HASHES, bloom.MURMUR, bloom.VECTOR_SIZE)
    parts = [header, _DYNAMIC.pack(bloom.ENTRIES, bloom.current_records(total), len(out))]
    for row in out:
        parts += [header, row.tobytes()]
    return MergedFilter(bloom.TYPE_CODE, bloom.base64_text(b"".join(parts)), out)


def dynamic_rows(f: InputFilter) -> list[npt.NDArray[np.uint8]]:
    """The input's rows, after checking its layout is that of a Hudi filter of `f.records` keys."""
    import numpy as np

    data = _decoded(f)
    expected = _HEADER.pack(-1, bloom.NUM_HASHES, bloom.MURMUR, bloom.VECTOR_SIZE)
    if len(data) < _HEADER.size + _DYNAMIC.size or data[: _HEADER.size] != expected:
        raise NotMergeable(f"{f.path}: bloom filter header {_header_of(data)}, expected {_HEADER.unpack(expected)}")
    nr, current, rows = _DYNAMIC.unpack_from(data, _HEADER.size)
    want = (bloom.ENTRIES, bloom.current_records(f.records), bloom.row_count(f.records))
    if (nr, current, rows) != want:
        raise NotMergeable(f"{f.path}: bloom filter (keys per row, keys in the last row, rows) is "
                           f"{(nr, current, rows)}, expected {want} for its {f.records} records")
    start, step = _HEADER.size + _DYNAMIC.size, _HEADER.size + _ROW_BYTES
    if len(data) != start + rows * step:
        raise NotMergeable(f"{f.path}: bloom filter is {len(data)} bytes, expected {start + rows * step}")
    buffer = np.frombuffer(data, np.uint8)
    result = []
    for r in range(rows):
        at = start + r * step
        if data[at : at + _HEADER.size] != expected:
            raise NotMergeable(f"{f.path}: bloom filter row {r} header {_header_of(data[at:])}")
        result.append(buffer[at + _HEADER.size : at + step])
    return result


def _merge_simple(inputs: Sequence[InputFilter]) -> MergedFilter:
    """Only the geometry `bloom` builds (Hudi's SIMPLE default for 60,000 keys at 1e-9): then
    the OR of the bit vectors is exact, and `members` can check the result."""
    import numpy as np

    expected = _HEADER.pack(-1, bloom.NUM_HASHES, bloom.MURMUR, bloom.VECTOR_SIZE)
    out = np.zeros(_ROW_BYTES, np.uint8)
    for f in inputs:
        data = _decoded(f)
        if len(data) != _HEADER.size + _ROW_BYTES or data[: _HEADER.size] != expected:
            raise NotMergeable(f"{f.path}: SIMPLE bloom filter header {_header_of(data)} in {len(data)} bytes, "
                               f"expected {_HEADER.unpack(expected)} in {_HEADER.size + _ROW_BYTES}")
        np.bitwise_or(out, np.frombuffer(data, np.uint8, offset=_HEADER.size), out=out)
    value = bloom.base64_text(expected + out.tobytes())
    return MergedFilter(SIMPLE, value, out[None, :])


def _decoded(f: InputFilter) -> bytes:
    value = f.value if f.load is None else f.load()
    if value is None:
        raise NotMergeable(f"{f.path} has no bloom filter")
    try:
        return base64_decoded(value)
    except (binascii.Error, ValueError) as error:
        raise NotMergeable(f"{f.path}: bloom filter is not Base64 ({error})") from error


def base64_decoded(value: str | bytes) -> bytes:
    """`value` decoded as `binascii.a2b_base64(value, strict_mode=True)` decodes it, refusing the
    same values (strict mode refuses what `b64decode(validate=True)` does, without its regex pass).

    A long value (a filter: 431 KB for a Hudi file) is decoded by pybase64's SIMD decoder, about
    0.05 ms where `binascii` takes 1.6 ms holding the GIL: a resize decodes one filter per input,
    so this was about 0.8 s of CPU for 500 inputs (bench/README.md, "resize: the filters decoded by
    pybase64").
    """
    data = value.encode("ascii") if isinstance(value, str) else value
    if len(data) < _LONG_FROM or len(data) % 4:
        return binascii.a2b_base64(data, strict_mode=True)
    # A value Hudi wrote has four alphabet characters in every quantum but the last, which may end
    # in padding and is decoded by `binascii`. Any other value is left whole to `binascii`, whose
    # verdict on it (or its bytes: it accepts some odd endings) is then the answer.
    head = _simd_head(data)
    if head is None:
        return binascii.a2b_base64(data, strict_mode=True)
    try:
        tail = binascii.a2b_base64(data[-4:], strict_mode=True)
    except binascii.Error:
        return binascii.a2b_base64(data, strict_mode=True)
    return head + tail


def _simd_head(data: bytes) -> bytes | None:
    """All but the last quantum of `data` decoded, or None when one of them holds anything but
    alphabet characters. Refused characters raise (`validate`); padding would decode to fewer
    bytes than three per quantum, so the length check catches it."""
    try:
        head: bytes = pybase64.b64decode(memoryview(data)[:-4], validate=True)
    except (binascii.Error, ValueError):
        return None
    return head if len(head) == (len(data) - 4) // 4 * 3 else None


# Below this many characters `binascii` holds the GIL for under 0.2 ms.
_LONG_FROM = 64 * 1024


def _header_of(data: bytes) -> tuple[int, ...] | str:
    return _HEADER.unpack_from(data) if len(data) >= _HEADER.size else f"{len(data)} bytes"


def _row_sizes(n: int) -> list[int]:
    """How many of `n` keys each row of a Hudi DYNAMIC_V0 filter holds (`bloom._row_members`)."""
    rows = bloom.row_count(n)
    bound = rows * bloom.ENTRIES
    if n <= bound:
        return [min(bloom.ENTRIES, max(0, n - r * bloom.ENTRIES)) for r in range(rows)]
    after = n - bound - 1  # past the bound: one key to row 0, then round robin from row 0
    return [bloom.ENTRIES + (r == 0) + max(0, (after - r + rows - 1) // rows) for r in range(rows)]


def members(merged: MergedFilter, keys: pa.Array) -> npt.NDArray[np.bool_]:
    """Whether each key passes the filter's membership test: some row holds all of its bits."""
    return rows_hold(merged.rows, keys)


def rows_hold(rows: Sequence[npt.NDArray[np.uint8]] | npt.NDArray[np.uint8], keys: pa.Array) -> npt.NDArray[np.bool_]:
    """Whether each key passes the membership test of a filter of these rows (packed bit vectors)."""
    import numpy as np

    positions = bloom.bit_positions(keys)  # (NUM_HASHES, keys)
    found = np.zeros(len(keys), np.bool_)
    for row in rows:
        bits = (row[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1
        found |= bits.all(axis=0)
    return found
