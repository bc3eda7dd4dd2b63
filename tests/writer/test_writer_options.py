"""`runner.write(..., options=)`: the Parquet codec option, and refusal of options it does not honour."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import runner
from runner.errors import RefusedError
from runner.writer.options import ZLIB_LEVEL_KEY, ParquetCodec, parse_options
from tests.writer.writer_helpers import oracle_rows, table_yaml

SCHEMA = "id long, region string, name string, ts long"
CODEC = "hoodie.parquet.compression.codec"


def _codecs(base: Path, files: tuple[str, ...]) -> set[str]:
    found = set()
    for path in files:
        meta = pq.ParquetFile(base / path).metadata
        found |= {meta.row_group(g).column(c).compression for g in range(meta.num_row_groups)
                  for c in range(meta.num_columns)}
    return found


@pytest.mark.parametrize("codec, expected", [("snappy", "SNAPPY"), ("zstd", "ZSTD"), ("uncompressed", "UNCOMPRESSED")])
def test_the_codec_option_sets_the_codec_of_created_and_merged_files(
    spark: Any, project: Callable[..., Path], engine: str, codec: str, expected: str
) -> None:
    root = project(t=table_yaml("t"))
    base = root / "warehouse" / "t"
    first = runner.write(spark.createDataFrame([(1, "eu", "a", 1), (2, "us", "b", 1)], SCHEMA), "t", project_dir=root)
    assert _codecs(base, first.files) == {"GZIP"}  # Hudi's default

    update = spark.createDataFrame([(1, "eu", "a2", 2), (3, "eu", "c", 2), (4, "sa", "d", 2)], SCHEMA)
    second = runner.write(update, "t", project_dir=root, options={CODEC: codec.upper()})
    assert second.engine == engine and (second.num_updates, second.num_inserts) == (1, 2)
    assert _codecs(base, second.files) == {expected}  # the merged eu file and the new sa file alike
    assert sorted((r["id"], r["name"]) for r in oracle_rows(base)) == [(1, "a2"), (2, "b"), (3, "c"), (4, "d")]


@pytest.mark.parametrize("options, message", [
    ({"hoodie.datasource.write.operation": "insert"}, "does not support the option"),
    ({CODEC: "lzo"}, "expected one of gzip, snappy, zstd, uncompressed"),
])
def test_options_it_does_not_honour_are_refused_before_anything_is_written(
    spark: Any, project: Callable[..., Path], options: dict[str, str], message: str
) -> None:
    root = project(t=table_yaml("t"))
    with pytest.raises(RefusedError, match=message):
        runner.write(spark.createDataFrame([(1, "eu", "a", 1)], SCHEMA), "t", project_dir=root, options=options)
    assert not (root / "warehouse").exists()


@pytest.mark.parametrize("value, level", [("1", 1), (" BEST_SPEED ", 1), ("four", 4), ("9", 9), ("BEST_COMPRESSION", 9),
                                          ("-1", 6), ("DEFAULT_COMPRESSION", 6), ("6", 6)])
def test_hadoops_zlib_level_sets_the_gzip_level(value: str, level: int) -> None:
    """`zlib.compress.level` as parquet-java reads it (a number) or as Hadoop's `CompressionLevel`
    names it; unset, gzip stays at 6."""
    assert parse_options({ZLIB_LEVEL_KEY: value}).codec == ParquetCodec("gzip", level)
    assert parse_options({CODEC: "gzip", ZLIB_LEVEL_KEY: value}).codec == ParquetCodec("gzip", level)
    assert parse_options({}).codec == parse_options({CODEC: "gzip"}).codec == ParquetCodec("gzip", 6)


@pytest.mark.parametrize("options, message", [
    ({ZLIB_LEVEL_KEY: "0"}, "expected a gzip level from 1 to 9"),
    ({ZLIB_LEVEL_KEY: "NO_COMPRESSION"}, "expected a gzip level from 1 to 9"),
    ({ZLIB_LEVEL_KEY: "10"}, "expected a gzip level from 1 to 9"),
    ({ZLIB_LEVEL_KEY: "fast"}, "expected a gzip level from 1 to 9"),
    ({ZLIB_LEVEL_KEY: "1", CODEC: "snappy"}, "but the codec is snappy"),
])
def test_a_zlib_level_that_cannot_take_effect_is_refused(options: dict[str, str], message: str) -> None:
    with pytest.raises(RefusedError, match=message):
        parse_options(options)


def test_the_zlib_level_reaches_the_files_and_readers_see_the_same_rows(project: Callable[..., Path]) -> None:
    """The same upsert at level 1 and at the default: every column chunk gzip, the rows the `hudi`
    reader returns identical, and level 1's distinct-string chunks larger (the level took effect)."""
    import numpy as np
    import pyarrow as pa

    ids = np.arange(3000)
    rows = pa.table({"id": ids, "region": np.where(ids % 2 == 0, "eu", "us"),
                     "name": [f"customer-{i * 7919 % 3000:05d}" for i in ids], "ts": np.ones(3000, np.int64)})
    sizes, read = [], []
    for options in ({}, {ZLIB_LEVEL_KEY: "BEST_SPEED"}):
        root = project(t=table_yaml("t"))
        base = root / "warehouse" / "t"
        runner.write(rows, "t", project_dir=root, options=options)
        result = runner.write(rows.slice(0, 1000), "t", project_dir=root, options=options)  # merges
        assert result.num_updates == 1000 and _codecs(base, result.files) == {"GZIP"}
        sizes.append(sum(pq.ParquetFile(base / f).metadata.row_group(0).column(7).total_compressed_size
                         for f in result.files))  # `name`
        read.append(oracle_rows(base, columns=("id", "name")))
    assert read[0] == read[1] and len(read[0]) == 3000
    assert sizes[1] > sizes[0]
