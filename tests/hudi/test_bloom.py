"""The vectorized DYNAMIC_V0 bloom filter equals a plain, one-key-at-a-time port of Hudi's own code.

The reference below follows Hudi 0.14's classes line by line, with Java `int` arithmetic spelt
out (wrap to 32 bits after each step, `>>>` on the unsigned value, `%` truncating toward zero):
`org.apache.hudi.common.util.hash.MurmurHash.hash`, `HashFunction.hash`,
`InternalDynamicBloomFilter.add` / `getActiveStandardBF` / `write`, `InternalFilter.write` and
`InternalBloomFilter.write`. It shares no code with `runner.hudi.bloom`. (The filter's equality
with files Hudi itself wrote is checked in tests/writer/test_writer_bloom.py.)
"""

from __future__ import annotations

import base64
import functools
import io
import struct
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import RefusedError
from runner.hudi import bloom
from tests.conftest import FIXTURES

NR, MAX_NR, BITS, HASHES = 60_000, 100_000, 2_587_966, 30  # what Hudi 0.14 derives for 60,000 keys at 1e-9
BLOOM = b"org.apache.hudi.bloomfilter"


def java_int(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def java_byte(value: int) -> int:
    return value - 256 if value > 127 else value


def java_rem(a: int, b: int) -> int:
    remainder = abs(a) % abs(b)
    return -remainder if a < 0 else remainder


def murmur(data: bytes, seed: int) -> int:
    """`MurmurHash.hash(data, 0, data.length, seed)`, as a Java int."""
    m, r = java_int(0x5BD1E995), 24
    length = len(data)
    h = java_int(seed ^ length)
    len4 = length >> 2
    for i in range(len4):
        i4 = i << 2
        k = java_byte(data[i4 + 3])
        k = java_int(k << 8)
        k = k | (data[i4 + 2] & 0xFF)
        k = java_int(k << 8)
        k = k | (data[i4 + 1] & 0xFF)
        k = java_int(k << 8)
        k = k | (data[i4] & 0xFF)
        k = java_int(k * m)
        k = java_int(k ^ ((k & 0xFFFFFFFF) >> r))
        k = java_int(k * m)
        h = java_int(h * m)
        h = java_int(h ^ k)
    left = length - (len4 << 2)
    if left != 0:
        if left >= 3:
            h = java_int(h ^ java_int(java_byte(data[length - 3]) << 16))
        if left >= 2:
            h = java_int(h ^ java_int(java_byte(data[length - 2]) << 8))
        if left >= 1:
            h = java_int(h ^ java_byte(data[length - 1]))
        h = java_int(h * m)
    h = java_int(h ^ ((h & 0xFFFFFFFF) >> 13))
    h = java_int(h * m)
    return java_int(h ^ ((h & 0xFFFFFFFF) >> 15))


@functools.cache
def positions(key: bytes) -> tuple[int, ...]:
    """`HashFunction.hash`: hash `i` is seeded with hash `i - 1`, bit `Math.abs(initval % maxValue)`."""
    assert key, "HashFunction rejects an empty key"
    result, initval = [], 0
    for _ in range(HASHES):
        initval = murmur(key, initval)
        result.append(abs(java_rem(initval, BITS)))
    return tuple(result)


class DynamicFilter:
    """`InternalDynamicBloomFilter` with its rows as sets of bit positions."""

    def __init__(self) -> None:
        self.matrix: list[set[int]] = [set()]
        self.current_nb_record = 0
        self.reached_max = False
        self.cur_matrix_index = 0

    def _active(self) -> set[int] | None:
        if self.reached_max:
            row = self.matrix[self.cur_matrix_index % len(self.matrix)]
            self.cur_matrix_index += 1
            return row
        if self.current_nb_record >= NR and len(self.matrix) * NR < MAX_NR:
            return None
        if self.current_nb_record >= NR and len(self.matrix) * NR >= MAX_NR:
            self.reached_max = True
            return self.matrix[0]
        return self.matrix[-1]

    def add(self, key: bytes) -> None:
        row = self._active()
        if row is None:
            self.matrix.append(set())
            row = self.matrix[-1]
            self.current_nb_record = 0
        row.update(positions(key))
        self.current_nb_record += 1

    def serialize(self) -> str:
        # InternalFilter.write: VERSION, nbHash, hashType, vectorSize
        header = struct.pack(">iibi", -1, HASHES, 1, BITS)
        out = header + struct.pack(">iii", NR, self.current_nb_record, len(self.matrix))
        for row in self.matrix:
            data = bytearray((BITS + 7) // 8)
            for i in row:
                data[i // 8] |= 1 << (i % 8)  # BIT_VALUES[bitIndex]
            out += header + bytes(data)
        return base64.b64encode(out).decode("ascii")


def reference(keys: list[bytes]) -> str:
    built = DynamicFilter()
    for key in keys:
        built.add(key)
    return built.serialize()


def test_the_reference_rebuilds_the_filters_hudi_wrote() -> None:
    assert (bloom.ENTRIES, bloom.MAX_ENTRIES, bloom.VECTOR_SIZE, bloom.NUM_HASHES) == (NR, MAX_NR, BITS, HASHES)
    checked = 0
    with zipfile.ZipFile(FIXTURES / "sample_table/cow/v6_complexkeygen_hivestyle.zip") as archive:
        for member in archive.namelist():
            if member.endswith(".parquet") and "__MACOSX" not in member:
                parquet = pq.ParquetFile(io.BytesIO(archive.read(member)))
                keys = parquet.read(columns=["_hoodie_record_key"]).column(0).to_pylist()
                assert reference([k.encode() for k in keys]) == parquet.metadata.metadata[BLOOM].decode()
                checked += 1
    assert checked


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.binary(min_size=0, max_size=80), st.integers(-(2**31), 2**31 - 1)),
                min_size=1, max_size=40))
def test_block_murmur_equals_hudis_on_every_length_tail_and_seed(cases: list[tuple[bytes, int]]) -> None:
    keys = [key for key, _ in cases]
    lengths = np.array([len(k) for k in keys], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    data = np.frombuffer(b"".join(keys) or b"\0", np.uint8)[: int(offsets[-1])]
    order = bloom._longest_first(lengths, np.arange(len(keys), dtype=np.int64))
    block = bloom._KeyBlock.read(data, bloom._unaligned_words(data), offsets[order], lengths[order])
    seeds = np.array([cases[i][1] for i in order], np.int64).astype(np.uint32)
    hashed = seeds.copy()
    bloom._murmur_in_place(hashed, np.empty_like(hashed), block)
    expected = [murmur(keys[i], cases[i][1]) for i in order]
    assert hashed.view(np.int32).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=80), min_size=0, max_size=60), st.sampled_from(
    [pa.binary(), pa.large_binary()]), st.integers(0, 3))
def test_serialize_equals_hudis_filter_for_any_keys(keys: list[bytes], kind: pa.DataType, skip: int) -> None:
    # The array starts `skip` keys into its buffers, as a slice of a bigger column does.
    column = pa.array([b"x" * (i + 1) for i in range(skip)] + keys, kind).slice(skip)
    assert bloom.serialize(column) == reference(keys)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=40))
def test_serialize_equals_hudis_filter_for_text_keys(keys: list[str]) -> None:
    keys = [k for k in keys if not any(0xD800 <= ord(c) <= 0xDFFF for c in k)] or ["é-ü-✓ ключ \U0001F600"]
    encoded = [k.encode() for k in keys]
    assert bloom.serialize(pa.array(keys, pa.string())) == reference(encoded)
    assert bloom.serialize(pa.array(keys, pa.large_string())) == reference(encoded)


# Key counts around where a second row is added (60,000), where rows reach the 100,000 bound
# (the second row is full at 120,000) and in the round robin after it.
COUNTS = st.one_of(st.integers(1, 300), st.integers(59_990, 60_010), st.integers(119_990, 120_010),
                   st.integers(120_011, 125_000))


@settings(max_examples=12, deadline=None)
@given(COUNTS, st.data())
def test_rows_match_hudi_for_counts_crossing_60000_and_100000(count: int, data: st.DataObject) -> None:
    # Distinct keys (of every length, so blocks mix lengths) at chosen places, mostly near the
    # boundaries, and one repeated filler key elsewhere: a key sent to the wrong row changes the
    # bytes, and the reference hashes each distinct key once.
    near = [i for edge in (0, 60_000, 120_000, count - 1) for i in range(edge - 6, edge + 6) if 0 <= i < count]
    chosen = data.draw(st.sets(st.integers(0, count - 1), max_size=20)) | set(near)
    keys = [b"filler-key"] * count
    for i in chosen:
        keys[i] = f"k{i}-{'x' * (i % 23)}".encode()
    assert bloom.serialize(pa.array(keys, pa.binary())) == reference(keys)


def test_every_key_of_a_large_file_is_a_member_and_the_header_counts_rows() -> None:
    keys = [f"id:{i}" for i in range(130_000)]
    data = base64.b64decode(bloom.serialize(pa.array(keys)))
    assert struct.unpack(">iibi", data[:13]) == (-1, HASHES, 1, BITS)
    assert struct.unpack(">iii", data[13:25]) == (NR, 130_000 - NR, 2)
    row_bytes = 13 + (BITS + 7) // 8
    rows = [data[25 + r * row_bytes + 13 : 25 + (r + 1) * row_bytes] for r in range(2)]
    assert len(data) == 25 + 2 * row_bytes
    for i in range(0, 130_000, 97):
        # Hudi's membershipTest: some row has every bit of the key.
        assert any(all(row[p // 8] >> (p % 8) & 1 for p in positions(keys[i].encode())) for row in rows)


def test_no_keys_still_give_hudis_empty_filter() -> None:
    assert bloom.serialize(pa.array([], pa.string())) == reference([])


def test_the_callers_key_column_is_left_untouched() -> None:
    # Keys of one length that is a multiple of 4 are read from the column's own buffer.
    keys = [f"k{i:03d}" for i in range(2_000)]
    column = pa.array(keys)
    bloom.serialize(column)
    assert column.to_pylist() == keys


@pytest.mark.parametrize(("keys", "found"), [(["a", None, "b"], "row 1 of 3 is null"),
                                             (["a", "b", ""], "row 2 of 3 is an empty string")])
def test_a_null_or_empty_key_is_refused_like_hudi_does(keys: list[str | None], found: str) -> None:
    with pytest.raises(RefusedError, match=found) as caught:
        bloom.serialize(pa.array(keys, pa.string()))
    assert "_hoodie_record_key" in str(caught.value)
