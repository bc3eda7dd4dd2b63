"""Data file names: parsing keeps the exact name, and equality ignores how a file was built."""

from __future__ import annotations

from runner.hudi.files import BaseFile, LogFile
from runner.hudi.instant import InstantTime


def test_a_parsed_base_file_keeps_its_name_and_equals_one_built_from_parts():
    name = "a1-0_0-7-9_20240101000000123.parquet"
    parsed = BaseFile.parse(name, 42)
    built = BaseFile("a1-0", "0-7-9", InstantTime("20240101000000123"), "parquet", 42)
    assert parsed is not None and parsed.name == built.name == name
    assert parsed == built and hash(parsed) == hash(built)
    assert parsed.instant_time == "20240101000000123" and isinstance(parsed.instant_time, InstantTime)


def test_instant_times_of_parsed_files_order_as_instant_times():
    old = BaseFile.parse("a-0_0-1-2_20240101000000.parquet")  # 14 digits sorts as ...999
    new = BaseFile.parse("a-0_0-1-2_20240101000000500.parquet")
    log = LogFile.parse(".a-0_20240101000000500.log.1_0-1-2")
    assert old is not None and new is not None and log is not None
    assert new.instant_time < old.instant_time and log.instant_time == new.instant_time
