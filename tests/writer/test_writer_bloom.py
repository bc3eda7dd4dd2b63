"""The bloom filter footer is byte-identical to the ones Hudi 0.14 wrote in the hudi-rs fixtures."""

from __future__ import annotations

import base64
import io
import random
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from runner.hudi import bloom
from tests.conftest import FIXTURES

FIXTURE_ZIPS = [
    "sample_table/cow/v6_simplekeygen_nonhivestyle.zip",
    "sample_table/cow/v6_complexkeygen_hivestyle.zip",
    "sample_table/cow/v6_nonpartitioned.zip",
]


def _base_files() -> list[tuple[str, bytes]]:
    found = []
    for name in FIXTURE_ZIPS:
        with zipfile.ZipFile(FIXTURES / name) as archive:
            for member in archive.namelist():
                if member.endswith(".parquet") and "__MACOSX" not in member:
                    found.append((member.rsplit("/", 1)[-1], archive.read(member)))
    return found


@pytest.mark.parametrize(("name", "data"), _base_files(), ids=lambda v: v[:12] if isinstance(v, str) else "")
def test_filter_equals_the_one_hudi_wrote(name: str, data: bytes) -> None:
    parquet = pq.ParquetFile(io.BytesIO(data))
    footer = parquet.metadata.metadata
    keys = parquet.read(columns=["_hoodie_record_key"]).column(0).combine_chunks()
    assert footer[b"hoodie_bloom_filter_type_code"].decode() == bloom.TYPE_CODE
    assert bloom.serialize(keys) == footer[b"org.apache.hudi.bloomfilter"].decode()


def test_vectorized_murmur_matches_the_reference_on_every_tail_length_and_non_ascii() -> None:
    rng = random.Random(7)
    keys = [bytes(rng.randrange(256) for _ in range(length)) for length in range(1, 13) for _ in range(3)]
    keys += ["é-ü-✓".encode(), "ключ".encode(), b"\xff\xfe\xfd"]
    for group in bloom._by_length(pa.array(keys, pa.binary())):
        length = len(group[0].as_py())
        words = [bloom._word(group, 4 * i) for i in range(length // 4)]
        tail = [bloom._signed_byte(group, i) for i in range(4 * (length // 4), length)]
        seeds = pa.array([rng.randrange(2**32) for _ in range(len(group))], pa.uint32())
        got = bloom._murmur(words, tail, length, seeds).to_pylist()
        expected = [bloom.murmur_reference(k, s) for k, s in zip(group.to_pylist(), seeds.to_pylist(), strict=True)]
        assert got == expected


def test_every_key_is_a_member() -> None:
    keys = [f"order-{i}" for i in range(500)]
    data = base64.b64decode(bloom.serialize(pa.array(keys)))
    vector = data[25 + 13:]
    for key in keys:
        seed = 0
        for _ in range(bloom.NUM_HASHES):
            seed = bloom.murmur_reference(key.encode(), seed)
            signed = seed - 2**32 if seed >= 2**31 else seed
            bit = abs(signed) % bloom.VECTOR_SIZE
            assert vector[bit // 8] >> (bit % 8) & 1


def test_rows_grow_to_the_bound_then_take_keys_round_robin() -> None:
    assert [len(r) for r in bloom._row_assignment(60_000)] == [60_000]
    assert [len(r) for r in bloom._row_assignment(60_001)] == [60_000, 1]
    # The row that reaches the bound hands key 120,000 to row 0, then rows alternate from row 0.
    assert [len(r) for r in bloom._row_assignment(120_003)] == [60_002, 60_001]
    assert bloom._current_records(120_003) == 60_003
