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
import binascii
import functools
import hashlib
import io
import random
import struct
import zipfile
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runner.errors import RefusedError
from runner.hudi import bloom, bloom_merge
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
    hashed = next(bloom._hash_rows(block, 1, seeds))
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


# -- merging the inputs' filters (binary-copy resize) ------------------------------------------------
#
# Checked with code that shares nothing with `runner.hudi.bloom_merge`: the filter is decoded here
# from its bytes as Hudi's `readFields` reads it, and membership is Hudi's `membershipTest` (some
# row holds every bit of the key), with the bit positions of the reference port above for a sample
# of keys and of `bloom.bit_positions` (equal to the port, tested above) for every key.


def decode_dynamic(value: str) -> tuple[tuple[int, ...], tuple[int, ...], list[np.ndarray]]:
    """`InternalDynamicBloomFilter.readFields`: the filter header, (nr, currentNbRecord, rows) and
    each row's bits as a boolean vector; asserts every row header equals the filter's and that no
    byte is left over."""
    data = base64.b64decode(value)
    header = struct.unpack(">iibi", data[:13])
    shape = struct.unpack(">iii", data[13:25])
    row_bytes = (header[3] + 7) // 8
    rows, at = [], 25
    for _ in range(shape[2]):
        assert struct.unpack(">iibi", data[at : at + 13]) == header
        bits = np.unpackbits(np.frombuffer(data[at + 13 : at + 13 + row_bytes], np.uint8), bitorder="little")
        rows.append(bits[: header[3]].astype(bool))
        at += 13 + row_bytes
    assert at == len(data)
    return header, shape, rows


def reference_shape(n: int) -> tuple[int, int, int]:
    """(nr, currentNbRecord, rows) after `n` adds, by running `DynamicFilter`'s counters only."""
    built = DynamicFilter()
    for _ in range(n):
        if built._active() is None:
            built.matrix.append(set())
            built.current_nb_record = 0
        built.current_nb_record += 1
    return NR, built.current_nb_record, len(built.matrix)


def member_mask(rows: list[np.ndarray], positions: np.ndarray) -> np.ndarray:
    """membershipTest for keys given as (hashes, keys) bit positions."""
    return np.logical_or.reduce([row[positions].all(axis=0) for row in rows])


def merged_of(parts: list[list[str]]) -> bloom_merge.MergedFilter:
    return bloom_merge.merge([bloom_merge.InputFilter(f"in{i}", bloom.TYPE_CODE, bloom.serialize(pa.array(p)), len(p))
                              for i, p in enumerate(parts)])


# Totals in one row, in two rows below the bound (120,000) and in the round robin past it.
TOTALS = st.one_of(st.integers(1, 400), st.integers(59_000, 61_000), st.integers(110_000, 135_000))


KEY_TEXT = st.text(min_size=1, max_size=12).filter(lambda k: not any(0xD800 <= ord(c) <= 0xDFFF for c in k))


@settings(max_examples=12, deadline=None)
@given(total=TOTALS, cuts=st.lists(st.floats(0.0, 1.0), max_size=6), extra=st.lists(KEY_TEXT, max_size=5))
# Always: the round robin past 120,000 from an input of two rows and one of one row, and just past it.
@example(total=125_000, cuts=[0.8], extra=[])
@example(total=120_002, cuts=[0.5, 0.9999], extra=["é-ü-✓ \U0001F600"])
def test_every_key_of_every_input_is_a_member_of_the_merged_filter(total: int, cuts: list[float],
                                                                   extra: list[str]) -> None:
    # Inputs cut at random places (of one row and of two rows); keys of mixed lengths, some non-ASCII.
    keys = [*extra[:total], *(f"k{i}-{'é' * (i % 7)}" for i in range(total - len(extra[:total])))]
    bounds = sorted({0, total, *(int(c * total) for c in cuts)})
    parts = [keys[a:b] for a, b in pairwise(bounds) if b > a]
    merged = merged_of(parts)

    header, shape, rows = decode_dynamic(merged.value)
    assert header == (-1, HASHES, 1, BITS)
    assert shape == reference_shape(total)  # the rows and counts Hudi's filter of these keys has
    assert member_mask(rows, bloom.bit_positions(pa.array(keys))).all()
    rng = np.random.default_rng(total)
    sample = {0, total - 1} | {int(i) for i in rng.integers(0, total, 150)}
    for i in sample:
        assert member_mask(rows, np.array(positions(keys[i].encode()))[:, None])[0], keys[i]
    if total <= NR:  # one row: the OR of the inputs' bits is exactly the filter of all the keys
        assert merged.value == bloom.serialize(pa.array(keys))


def test_the_merged_filter_s_false_positive_rate_stays_near_the_rebuilt_one() -> None:
    # 400,000 keys: rows past the bound hold ~200,000 keys each, where the rate is measurable.
    # Uneven inputs (one of two rows) so the balancing matters.
    sizes = [110_000, 90_000, *([10_000] * 20)]
    keys, parts, start = [], [], 0
    for size in sizes:
        part = [f"id:{start + i}" for i in range(size)]
        parts.append(part)
        keys += part
        start += size
    merged = decode_dynamic(merged_of(parts).value)[2]
    rebuilt = decode_dynamic(bloom.serialize(pa.array(keys)))[2]
    fresh = bloom.bit_positions(pa.array([f"fresh:{i}" for i in range(50_000)]))
    merged_rate, rebuilt_rate = member_mask(merged, fresh).mean(), member_mask(rebuilt, fresh).mean()
    print(f"false-positive rate over 50,000 fresh keys: merged {merged_rate:.4f}, rebuilt {rebuilt_rate:.4f}")
    assert len(merged) == len(rebuilt) == 2
    assert merged_rate <= 1.5 * rebuilt_rate + 0.005


def test_simple_filters_of_one_geometry_merge_into_the_filter_of_all_their_keys() -> None:
    header = struct.pack(">iibi", -1, HASHES, 1, BITS)

    def simple(keys: list[str]) -> str:  # SimpleBloomFilter.serializeToString: one InternalBloomFilter
        bits = bytearray((BITS + 7) // 8)
        for key in keys:
            for p in positions(key.encode()):
                bits[p // 8] |= 1 << (p % 8)
        return base64.b64encode(header + bytes(bits)).decode()

    parts = [["a", "b"], ["c"], ["d", "e", "f"]]
    merged = bloom_merge.merge([bloom_merge.InputFilter(f"in{i}", "SIMPLE", simple(p), len(p))
                                for i, p in enumerate(parts)])
    assert (merged.type_code, merged.value) == ("SIMPLE", simple([k for p in parts for k in p]))


def _bad(value: str | None, records: int, type_code: str | None = bloom.TYPE_CODE) -> bloom_merge.InputFilter:
    return bloom_merge.InputFilter("p/bad.parquet", type_code, value, records)


GOOD = bloom_merge.InputFilter("p/good.parquet", bloom.TYPE_CODE, bloom.serialize(pa.array(["a", "b"])), 2)
OTHER_GEOMETRY = base64.b64encode(struct.pack(">iibi", -1, 7, 1, 1000) + struct.pack(">iii", 100, 1, 1)
                                  + struct.pack(">iibi", -1, 7, 1, 1000) + bytes(125)).decode()


@pytest.mark.parametrize(("bad", "found"), [
    (_bad(None, 3), "p/bad.parquet has no bloom filter"),
    (_bad("not base64!", 3), "p/bad.parquet: bloom filter is not Base64"),
    (_bad(OTHER_GEOMETRY, 1), "bloom filter header (-1, 7, 1, 1000), expected (-1, 30, 1, 2587966)"),
    # A filter of 3 keys on a file of 70,000 rows: a Hudi filter of that file has two rows.
    (_bad(bloom.serialize(pa.array(["x", "y", "z"])), 70_000),
     "(keys per row, keys in the last row, rows) is (60000, 3, 1), expected (60000, 10000, 2) for its 70000 records"),
    (_bad(bloom.serialize(pa.array(["x"]))[:-8], 1), "p/bad.parquet: bloom filter is"),
    (_bad(GOOD.value, 2, "SIMPLE"), "filter types ['DYNAMIC_V0', 'SIMPLE']"),
    (_bad(GOOD.value, 2, None), "filter types ['DYNAMIC_V0', 'None']"),
])
def test_filters_that_cannot_be_merged_safely_are_refused_with_the_reason(bad, found) -> None:
    with pytest.raises(bloom_merge.NotMergeable) as caught:
        bloom_merge.merge([GOOD, bad])
    assert found in str(caught.value)


def test_the_merge_writes_the_bytes_it_wrote_before_inputs_were_decoded_one_at_a_time() -> None:
    # Inputs of one, two and three rows and the round robin past the bound, so rows are balanced
    # across inputs; the digest is the merge's before the resize6 round decoded and ORed each input
    # in turn instead of collecting every input's rows first.
    parts, start = [], 0
    for size in (130_000, 61_000, 5, 59_999, 1, 120_001):
        parts.append([f"id:{start + i}" for i in range(size)])
        start += size
    value = merged_of(parts).value
    assert hashlib.sha256(value.encode()).hexdigest() == \
        "ca9d8ad91b127904fdd9abce5a199ba4bbda6e1454209150129ed4c3079c3b7a"


def test_a_value_read_when_the_merge_needs_it_merges_as_the_value_itself() -> None:
    parts = [["a", "b"], ["c"], [f"k{i}" for i in range(70_000)]]
    eager = [bloom_merge.InputFilter(f"in{i}", bloom.TYPE_CODE, bloom.serialize(pa.array(p)), len(p))
             for i, p in enumerate(parts)]
    read: list[str] = []

    def loader(f: bloom_merge.InputFilter) -> bloom_merge.InputFilter:
        def load() -> str | bytes | None:
            read.append(f.path)
            return f.value
        return bloom_merge.InputFilter(f.path, f.type_code, None, f.records, load=load)

    lazy = [loader(f) for f in eager]
    assert bloom_merge.merge(lazy).value == bloom_merge.merge(eager).value
    assert read == ["in0", "in1", "in2"]  # each read once, in input order
    gone = bloom_merge.InputFilter("p/gone.parquet", bloom.TYPE_CODE, None, 1, load=lambda: None)
    with pytest.raises(bloom_merge.NotMergeable, match=r"p/gone\.parquet has no bloom filter"):
        bloom_merge.merge([*lazy, gone])
    with pytest.raises(bloom_merge.NotMergeable, match=r"p/none\.parquet has no bloom filter"):
        bloom_merge.merge([*lazy, bloom_merge.InputFilter("p/none.parquet", bloom.TYPE_CODE, None, 1)])


def _strict(value: str | bytes) -> bytes | type[Exception]:
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except ValueError as error:  # binascii.Error is one
        return type(error)


@pytest.mark.parametrize("size", [300_000, 300_001, 300_002])  # no padding, `==`, `=`
def test_a_long_filter_value_decodes_and_is_refused_exactly_as_binascii_strict_mode_does(size: int) -> None:
    """Long values go through pybase64 (`bloom_merge.base64_decoded`): every character outside the
    alphabet, padding anywhere but at the end, data after padding and a torn last quantum refuse
    the value as `binascii` refuses it, and every valid value gives the same bytes."""
    value = base64.b64encode(random.Random(size).randbytes(size))
    assert bloom_merge.base64_decoded(value) == bloom_merge.base64_decoded(value.decode()) == _strict(value)
    middle = len(value) // 2
    spoiled = [value[:at] + char + value[at + 1:]
               for at in (0, 1, 2, 3, middle, middle + 1, len(value) - 5, len(value) - 4, len(value) - 1)
               for char in (b"=", b"!", b"\n", b" ", b"-", b"\xff", b"\x00")]
    spoiled += [value + b"AAAA", value[:-1], value[:-4] + b"A===", value[:-4] + b"====", value + b"=",
                value[:middle] + b"====" + value[middle + 4:]]
    for bad in spoiled:
        expected = _strict(bad)
        if isinstance(expected, bytes):
            assert bloom_merge.base64_decoded(bad) == expected
        else:
            with pytest.raises(ValueError):
                bloom_merge.base64_decoded(bad)
    with pytest.raises(ValueError):  # a str value must be ASCII, as for binascii
        bloom_merge.base64_decoded(value.decode()[:-8] + "\u00e9AAAAAAA")


def test_row_sizes_follow_hudis_row_assignment() -> None:
    for n in (0, 1, 59_999, 60_000, 60_001, 119_999, 120_000, 120_001, 120_002, 120_003, 125_000):
        assert bloom_merge._row_sizes(n) == [len(m) for m in bloom._row_members(n)], n
        assert sum(bloom_merge._row_sizes(n)) == n


# The filter of a merged file: the old file's filter extended with the keys after its own.


def _keys(count: int, start: int = 0) -> pa.Array:
    return pa.array([f"key-{i}-{i * 7919 % 1000}" for i in range(start, start + count)])


@pytest.mark.parametrize(("held", "added"), [
    (1, 0), (1, 1), (1_000, 2_500), (59_990, 20), (60_000, 1), (59_999, 70_000), (100_000, 30_000), (120_000, 5),
])
def test_extending_a_filter_equals_the_filter_of_all_the_keys(held: int, added: int) -> None:
    """Across the row boundaries (60,000 keys, then 100,000 where keys go round robin)."""
    keys = _keys(held + added)
    old = _footer_filter(bloom.serialize(keys.slice(0, held)), held)
    assert bloom.extend(bloom_merge.dynamic_rows(old), held, keys.slice(held)) == bloom.serialize(keys)


def _footer_filter(value: str, records: int, type_code: str = bloom.TYPE_CODE) -> bloom_merge.InputFilter:
    from runner.hudi import footer

    return footer.input_filter("p/old.parquet", {BLOOM: value.encode(), b"hoodie_bloom_filter_type_code":
                                                 type_code.encode()}, records)


def test_the_merged_file_footer_extends_the_old_filter_when_it_holds_the_old_keys() -> None:
    from runner.hudi import footer

    keys = _keys(5_000)
    old = _footer_filter(bloom.serialize(keys.slice(0, 4_000)), 4_000)
    in_chunks = pa.chunked_array([keys.slice(0, 4_500), keys.slice(4_500)])
    entries, origin = footer.extended_record_key_footer(old, in_chunks)
    assert origin == "extended"
    assert entries == footer.record_key_footer(keys)


@pytest.mark.parametrize(("old_value", "records", "type_code", "why"), [
    ("filter of other keys", 4_000, bloom.TYPE_CODE, "does not hold its record keys"),
    ("filter of the keys", 3_999, bloom.TYPE_CODE, "for its 3999 records"),
    ("filter of the keys", 6_000, bloom.TYPE_CODE, "6000 records, and the new file holds 5000"),
    ("filter of the keys", 4_000, "SIMPLE", "type 'SIMPLE'"),
    ("not base64", 4_000, bloom.TYPE_CODE, "not Base64"),
])
def test_an_old_filter_that_cannot_be_extended_is_rebuilt_with_the_reason(old_value: str, records: int,
                                                                          type_code: str, why: str) -> None:
    from runner.hudi import footer

    keys = _keys(5_000)
    value = {"filter of other keys": bloom.serialize(_keys(4_000, start=10_000)),
             "filter of the keys": bloom.serialize(keys.slice(0, 4_000)), "not base64": "%%%"}[old_value]
    entries, origin = footer.extended_record_key_footer(_footer_filter(value, records, type_code), keys)
    assert origin.startswith("rebuilt: ") and why in origin, origin
    assert entries == footer.record_key_footer(keys)


def test_a_null_or_empty_key_after_the_old_ones_is_refused_as_a_rebuild_refuses_it() -> None:
    from runner.hudi import footer

    keys = _keys(100)
    old = _footer_filter(bloom.serialize(keys), 100)
    for bad in (pa.array([None], pa.string()), pa.array([""])):
        with pytest.raises(RefusedError, match="_hoodie_record_key: row 100 of 101"):
            footer.extended_record_key_footer(old, pa.concat_arrays([keys, bad]))


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
@example(data=bytes(range(256)) * 3)  # every byte: both alphabet ends, `+` and `/`
def test_filters_are_standard_base64_text(data: bytes) -> None:
    """The footer's text (pybase64's, written straight to a string) is the standard alphabet with padding."""
    text = bloom.base64_text(data)
    assert isinstance(text, str) and text == base64.b64encode(data).decode("ascii")
    assert base64.b64decode(text, validate=True) == data
