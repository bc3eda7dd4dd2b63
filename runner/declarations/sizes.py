"""Byte sizes as people write them in declarations: `125829120`, `120MiB`, `100 MB`, `1GB`.

Decimal units (KB, MB, GB) are powers of 1000 and binary units (KiB, MiB, GiB) powers of 1024,
as in the IEC convention. Hudi's own settings are plain byte counts, so `120MiB` is exactly
Hudi's default `hoodie.parquet.max.file.size` of 125829120. Units are case-sensitive on purpose:
`mb` could mean millibits and `Mb` megabits, and guessing would be worse than refusing.

`format_size` is the inverse of `parse_size`: `parse_size(format_size(n)) == n` for every n >= 0.
"""

from __future__ import annotations

import re

UNITS: dict[str, int] = {
    "B": 1,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}

# Hudi reads hoodie.parquet.max.file.size and .small.file.limit as Java longs. A number is bounded by
# the schema's `maximum`; a string is bounded by its digits, per unit: as many as surely fit a long
# (999999999GiB is about 2**60 bytes, ten digits of GiB may not fit). A digit count is what a JSON
# Schema pattern can say, so editors refuse exactly what the runner refuses.
JAVA_LONG_MAX = 2**63 - 1
UNIT_DIGITS: dict[str, int] = {"B": 15, "KB": 15, "KiB": 15, "MB": 12, "MiB": 12, "GB": 9, "GiB": 9}

_SIZE = re.compile(r"\s*([0-9]{1,15})\s*([A-Za-z]*)\s*")
_EXPECTED = "a size such as 120MiB, 100 MB or a number of bytes (units: " + ", ".join(UNITS) + ")"
# Largest unit first, binary before decimal: a value that is a whole number of MiB reads best as MiB.
_FORMAT_ORDER = ("GiB", "MiB", "KiB", "GB", "MB", "KB")


def parse_size(value: object) -> int:
    """Return the number of bytes that `value` declares.

    Args:
        value: a non-negative integer (bytes), or a string of digits with an optional unit,
            optionally separated by spaces (`120MiB`, `100 MB`, `4096`).

    Returns:
        The size in bytes.

    Raises:
        ValueError: the value is not a size, or may hold more bytes than a Java long; the message
            says what was expected and what was found, for example
            `expected a size such as 120MiB, ..., got "12 XB" (unknown unit "XB")`.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"expected {_EXPECTED}, got {_show(value)}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"expected {_EXPECTED}, got {value} (sizes cannot be negative)")
        if value > JAVA_LONG_MAX:
            raise ValueError(f"expected at most {JAVA_LONG_MAX} bytes (a Java long, as Hudi reads sizes), got {value}")
        return value
    match = _SIZE.fullmatch(value)
    if match is None:
        raise ValueError(f"expected {_EXPECTED}, got {_show(value)}{_why_not(value)}")
    digits, unit = match.groups()
    if unit and unit not in UNITS:
        raise ValueError(f'expected {_EXPECTED}, got {_show(value)} (unknown unit "{unit}"{_unit_hint(unit)})')
    unit = unit or "B"
    size = int(digits) * UNITS[unit]
    most = UNIT_DIGITS[unit]
    if len(digits) > most:
        raise ValueError(f"expected at most {most} digits before {unit} (up to {'9' * most}{unit}; Hudi reads "
                         f"sizes as Java longs, at most {JAVA_LONG_MAX} bytes, which a plain number of bytes "
                         f"may go up to), got {_show(value)} ({size} bytes)")
    return size


def format_size(size: int) -> str:
    """Render a byte count in the largest unit that divides it exactly (`125829120` → `120MiB`).

    Sizes that are not a whole number of any unit stay in bytes (`1000001` → `1000001B`).
    """
    for unit in _FORMAT_ORDER:
        factor = UNITS[unit]
        if size and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


def _unit_hint(unit: str) -> str:
    # Units are case-sensitive on purpose, so point at the spelling that was probably meant.
    same = [known for known in UNITS if known.lower() == unit.lower()]
    return f'; did you mean "{same[0]}"?' if same else ""


def _why_not(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("-"):
        return " (sizes cannot be negative)"
    if re.fullmatch(r"[0-9]*[.,][0-9]*\s*[A-Za-z]*", stripped) and any(c.isdigit() for c in stripped):
        return " (use a whole number, for example 1536MiB instead of 1.5GiB)"
    if re.fullmatch(r"[0-9]{16,}\s*[A-Za-z]*", stripped):
        return " (too large)"
    return ""


def _show(value: object) -> str:
    if isinstance(value, str):
        return '"' + (value if len(value) <= 40 else value[:37] + "...") + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "an empty value"
    if isinstance(value, list | tuple):
        return "a list"
    return "a mapping" if isinstance(value, dict) else str(value)


# Spark's own size text (`spark.executor.memory`: JavaUtils.byteStringAs): a whole number and a
# binary unit; the schema admits only these units, so a bare number (MiB to Spark) is never guessed.
_SPARK_SIZE = re.compile(r"([0-9]+)([kmgt])b?", re.IGNORECASE)
_SPARK_UNITS = {"k": 1, "m": 2, "g": 3, "t": 4}
# Spark refuses executors below 1.5 x its 300 MiB reserved memory (UnifiedMemoryManager).
SPARK_MIN_EXECUTOR_MEMORY = 450 * 1024**2


def spark_size_bytes(text: str) -> int:
    """`8g` → 8 GiB in bytes, as Spark reads it; ValueError for text the schema would refuse."""
    match = _SPARK_SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a Spark size such as 8g or 4096m: {text!r}")
    return int(match.group(1)) * int(1024 ** _SPARK_UNITS[match.group(2).lower()])
