"""The bloom filter footer is byte-identical to the ones Hudi 0.14 wrote in the hudi-rs fixtures.

Its equality with a plain port of Hudi's code on any keys is in tests/hudi/test_bloom.py."""

from __future__ import annotations

import io
import zipfile

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
