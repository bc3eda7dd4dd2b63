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
