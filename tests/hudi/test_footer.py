"""One record-key footer for the writer and resize, its key range in Java's `String.compareTo` order."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runner.errors import RefusedError
from runner.execute.resize_job import GroupRewrite, rewrite_group
from runner.hudi import bloom, bloom_merge, footer
from runner.storage.local import LocalStorage
from runner.writer.files import CreateHandle, FileContext
from runner.writer.schema import META_COLUMNS, PARTITION_PATH, RECORD_KEY
from tests.conftest import FIXTURES

EMOJI, LAST_BMP = "\U0001F600", "\uFFFF"  # Java: "\U0001F600" < "\uFFFF"; code point order: the reverse
KEYS = ["k-b", f"k-{EMOJI}", "k-a", f"k-{LAST_BMP}", "k-\uE000", "k-z"]
INSTANT = "20240101000000000"


def java_units(text: str) -> list[int]:
    """The UTF-16 code units Java stores, computed by hand (surrogate pairs above U+FFFF)."""
    units = []
    for char in text:
        point = ord(char)
        if point < 0x10000:
            units.append(point)
        else:
            units += [0xD800 + ((point - 0x10000) >> 10), 0xDC00 + ((point - 0x10000) & 0x3FF)]
    return units


def java_range(keys: list[str]) -> tuple[str, str]:
    return min(keys, key=java_units), max(keys, key=java_units)


def write_with_the_writer(root: Path, keys: list[str], partition: str = "p") -> pq.ParquetFile:
    """One base file written by the writer's create handle, the code a Spark write task runs."""
    schema = pa.schema([pa.field(name, pa.string()) for name in META_COLUMNS] + [pa.field("v", pa.int64())])
    ctx = FileContext(LocalStorage(str(root)), INSTANT, "0-1-2", 0, schema, "{}", 1 << 30, 100)
    handle = CreateHandle(ctx, partition, "aaaaaaaa-0000-0000-0000-000000000000-0")
    half = len(keys) // 2  # two writes, so the range spans row groups as a real write's does
    for part in (keys[:half], keys[half:]):
        handle.write(pa.table({RECORD_KEY: part, PARTITION_PATH: [partition] * len(part), "v": range(len(part))}))
    (written,) = handle.close()
    return pq.ParquetFile(root / partition / written.name)


def resize(root: Path, inputs: list[str]) -> pq.ParquetFile:
    done = rewrite_group(LocalStorage(str(root)), GroupRewrite("p", "bbbbbbbb-0000-0000-0000-000000000000-0",
                                                                tuple(inputs)), "20240102000000000", "0-0-0")
    return pq.ParquetFile(root / done.path)


def key_footer(file: pq.ParquetFile) -> dict[bytes, bytes]:
    meta = file.metadata.metadata or {}
    return {k: v for k, v in meta.items() if k.startswith((b"hoodie_", b"org.apache.hudi"))}


def test_java_order_puts_supplementary_characters_before_the_end_of_the_bmp() -> None:
    assert footer.key_range(pa.array([LAST_BMP, EMOJI])) == (EMOJI, LAST_BMP)
    assert footer.key_range(pa.array(KEYS)) == java_range(KEYS) == ("k-a", f"k-{LAST_BMP}")
    assert footer.merged_range([("k-a", f"k-{EMOJI}"), ("k-\uE000", "k-\uE001")]) == ("k-a", "k-\uE001")


def test_no_keys_gives_no_range_but_still_a_bloom_filter() -> None:
    entries = footer.record_key_footer(pa.array([], pa.string()))
    assert footer.key_range(pa.array([None], pa.string())) is None
    assert set(entries) == {footer.BLOOM_FILTER, footer.BLOOM_FILTER_TYPE_CODE}


def test_an_empty_record_key_gets_no_footer_hudi_could_not_have_built() -> None:
    # Hudi's HashFunction rejects an empty key, so the footer is refused rather than invented.
    with pytest.raises(RefusedError, match="_hoodie_record_key: row 1 of 2 is an empty string"):
        footer.record_key_footer(pa.chunked_array([["k-a"], [""]]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=4), min_size=1, max_size=12))
def test_key_range_is_javas_string_order(keys: list[str]) -> None:
    keys = [k for k in keys if not any(0xD800 <= ord(c) <= 0xDFFF for c in k)] or ["x"]
    assert footer.key_range(pa.array(keys)) == java_range(keys)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=4), min_size=0, max_size=12), st.integers(0, 3))
def test_the_byte_scan_finds_exactly_the_characters_from_u_e000(keys: list[str], split: int) -> None:
    keys = [k for k in keys if not any(0xD800 <= ord(c) <= 0xDFFF for c in k)]
    expected = any(ord(c) >= 0xE000 for k in keys for c in k)
    assert footer._may_order_differently(pa.array(keys, pa.string())) == expected
    chunked = pa.chunked_array([pa.array(keys[:split], pa.string()), pa.array(keys[split:], pa.string())])
    assert footer._may_order_differently(chunked) == expected
    # A slice of a column reads only its own keys' bytes.
    hidden = pa.array([EMOJI, *keys, "\uE000"], pa.string()).slice(1, len(keys))
    assert footer._may_order_differently(hidden) == expected


def test_a_later_chunk_with_a_supplementary_character_takes_javas_order() -> None:
    chunked = pa.chunked_array([pa.array(["k-a"]), pa.array([f"k-{EMOJI}", f"k-{LAST_BMP}"])])
    assert footer.key_range(chunked) == ("k-a", f"k-{LAST_BMP}")


def test_the_writer_records_the_java_range(tmp_path: Path) -> None:
    written = key_footer(write_with_the_writer(tmp_path, KEYS))
    low, high = java_range(KEYS)
    assert (written[b"hoodie_min_record_key"].decode(), written[b"hoodie_max_record_key"].decode()) == (low, high)


def test_resize_and_the_writer_build_the_same_footer(tmp_path: Path) -> None:
    written = write_with_the_writer(tmp_path, KEYS)
    resized = resize(tmp_path, [f"p/{name}" for name in _names(tmp_path / "p")])
    assert key_footer(resized) == key_footer(written)


def test_resize_of_files_without_a_range_takes_the_java_range_of_their_keys(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    for index, part in enumerate((KEYS[:3], KEYS[3:])):  # as Spark's own Parquet writer leaves them
        pq.write_table(pa.table({RECORD_KEY: part, "_hoodie_file_name": ["x"] * len(part)}),
                       tmp_path / f"p/f{index}-0_0-1-1_2024010100000000{index}.parquet")
    resized = key_footer(resize(tmp_path, [f"p/{name}" for name in _names(tmp_path / "p")]))
    assert (resized[b"hoodie_min_record_key"].decode(), resized[b"hoodie_max_record_key"].decode()) == java_range(KEYS)


def test_resize_without_key_column_merges_the_inputs_ranges_in_java_order(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    for index, (low, high) in enumerate((("a", f"k-{EMOJI}"), ("b", f"k-{LAST_BMP}"))):
        table = pa.table({"v": [index]}).replace_schema_metadata(
            {footer.MIN_RECORD_KEY: low, footer.MAX_RECORD_KEY: high})
        pq.write_table(table, tmp_path / f"p/f{index}-0_0-1-1_2024010100000000{index}.parquet")
    resized = key_footer(resize(tmp_path, [f"p/{name}" for name in _names(tmp_path / "p")]))
    assert resized == {b"hoodie_min_record_key": b"a", b"hoodie_max_record_key": f"k-{LAST_BMP}".encode()}


FIXTURE_ZIPS = ["sample_table/cow/v6_simplekeygen_nonhivestyle.zip", "sample_table/cow/v6_nonpartitioned.zip"]


@pytest.mark.parametrize("zip_name", FIXTURE_ZIPS)
def test_the_footer_equals_the_one_hudi_wrote(zip_name: str) -> None:
    with zipfile.ZipFile(FIXTURES / zip_name) as archive:
        members = [m for m in archive.namelist() if m.endswith(".parquet") and "__MACOSX" not in m]
        assert members
        for member in members:
            parquet = pq.ParquetFile(io.BytesIO(archive.read(member)))
            keys = parquet.read(columns=[RECORD_KEY]).column(0)
            ours = {k.encode(): v.encode() for k, v in footer.record_key_footer(keys).items()}
            assert ours == key_footer(parquet), member


def code_point_range(keys: list[str]) -> tuple[str, str]:
    """The range a writer ordering by code point (or UTF-8 bytes, the same order) would record."""
    return min(keys), max(keys)


def inputs_of(parts: list[list[str]], ranges: list[tuple[str, str] | None]) -> list[bloom_merge.InputFilter]:
    return [bloom_merge.InputFilter(f"p/f{i}.parquet", bloom.TYPE_CODE, bloom.serialize(pa.array(part)), len(part), r)
            for i, (part, r) in enumerate(zip(parts, ranges, strict=True))]


def merged_range_of(parts: list[list[str]], ranges: list[tuple[str, str] | None]) -> tuple[str, str]:
    entries, source = footer.merged_record_key_footer(inputs_of(parts, ranges),
                                                      pa.chunked_array([pa.array(p, pa.string()) for p in parts]))
    assert source == "merged"
    return entries[footer.MIN_RECORD_KEY], entries[footer.MAX_RECORD_KEY]


RECORDED = ["java", "code point", "missing", "narrower"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=6), min_size=1, max_size=4),
       st.lists(st.sampled_from(RECORDED), min_size=4, max_size=4))
# A range recorded in code point order that Java's order contradicts (the emoji sorts first in Java).
@example([[f"k-{LAST_BMP}", f"k-{EMOJI}"], ["k-\uE000"]], ["code point", "java", "java", "java"])
# A range that excludes its file's own last key (another file's, or stale).
@example([["a", "b", "z"], ["d"]], ["narrower", "java", "java", "java"])
def test_the_merged_range_is_javas_range_of_the_keys_whatever_the_inputs_record(parts: list[list[str]],
                                                                                recorded: list[str]) -> None:
    parts = [[k for k in p if not any(0xD800 <= ord(c) <= 0xDFFF for c in k)] or ["x"] for p in parts]
    ranges: list[tuple[str, str] | None] = []
    for part, how in zip(parts, recorded, strict=False):
        if how == "java":
            ranges.append(java_range(part))
        elif how == "code point":
            ranges.append(code_point_range(part))
        elif how == "narrower":  # the range of all but the file's last key: a sampled key lies outside
            ranges.append(java_range(part[:-1]) if len(part) > 1 and part[-1] not in part[:-1]
                          and java_range(part[:-1]) != java_range(part) else None)
        else:
            ranges.append(None)
    assert merged_range_of(parts, ranges) == java_range([k for p in parts for k in p])


def test_recorded_ranges_that_can_be_trusted_spare_the_scan_of_the_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # Keys with characters from U+E000 up between bounds without: any order gives these bounds.
    parts = [["a-1", f"b-{EMOJI}", "c-1"], [f"d-{LAST_BMP}", "d-1", "e-1", "d-\uE000"]]

    def no_scan(_keys: object) -> None:
        raise AssertionError("the keys were scanned")

    monkeypatch.setattr(footer, "key_range", no_scan)
    assert merged_range_of(parts, [java_range(p) for p in parts]) == ("a-1", "e-1")


@pytest.mark.parametrize("bounds", [
    ("a-1", f"z-{EMOJI}"),  # a bound with a character from U+E000 up: its order is not known
    ("b", "a"),  # not a range
])
def test_a_range_whose_order_is_not_known_is_not_trusted(monkeypatch: pytest.MonkeyPatch,
                                                         bounds: tuple[str, str]) -> None:
    scanned = []
    monkeypatch.setattr(footer, "key_range", lambda keys: scanned.append(keys) or ("a-1", f"z-{EMOJI}"))
    merged_range_of([["a-1", f"z-{EMOJI}"]], [bounds])
    assert scanned


def test_resize_of_hudi_written_files_writes_the_footer_a_scan_of_the_keys_gives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every base file of two tables Hudi wrote, as one group: its range from their recorded ones,
    # and the footer byte for byte the one computed from the keys (the code before).
    for index, zip_name in enumerate(FIXTURE_ZIPS):
        with zipfile.ZipFile(FIXTURES / zip_name) as archive:
            for member in archive.namelist():
                if member.endswith(".parquet") and "__MACOSX" not in member:
                    name = member.rsplit("/", 1)[-1]
                    (tmp_path / f"run{index}" / "p").mkdir(parents=True, exist_ok=True)
                    for run in ("trusted", "scanned"):
                        (tmp_path / run / "p").mkdir(parents=True, exist_ok=True)
                        (tmp_path / run / "p" / name).write_bytes(archive.read(member))
    names = _names(tmp_path / "trusted" / "p")
    assert len(names) >= 4
    recorded = footer._recorded_range
    trusted = []
    # The inputs' filters are merged (each value read from its footer when the merge needs it), not rebuilt.
    monkeypatch.setattr(footer, "record_key_footer", lambda keys: pytest.fail("the bloom filter was rebuilt"))
    monkeypatch.setattr(footer, "_recorded_range", lambda *a: trusted.append(recorded(*a)) or trusted[-1])
    with_ranges = key_footer(resize(tmp_path / "trusted", [f"p/{n}" for n in names]))
    assert trusted and trusted[0] is not None
    monkeypatch.undo()
    monkeypatch.setattr(footer, "_recorded_range", lambda *a: None)
    scanned = key_footer(resize(tmp_path / "scanned", [f"p/{n}" for n in names]))
    assert with_ranges == scanned
    assert set(scanned) == {b"hoodie_min_record_key", b"hoodie_max_record_key", footer.BLOOM_FILTER.encode(),
                            footer.BLOOM_FILTER_TYPE_CODE.encode()}


def test_resize_of_non_ascii_keys_written_by_the_writer_writes_javas_range(tmp_path: Path) -> None:
    # Bounds without characters from U+E000 up (trusted) and with (scanned), each over keys holding them.
    for folder, keys in (("inner", ["a-1", *KEYS, "z-1"]), ("outer", KEYS)):
        group = tmp_path / folder / "p"
        group.mkdir(parents=True)
        for index, part in enumerate((keys[::2], keys[1::2])):
            write_with_the_writer(tmp_path / f"{folder}{index}", part)
            (written,) = (tmp_path / f"{folder}{index}" / "p").glob("*.parquet")
            written.rename(group / f"f{index}-0_0-1-1_2024010100000000{index}.parquet")
        resized = key_footer(resize(tmp_path / folder, [f"p/{n}" for n in _names(group)]))
        assert (resized[b"hoodie_min_record_key"].decode(), resized[b"hoodie_max_record_key"].decode()) \
            == java_range(keys)


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".parquet")


@pytest.mark.xfail(strict=True, reason="accepted limit, for the lead to decide: a recorded range is checked only "
                                       "on each input's sampled keys (footer._SAMPLE_KEYS), so a footer that "
                                       "leaves out an unsampled key passes it on; before f2f5ff0 the range "
                                       "came from the keys and this passed")
def test_a_recorded_range_that_leaves_out_an_unsampled_key_is_not_passed_on(tmp_path: Path) -> None:
    # Hudi's bloom index skips a file for a key outside its range: the resized file must cover
    # every key it holds even when an input's footer claims less, else an upsert of that key
    # writes it again elsewhere (a duplicate). The input's own filter is right, so it is merged.
    (tmp_path / "p").mkdir()
    parts = [[f"k-{i:03d}" for i in range(100)], [f"m-{i:03d}" for i in range(10)]]
    parts[0][1] = "a-unsampled"  # row 1 of 100: not among the 32 sampled rows
    assert 1 not in footer._spread(0, 100)
    for n, keys in enumerate(parts):
        recorded = java_range([k for k in keys if k != "a-unsampled"])
        metadata = {footer.BLOOM_FILTER: bloom.serialize(pa.array(keys)),
                    footer.BLOOM_FILTER_TYPE_CODE: bloom.TYPE_CODE,
                    footer.MIN_RECORD_KEY: recorded[0], footer.MAX_RECORD_KEY: recorded[1]}
        table = pa.table({**{name: pa.array([f"2024010{n + 1}000000000"] * len(keys)) for name in META_COLUMNS},
                          RECORD_KEY: keys, PARTITION_PATH: ["p"] * len(keys), "v": range(len(keys))})
        table = table.select([*META_COLUMNS, "v"]).replace_schema_metadata(metadata)
        pq.write_table(table, tmp_path / "p" / f"f{n}-0_0-1-{n}_2024010{n + 1}000000000.parquet")
    resized = key_footer(resize(tmp_path, [f"p/{n}" for n in _names(tmp_path / "p")]))
    assert (resized[b"hoodie_min_record_key"].decode(), resized[b"hoodie_max_record_key"].decode()) \
        == java_range([k for keys in parts for k in keys])
