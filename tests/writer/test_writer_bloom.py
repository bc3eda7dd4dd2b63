"""The bloom filter footer is byte-identical to the ones Hudi 0.14 wrote in the hudi-rs fixtures.

Its equality with a plain port of Hudi's code on any keys is in tests/hudi/test_bloom.py."""

from __future__ import annotations

import io
import logging
import zipfile
from collections.abc import Callable
from pathlib import Path

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


def test_a_merged_file_s_filter_extends_the_old_one_and_equals_a_rebuilt_one(
        project: Callable[..., Path], caplog: pytest.LogCaptureFixture) -> None:
    """An upsert's merge hashes only its inserts' keys into the old file's filter; the footer is still
    byte for byte the one built from every key of the new file, and readers see every record."""
    import pyarrow as pa

    import runner
    from runner.hudi import footer
    from tests.writer.writer_helpers import oracle_rows, table_yaml

    root = project(t=table_yaml("t"))

    def rows(ids: range, ts: int) -> pa.Table:
        return pa.table({"id": pa.array(ids, pa.int64()), "region": ["eu"] * len(ids),
                         "name": [f"n{i}-{ts}" for i in ids], "ts": pa.array([ts] * len(ids), pa.int64())})

    runner.write(rows(range(0, 3_000), 1), "t", project_dir=root)
    with caplog.at_level(logging.DEBUG, logger="runner.writer.files"):
        result = runner.write(rows(range(2_000, 4_000), 2), "t", project_dir=root)  # 1,000 updates, 1,000 inserts
    assert result.num_writes == 4_000
    assert any("bloom filter extended" in r.getMessage() for r in caplog.records), caplog.text
    base = root / "warehouse" / "t"
    latest = max(base.rglob("*.parquet"), key=lambda p: p.name.rsplit("_", 1)[1])
    parquet = pq.ParquetFile(latest)
    keys = parquet.read(columns=["_hoodie_record_key"]).column(0)
    written = {k.decode(): v.decode() for k, v in (parquet.metadata.metadata or {}).items()}
    assert {k: written[k] for k in footer.record_key_footer(keys)} == footer.record_key_footer(keys)
    assert [r["name"] for r in oracle_rows(base, columns=("id", "name"))] == sorted(
        [f"n{i}-1" for i in range(0, 2_000)] + [f"n{i}-2" for i in range(2_000, 4_000)], key=repr)
