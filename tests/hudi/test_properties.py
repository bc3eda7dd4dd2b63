"""hoodie.properties: Java `.properties` parsing and formatting, and the table version gate.

The parser's expectations below were checked against `java.util.Properties.load` / `store` (JDK 17)
while writing this module; the random cross-check itself needs a JVM and is not part of the suite.
"""

from __future__ import annotations

import json
import re
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.errors import TableError, UnsupportedTableError
from runner.hudi import properties as properties_module
from runner.hudi.properties import TableConfig, format_properties, parse_properties
from runner.vocabulary import TableType
from tests.conftest import FIXTURES, fixture_id, fixture_zips

PARSE_CASES = [
    ("key=value", {"key": "value"}),
    ("key:value", {"key": "value"}),
    ("key value", {"key": "value"}),
    ("  key  =  value", {"key": "value"}),
    ("key\t:\tvalue", {"key": "value"}),
    ("key = = value", {"key": "= value"}),
    ("key", {"key": ""}),
    ("key=", {"key": ""}),
    ("=value", {"": "value"}),
    ("key=value  ", {"key": "value  "}),
    ("# comment\n! comment\n  # indented comment\nk=v", {"k": "v"}),
    ("k=v # not a comment", {"k": "v # not a comment"}),
    ("a\\:b=c\\=d", {"a:b": "c=d"}),
    ("a\\ b=c", {"a b": "c"}),
    ("k=\\ leading", {"k": " leading"}),
    ("k=\\t\\n\\r\\f", {"k": "\t\n\r\f"}),
    ("k=\\u0041\\u00e9", {"k": "Aé"}),
    ("k=\\uD83D\\uDE00", {"k": "😀"}),
    ("k=\\q\\\\", {"k": "q\\"}),
    ("k=one \\\n    two", {"k": "one two"}),
    ("k=one\\\r\n  two\\\r  three", {"k": "onetwothree"}),
    ("k=even\\\\\nnext=1", {"k": "even\\", "next": "1"}),
    ("k=a\\\n# still the value", {"k": "a# still the value"}),
    ("# comment \\\nk=v", {"k": "v"}),
    ("k=a\\", {"k": "a"}),
    ("k=a\\\n\nj=b", {"k": "a", "j": "b"}),
    ("\\\n# a comment after a lone backslash", {}),
    ("\\", {"": ""}),
    ("k=1\r\nk=2\rj=3", {"k": "2", "j": "3"}),
    ("", {}),
    ("\n\n   \n\t\n", {}),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES)
def test_parse_matches_java_properties_load(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text, path="hoodie.properties") == expected


def test_parse_malformed_unicode_escape_names_the_file_and_line() -> None:
    with pytest.raises(TableError) as error:
        parse_properties("a=1\n# c\nb=\\u12G4", path="t/.hoodie/hoodie.properties")
    assert "t/.hoodie/hoodie.properties: line 3" in str(error.value)
    assert "'12G4'" in str(error.value)
    assert error.value.path == "t/.hoodie/hoodie.properties"


FORMAT_CASES = [
    ({"k": "v"}, "k=v\n"),
    ({"a b": " c d "}, "a\\ b=\\ c d \n"),
    ({"k=:#!": "=:#!"}, "k\\=\\:\\#\\!=\\=\\:\\#\\!\n"),
    ({"k": "a\\b\tc\nd\re\ff"}, "k=a\\\\b\\tc\\nd\\re\\ff\n"),
    ({"k": "é\x00\x7f~"}, "k=\\u00E9\\u0000\\u007F~\n"),
    ({"k": "😀"}, "k=\\uD83D\\uDE00\n"),
    ({"": ""}, "=\n"),
    ({"b": "1", "a": "2"}, "b=1\na=2\n"),
]


@pytest.mark.parametrize(("props", "expected"), FORMAT_CASES)
def test_format_matches_java_properties_store(props: dict[str, str], expected: str) -> None:
    assert format_properties(props) == expected


@given(st.dictionaries(st.text(), st.text(), max_size=8))
def test_format_then_parse_round_trips(props: dict[str, str]) -> None:
    assert parse_properties(format_properties(props), path="p") == props


@pytest.mark.parametrize("zip_path", fixture_zips(), ids=fixture_id)
def test_every_fixture_properties_file_parses(zip_path) -> None:
    """The table's own file and its metadata table's (a MERGE_ON_READ table of the same version)."""
    with zipfile.ZipFile(zip_path) as archive:
        names = [
            n for n in archive.namelist() if n.endswith(".hoodie/hoodie.properties") and "__MACOSX" not in n
        ]
        for name in names:
            props = parse_properties(archive.read(name).decode("iso-8859-1"), path=name)
            config = TableConfig.from_properties(props, path=name)
            assert config.version in (6, 8, 9)
            assert config.raw == props
            assert parse_properties(format_properties(props), path="p") == props
            if "hoodie.table.create.schema" in props:
                assert json.loads(props["hoodie.table.create.schema"])["type"] == "record"


def _properties_text(zip_path) -> str:
    with zipfile.ZipFile(zip_path) as archive:
        return archive.read(f"{zip_path.stem}/.hoodie/hoodie.properties").decode("iso-8859-1")


def _config(fixture: str) -> TableConfig:
    return TableConfig.parse(
        _properties_text(FIXTURES / f"{fixture}.zip"), path=f"{fixture}/.hoodie/hoodie.properties"
    )


def test_v6_fixture_config() -> None:
    config = _config("sample_table/cow/v6_complexkeygen_hivestyle")
    assert config.name == "v6_complexkeygen_hivestyle"
    assert config.table_type is TableType.COPY_ON_WRITE
    assert (config.version, config.timeline_layout_version) == (6, 1)
    assert config.record_key_fields == ("id", "name")
    assert config.partition_fields == ("byteField", "shortField")
    assert config.ordering_fields == ("longField",)
    assert (config.base_file_format, config.timezone) == ("PARQUET", "LOCAL")
    assert (config.timeline_path, config.timeline_dir) == ("", ".hoodie")
    assert config.hive_style_partitioning and config.populate_meta_fields
    assert config.metadata_partitions == ()


def test_v8_fixture_config() -> None:
    config = _config("quickstart_trips_table/mor/avro/v8_trips_8i3u1d")
    assert config.table_type is TableType.MERGE_ON_READ
    assert (config.version, config.timeline_layout_version) == (8, 2)
    assert config.ordering_fields == ("ts",)
    assert config.timeline_dir == ".hoodie/timeline"
    assert config.metadata_partitions == (
        "column_stats",
        "files",
        "partition_stats",
        "record_index",
        "secondary_index_rider_idx",
    )
    assert config.metadata_partitions_inflight == ()


def test_v9_fixture_config_uses_ordering_fields() -> None:
    config = _config("sample_table/cow/v9_txns_simple_nometa")
    assert (config.version, config.timeline_layout_version) == (9, 2)
    assert config.ordering_fields == ("txn_ts",)
    assert config.partition_fields == ("region",)
    assert config.is_partitioned


def test_populate_meta_fields_off_and_lance_base_files() -> None:
    assert not _config("sample_table/cow/v6_simplekeygen_hivestyle_no_metafields").populate_meta_fields
    assert _config("sample_table/cow/v9_lance_txns_simple").base_file_format == "LANCE"


BASE = {
    "hoodie.table.name": "t",
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.table.version": "9",
}


def _from(**changes: str | None) -> TableConfig:
    props = {**BASE, **{k.replace("_", "."): v for k, v in changes.items() if v is not None}}
    for key in [k.replace("_", ".") for k, v in changes.items() if v is None]:
        props.pop(key, None)
    return TableConfig.from_properties(props, path="t/.hoodie/hoodie.properties")


def test_defaults_when_optional_keys_are_absent() -> None:
    config = _from()
    assert config.timeline_layout_version == 2
    assert config.timeline_path == "timeline"
    assert config.record_key_fields == config.partition_fields == config.ordering_fields == ()
    assert (config.base_file_format, config.timezone) == ("PARQUET", "LOCAL")
    assert not config.hive_style_partitioning and config.populate_meta_fields
    assert not config.is_partitioned


def test_layout_inferred_for_version_6() -> None:
    assert _from(hoodie_table_version="6").timeline_layout_version == 1


def test_partition_fields_drop_custom_keygen_types() -> None:
    config = _from(hoodie_table_partition_fields="region:SIMPLE, ts:TIMESTAMP ,,day")
    assert config.partition_fields == ("region", "ts", "day")


def test_ordering_fields_prefer_v9_key_over_precombine() -> None:
    assert _from(hoodie_table_precombine_field="old").ordering_fields == ("old",)
    config = _from(hoodie_table_precombine_field="old", hoodie_table_ordering_fields="a,b")
    assert config.ordering_fields == ("a", "b")


def test_flags_follow_java_parse_boolean() -> None:
    props = {
        **BASE,
        "hoodie.datasource.write.hive_style_partitioning": "TRUE",
        "hoodie.populate.meta.fields": "no",
    }
    config = TableConfig.from_properties(props, path="p")
    assert config.hive_style_partitioning and not config.populate_meta_fields


@pytest.mark.parametrize("version", ["0", "5", "7", "10"])
def test_unsupported_versions_are_refused_naming_found_and_supported(version: str) -> None:
    with pytest.raises(UnsupportedTableError) as error:
        _from(hoodie_table_version=version)
    message = str(error.value)
    assert f"hoodie.table.version is {version}" in message
    assert "6, 8 and 9" in message
    assert "t/.hoodie/hoodie.properties" in message


def test_a_version_too_long_for_python_to_read_is_refused_like_any_other() -> None:
    # Python refuses to convert more than 4,300 digits: a ValueError reported as an internal error.
    with pytest.raises(UnsupportedTableError) as error:
        _from(hoodie_table_version="9" * 5000)
    assert "hoodie.table.version is 99999999999999999999... (5000 digits)" in str(error.value)


@pytest.mark.parametrize(("version", "layout"), [("6", "2"), ("8", "1"), ("9", "0")])
def test_layout_that_does_not_belong_to_the_version_is_refused(version: str, layout: str) -> None:
    with pytest.raises(UnsupportedTableError, match="layout"):
        _from(hoodie_table_version=version, hoodie_timeline_layout_version=layout)


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"hoodie_table_version": None}, "hoodie.table.version is missing"),
        ({"hoodie_table_version": "nine"}, "hoodie.table.version must be a whole number, found 'nine'"),
        ({"hoodie_table_name": None}, "hoodie.table.name is missing"),
        ({"hoodie_table_type": None}, "hoodie.table.type is missing"),
        ({"hoodie_table_type": "APPEND_ONLY"}, "COPY_ON_WRITE or MERGE_ON_READ, found 'APPEND_ONLY'"),
        ({"hoodie_table_timeline_timezone": "CET"}, "LOCAL or UTC, found 'CET'"),
    ],
)
def test_invalid_or_missing_keys_name_the_file_and_key(changes: dict[str, str | None], fragment: str) -> None:
    with pytest.raises(TableError) as error:
        _from(**changes)
    assert fragment in str(error.value)
    assert "t/.hoodie/hoodie.properties" in str(error.value)
    assert not isinstance(error.value, UnsupportedTableError)


def test_table_config_is_a_hashable_value() -> None:
    assert _from() == _from()
    assert hash(_from()) == hash(_from())
    assert _from() != _from(hoodie_table_name="other")
    with pytest.raises(TypeError):
        _from().raw["x"] = "y"  # type: ignore[index]


# The characters that matter to Java's line reader and escapes, and a few that do not.
_PROPERTIES_TEXT = st.text(alphabet=list("ab=: \t\f\\\n\r#!u0Aé"), max_size=40)


@given(_PROPERTIES_TEXT)
def test_lines_taken_a_line_at_a_time_are_the_character_loops(text: str) -> None:
    """The fast paths (a file without continued lines, a key without escapes) split exactly as the
    character loops do."""
    assert properties_module._logical_lines(text) == properties_module._continued_lines(text)
    fast = properties_module._uncontinued_lines(text)
    assert fast is None or fast == properties_module._continued_lines(text)
    for _, line in properties_module._continued_lines(text):
        # The key's end found by a search equals the one the character loop finds.
        assert properties_module._split_key_value(line)[0] == properties_module._escaped_key_end(line)[0]


def _reference_unescape(raw: str) -> str:
    """The escape rules one character at a time, as `_unescape` was first written (checked against
    the JDK then); a malformed \\u escape raises ValueError."""
    out: list[str] = []
    i, saw_unicode = 0, False
    while i < len(raw):
        c = raw[i]
        i += 1
        if c != "\\" or i >= len(raw):
            out.append(c)
            continue
        c = raw[i]
        i += 1
        if c == "u":
            digits = raw[i : i + 4]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise ValueError(digits)
            out.append(chr(int(digits, 16)))
            i, saw_unicode = i + 4, True
        else:
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c))
    joined = "".join(out)
    if saw_unicode:
        joined = joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return joined


@given(st.text(alphabet=list("\\utnrf0aAFgé="), max_size=30))
def test_unescape_decodes_as_the_character_loop(raw: str) -> None:
    try:
        expected: str | None = _reference_unescape(raw)
    except ValueError:
        expected = None
    except UnicodeDecodeError:  # a lone surrogate: both refuse it the same way
        expected = None
    try:
        found: str | None = properties_module._unescape(raw, path="p", line_no=1)
    except TableError:
        found = None
    except UnicodeDecodeError:
        found = None
    assert found == expected


# --- a hoodie.properties in another encoding is named by its encoding, not as a missing property ---

HUDI_READS = "Hudi reads hoodie.properties as ISO-8859-1 key=value lines (java.util.Properties.load)"
V6_TEXT = "#Properties saved on 2024-04-18T22:35:50.847Z\nhoodie.table.name=t\nhoodie.table.type=COPY_ON_WRITE\n" \
          "hoodie.table.version=6\n"


@pytest.mark.parametrize(("raw", "found"), [
    (V6_TEXT.encode("utf-16"), "a UTF-16 byte order mark (FF FE, little-endian)"),
    (b"\xfe\xff" + V6_TEXT.encode("utf-16-be"), "a UTF-16 byte order mark (FE FF, big-endian)"),
    (V6_TEXT.encode("utf-16-le"), "NUL bytes between its characters (the first at byte 1): UTF-16 without a byte "
                                  "order mark"),
    (V6_TEXT.encode("ascii").replace(b"=t\n", b"=t\x00\n"), f"a NUL byte at byte {V6_TEXT.index('=t') + 2}"),
])
def test_a_properties_file_in_another_encoding_is_named_by_what_was_found(raw: bytes, found: str) -> None:
    with pytest.raises(TableError) as caught:
        properties_module.read_properties(raw, path=".hoodie/hoodie.properties")
    message = caught.value.message
    assert message.startswith(f".hoodie/hoodie.properties: {HUDI_READS}, but this file has {found}"), message
    assert "missing" not in message
    assert caught.value.path == ".hoodie/hoodie.properties"
    assert "ISO-8859-1" in (caught.value.hint or "") and "byte order mark" in (caught.value.hint or "")


@pytest.mark.parametrize(("text", "first_key"), [
    (V6_TEXT, "#Properties"),                       # the comment becomes a property: Hudi reads on
    ("hoodie.table.name=t\nhoodie.table.version=6\n", "hoodie.table.name"),  # the key Hudi misses
])
def test_a_utf8_byte_order_mark_is_refused_naming_the_first_key_hudi_would_misread(text: str, first_key: str) -> None:
    # Properties.load on an ISO-8859-1 stream reads EF BB BF as the characters "ï»¿", which are no
    # blank and no comment marker: they become part of the first line's key. Reading past the mark
    # would read what Hudi does not; reading as Hudi does would misread a table it reads.
    with pytest.raises(TableError) as caught:
        properties_module.read_properties(b"\xef\xbb\xbf" + text.encode("ascii"), path="t/.hoodie/hoodie.properties")
    assert caught.value.message == (
        f"t/.hoodie/hoodie.properties: {HUDI_READS}, but this file has a UTF-8 byte order mark (EF BB BF), "
        f'which Hudi reads as part of the first key: "ï»¿{first_key}", not "{first_key}"')


def test_latin1_bytes_and_escaped_nuls_are_still_read_as_hudi_reads_them() -> None:
    assert properties_module.read_properties(b"k=caf\xe9\nn=\\u0000\n", path="p") == {"k": "café", "n": "\x00"}
