"""JSON a table keeps about itself, read within bounds: version 6 commit metadata and the LSM
timeline's manifests.

No Hudi writer makes a number hundreds of digits long, nesting thousands deep or an instant file of
gigabytes; a damaged or hostile file can. Python's decoder fails on each in its own way (a
ValueError past 4,300 digits, a RecursionError, a read of the whole file into memory), none naming
the file. Here each is a `CorruptMetadataError` naming the file; a number too long to be one of
Hudi's becomes a `LongNumber`, refused by name only by the field that reads it (`Fields`).
"""

from __future__ import annotations

import json

from runner.errors import CorruptMetadataError

# Hudi reads an instant file whole into one Java byte array, which holds less than 2 GiB, so no
# larger file is one Hudi wrote or can read. Smaller limits would refuse real tables: the clean of
# 400,000 files in `bench_clean.py` is 64.5 MB, one of millions of files several hundred MB.
MAX_JSON_BYTES = 2**31 - 1
_MAX_DIGITS = 40  # a Java long is 19 digits; Jackson writes no bigger number in Hudi's metadata


class LongNumber:
    """A JSON number far too long for any field of Hudi's, kept as its digit count only."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"a number {self.digits:,} digits long"


class NestedTooDeeply(CorruptMetadataError):
    """JSON nested deeper than Python's decoder can follow: no writer's crash leaves such a file."""


def _number(text: str) -> int | LongNumber:
    digits = len(text.lstrip("-"))
    return LongNumber(digits) if digits > _MAX_DIGITS else int(text)


def too_large(path: str, size: int | None, limit: int = MAX_JSON_BYTES) -> CorruptMetadataError | None:
    """The error for an instant file of `size` bytes too large to be read, or None."""
    if size is None or size <= limit:
        return None
    return CorruptMetadataError(f"Cannot decode {path}: it is {size / 1024 ** 3:.1f} GiB, and no Hudi metadata "
                                f"file is more than {_shown(limit)}; it was not read", path=path)


def _shown(limit: int) -> str:
    return "2 GiB (what Hudi can read into one Java array)" if limit == MAX_JSON_BYTES else f"{limit // 1024 ** 2} MiB"


def load_json(data: bytes, *, path: str, expected: str) -> object:
    """The JSON document in `data`; long numbers become `LongNumber`.

    Raises:
        CorruptMetadataError: not UTF-8 or not JSON; `NestedTooDeeply`, one of them, when nested too
            deeply to read; naming `path`.
    """
    try:
        return json.loads(data.decode("utf-8"), parse_int=_number)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CorruptMetadataError(f"Cannot decode {path}: expected {expected}, found invalid JSON ({error})",
                                   path=path) from None
    except RecursionError:
        raise NestedTooDeeply(f"Cannot decode {path}: expected {expected}, found JSON nested too deeply to "
                                   "read", path=path) from None
