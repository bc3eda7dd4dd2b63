"""`runner.write(..., options=)`: the Parquet codec option, and refusal of options it does not honour."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import runner
from runner.errors import RefusedError
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
