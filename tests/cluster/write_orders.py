"""Run as a script by the cluster tests: write the `orders` table the way a user's job would.

Usage: python write_orders.py PROJECT_DIR. The session comes from project.yml's `spark:` block
(a standalone master or a Spark Connect endpoint); prints one JSON line per `runner.write`.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import runner
from runner.declarations.loader import load_project
from runner.execute.spark import get_spark

SCHEMA = "id long, region string, name string, ts long"


def rows(start: int, count: int, version: int) -> list[tuple[int, str, str, int]]:
    return [(i, ("eu", "us")[i % 2], f"name-{i}-v{version}", version) for i in range(start, start + count)]


def main(project_dir: str) -> None:
    spark = get_spark(load_project(project_dir).spark)
    # Three bulk inserts leave small files to resize; the upsert leaves an old version to clean.
    batches = [("bulk_insert", rows(0, 30, 1)), ("bulk_insert", rows(30, 30, 1)), ("bulk_insert", rows(60, 30, 1)),
               ("upsert", rows(0, 4, 2))]
    for operation, data in batches:
        result = runner.write(spark.createDataFrame(data, SCHEMA), "orders", operation=operation,
                              project_dir=project_dir)
        print(json.dumps(dataclasses.asdict(result)), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
