from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.declarations.sizes import format_size, parse_size

EXPECTED = "expected a size such as 120MiB, 100 MB or a number of bytes (units: B, KB, MB, GB, KiB, MiB, GiB)"


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (0, 0),
        (4096, 4096),
        ("4096", 4096),
        ("120MiB", 120 * 1024**2),
        ("100 MB", 100_000_000),
        ("1GB", 1_000_000_000),
        ("1GiB", 1024**3),
        ("512KiB", 512 * 1024),
        ("7KB", 7000),
        ("12B", 12),
        ("  64 MiB  ", 64 * 1024**2),
    ],
)
def test_parse_size_accepts_bytes_and_units(value: object, size: int) -> None:
    assert parse_size(value) == size


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("12 XB", '"12 XB" (unknown unit "XB")'),
        ("120mib", '"120mib" (unknown unit "mib"; did you mean "MiB"?)'),
        ("10 Mib", '"10 Mib" (unknown unit "Mib"; did you mean "MiB"?)'),
        ("10 XB", '"10 XB" (unknown unit "XB")'),
        ("1.5GiB", '"1.5GiB" (use a whole number, for example 1536MiB instead of 1.5GiB)'),
        ("-1MB", '"-1MB" (sizes cannot be negative)'),
        (-5, "-5 (sizes cannot be negative)"),
        ("MiB", '"MiB"'),
        ("", '""'),
        ("9999999999999999MB", '"9999999999999999MB" (too large)'),
        (True, "true"),
        (None, "an empty value"),
        (1.5, "1.5"),
        ([1], "a list"),
    ],
)
def test_parse_size_says_what_was_expected_and_found(value: object, found: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_size(value)
    assert str(caught.value) == f"{EXPECTED}, got {found}"


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0B"), (125829120, "120MiB"), (524288, "512KiB"), (10**9, "1GB"), (1000001, "1000001B"), (3000, "3KB")],
)
def test_format_size_uses_the_largest_exact_unit(size: int, text: str) -> None:
    assert format_size(size) == text


@given(st.integers(min_value=0, max_value=10**14))
def test_format_size_and_parse_size_are_inverses(size: int) -> None:
    assert parse_size(format_size(size)) == size



LONG_MAX = 2**63 - 1
LONG_LIMIT = (f"Hudi reads sizes as Java longs, at most {LONG_MAX} bytes, which a plain number of bytes "
              "may go up to")


@pytest.mark.parametrize(
    ("value", "digits", "unit", "bytes_found"),
    [
        ("999999999999999 GiB", 9, "GiB", "1073741823999998926258176"),
        ("8589934592GiB", 9, "GiB", "9223372036854775808"),
        ("9999999999 GB", 9, "GB", "9999999999000000000"),
        ("9999999999999MB", 12, "MB", "9999999999999000000"),
        ("999999999999999MiB", 12, "MiB", "1048575999999998951424"),
    ],
)
def test_a_size_string_that_may_exceed_a_java_long_is_refused_with_its_unit_limit_and_bytes(
        value: str, digits: int, unit: str, bytes_found: str) -> None:
    # Hudi reads hoodie.parquet.max.file.size and .small.file.limit as Java longs: numbers were
    # already bounded by the schema's maximum, a string with a unit named up to 10**24 bytes.
    with pytest.raises(ValueError) as caught:
        parse_size(value)
    assert str(caught.value) == (f"expected at most {digits} digits before {unit} (up to {'9' * digits}{unit}; "
                                 f'{LONG_LIMIT}), got "{value}" ({bytes_found} bytes)')


@pytest.mark.parametrize(("value", "size"), [
    ("999999999GiB", 999999999 * 1024**3), ("999999999 GB", 999999999 * 10**9),
    ("999999999999MiB", 999999999999 * 1024**2), ("999999999999MB", 999999999999 * 10**6),
    ("999999999999999KiB", 999999999999999 * 1024), ("999999999999999KB", 999999999999999 * 1000),
    ("999999999999999", 999999999999999), (LONG_MAX, LONG_MAX),
])
def test_the_largest_size_of_each_unit_fits_a_java_long_and_is_accepted(value: object, size: int) -> None:
    assert parse_size(value) == size <= LONG_MAX


def test_a_number_beyond_a_java_long_is_refused_by_parse_size_too() -> None:
    with pytest.raises(ValueError) as caught:
        parse_size(LONG_MAX + 1)
    assert str(caught.value) == (f"expected at most {LONG_MAX} bytes (a Java long, as Hudi reads sizes), "
                                 f"got {LONG_MAX + 1}")
