"""Hudi write options that `runner.write(..., options=)` honours, as a Spark Hudi writer takes them.

Only the options listed here change what the writer does; any other key is refused rather than
silently ignored, so a user never believes an option took effect when it did not.

- `hoodie.parquet.compression.codec` (Hudi's `HoodieStorageConfig`, default `gzip`): the codec of
  the base files this write creates. gzip is written at zlib's level 6, as Hadoop's `GzipCodec` does
  by default; zstd at level 3, parquet-mr's default (`parquet.compression.codec.zstd.level`).
  Codecs whose Parquet encoding differs between parquet-mr and Arrow (lz4: Hadoop's framing) or
  that Hudi needs extra libraries for (lzo, brotli) are refused.
- `zlib.compress.level` (Hadoop's key, which a Hudi Spark job sets as
  `spark.hadoop.zlib.compress.level`; parquet-mr's gzip compressor takes its level from it): the
  gzip level, 1 to 9, as a number (newer parquet-java reads it so) or as the name of Hadoop's
  `ZlibCompressor.CompressionLevel` (`BEST_SPEED`, `TWO` ... `EIGHT`, `BEST_COMPRESSION`;
  `DEFAULT_COMPRESSION` and -1 are zlib's default, 6). The pages are deflated by libdeflate at that
  level (`runner.hudi.parquet_deflate`), whose files are no larger than zlib's at the same level.
  Readers do not see the level, only the compressed bytes' size and the time spent: level 1 deflates
  in a fifth to two fifths of level 6's CPU, for pages 4–18 % larger on the data measured
  (`bench/README.md`). Refused with
  a codec other than gzip (it would change nothing) and for level 0, no compression, which the
  codec `uncompressed` writes instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NoReturn

from runner.errors import RefusedError
from runner.hudi.parquet_deflate import HUDI_GZIP_LEVEL
from runner.selection import did_you_mean
from runner.writer.arguments import kind_of

CODEC_KEY = "hoodie.parquet.compression.codec"
ZLIB_LEVEL_KEY = "zlib.compress.level"
_ZLIB_DEFAULT = HUDI_GZIP_LEVEL  # what zlib's Z_DEFAULT_COMPRESSION (-1) means, and Hudi's default
_ZLIB_LEVEL_NAMES = {
    "NO_COMPRESSION": 0, "BEST_SPEED": 1, "TWO": 2, "THREE": 3, "FOUR": 4, "FIVE": 5, "SIX": 6,
    "SEVEN": 7, "EIGHT": 8, "BEST_COMPRESSION": 9, "DEFAULT_COMPRESSION": _ZLIB_DEFAULT,
}


@dataclass(frozen=True, slots=True)
class ParquetCodec:
    """A Parquet codec as pyarrow's writer takes it: its name and level (None: the codec has none)."""

    name: str
    level: int | None


GZIP = ParquetCodec("gzip", HUDI_GZIP_LEVEL)
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
    if options is not None and not isinstance(options, Mapping):
        _not_a_mapping(kind_of(options))
    given = dict(options or {})
    key = next((k for k in given if not isinstance(k, str)), None)
    if key is not None:
        _not_a_mapping(f"the key {key!r} ({kind_of(key).split(' (')[0]})")
    unknown = sorted(set(given) - {CODEC_KEY, ZLIB_LEVEL_KEY})
    if unknown:
        raise RefusedError(
            f"runner.write does not support the option(s) {', '.join(unknown)}{_near(unknown[0])}; supported: "
            f"{CODEC_KEY}, {ZLIB_LEVEL_KEY}.",
            hint="remove the option: the writer would otherwise ignore it.",
        )
    codec = str(given.get(CODEC_KEY, "gzip")).strip().lower()
    if codec not in CODECS:
        raise RefusedError(
            f"Option {CODEC_KEY} is {given[CODEC_KEY]!r}; expected one of {', '.join(CODECS)}.",
            hint="use gzip (Hudi's default) or snappy.",
        )
    if ZLIB_LEVEL_KEY not in given:
        return WriteOptions(codec=CODECS[codec])
    if CODECS[codec] is not GZIP:
        raise RefusedError(
            f"Option {ZLIB_LEVEL_KEY} sets the gzip level, but the codec is {codec}.",
            hint=f"remove {ZLIB_LEVEL_KEY}, or set {CODEC_KEY} to gzip.",
        )
    return WriteOptions(codec=ParquetCodec("gzip", _zlib_level(given[ZLIB_LEVEL_KEY])))


def _near(key: str) -> str:
    """A did-you-mean for a key near a supported one: another case, a typo, or Spark's
    `spark.hadoop.` prefix on Hadoop's key (how Hudi users set it in a session's conf)."""
    bare = key.removeprefix("spark.hadoop.")
    return did_you_mean(bare, (CODEC_KEY, ZLIB_LEVEL_KEY))


def _not_a_mapping(found: str) -> NoReturn:
    raise RefusedError(
        f"runner.write(options=...): expected a mapping of Hudi option names to values, got {found}; nothing was "
        "written", hint='pass a dict, such as options={"hoodie.parquet.compression.codec": "snappy"}.')


def _zlib_level(value: object) -> int:
    text = str(value).strip()
    try:
        level = int(text)
    except ValueError:
        level = _ZLIB_LEVEL_NAMES.get(text.upper(), -2)
    level = _ZLIB_DEFAULT if level == -1 else level
    if not 1 <= level <= 9:
        raise RefusedError(
            f"Option {ZLIB_LEVEL_KEY} is {value!r}; expected a gzip level from 1 to 9 or one of "
            f"{', '.join(n for n in _ZLIB_LEVEL_NAMES if n != 'NO_COMPRESSION')}.",
            hint=f"give a level from 1 (fastest) to 9 (smallest files), or leave the option out for 6; "
                 f"for no compression, set {CODEC_KEY} to uncompressed instead.",
        )
    return level
