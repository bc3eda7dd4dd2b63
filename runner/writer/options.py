"""Hudi write options that `runner.write(..., options=)` honours, as a Spark Hudi writer takes them.

Only the options listed here change what the writer does; any other key is refused rather than
silently ignored, so a user never believes an option took effect when it did not.

- `hoodie.parquet.compression.codec` (Hudi's `HoodieStorageConfig`, default `gzip`): the codec of
  the base files this write creates. gzip is written at zlib's level 6, as Hadoop's `GzipCodec` does
  by default; zstd at level 3, parquet-mr's default (`parquet.compression.codec.zstd.level`).
  Codecs whose Parquet encoding differs between parquet-mr and Arrow (lz4: Hadoop's framing) or
  that Hudi needs extra libraries for (lzo, brotli) are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from runner.errors import RefusedError

CODEC_KEY = "hoodie.parquet.compression.codec"


@dataclass(frozen=True, slots=True)
class ParquetCodec:
    """A Parquet codec as pyarrow's writer takes it: its name and level (None: the codec has none)."""

    name: str
    level: int | None


GZIP = ParquetCodec("gzip", 6)
CODECS = {
    "gzip": GZIP,
    "snappy": ParquetCodec("snappy", None),
    "zstd": ParquetCodec("zstd", 3),
    "uncompressed": ParquetCodec("none", None),
}


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """The effective options of one write."""

    codec: ParquetCodec = GZIP


def parse_options(options: Mapping[str, str] | None) -> WriteOptions:
    """The options of one write; a `RefusedError` names an unknown key or value and what is accepted."""
    given = dict(options or {})
    unknown = sorted(set(given) - {CODEC_KEY})
    if unknown:
        raise RefusedError(
            f"runner.write does not support the option(s) {', '.join(unknown)}; supported: {CODEC_KEY}.",
            hint="remove the option: the writer would otherwise ignore it.",
        )
    codec = str(given.get(CODEC_KEY, "gzip")).strip().lower()
    if codec not in CODECS:
        raise RefusedError(
            f"Option {CODEC_KEY} is {given[CODEC_KEY]!r}; expected one of {', '.join(CODECS)}.",
            hint="use gzip (Hudi's default) or snappy.",
        )
    return WriteOptions(codec=CODECS[codec])
