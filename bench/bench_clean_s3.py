"""Benchmark the cleaner's deletes on S3: requests per file and wall time against bare boto3.

A local S3-compatible server (moto, `_s3_server.py`, in its own process on 127.0.0.1) counts every
request it serves. `--files` objects (tiny bodies) are uploaded under `--partitions` partition
prefixes of one table (not timed), then each run deletes all of them, interleaved:

- **baseline**: a bare boto3 loop: `delete_objects` with 1,000 keys per request, one request after
  the other, on a client made once;
- **runner**: `ObjectStorage.delete_many`, what the cleaner calls on S3 (in-process on a local
  master, inside each task on Spark): DeleteObjects batches of up to 1,000 keys in quiet mode,
  several requests in flight at once (its thread pool), every key's result reported;
- **before** (for reference, on the first `--old-files` files only): the per-file path the
  cleaner used until now, `ObjectStorage.delete` (a stat, then a DELETE) in a loop.

Every run checks that the bucket is empty afterwards and counts requests at the server.
The figures are the ratio of medians (runner / baseline) and requests per 500 files. Usage:

    .venv/bin/python bench/bench_clean_s3.py                       # quick: 5,000 files
    .venv/bin/python bench/bench_clean_s3.py --files 401000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
from _common import markdown_table, median, timed

from runner.storage.s3 import ObjectStorage

HERE = Path(__file__).resolve().parent
BUCKET = "bench-clean"
PREFIX = "warehouse/t"
BASELINE = "baseline: bare boto3 delete_objects loop (1,000 keys per request)"
RUNNER = "runner: ObjectStorage.delete_many"
BEFORE = "before: ObjectStorage.delete per file (stat + DELETE)"


class Server:
    """The counting moto server in a child process."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, str(HERE / "_s3_server.py")], stdout=subprocess.PIPE,
                                        text=True)
        assert self.process.stdout is not None
        self.endpoint = self.process.stdout.readline().strip()
        assert self.endpoint.startswith("http://127.0.0.1:"), self.endpoint

    def counts(self, *, reset: bool = False) -> dict[str, int]:
        request = urllib.request.Request(f"{self.endpoint}/__requests__", method="DELETE" if reset else "GET")
        with urllib.request.urlopen(request) as answer:
            return dict(json.loads(answer.read()))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def options(endpoint: str) -> dict[str, str]:
    return {"endpoint_override": endpoint, "access_key": "bench", "secret_key": "bench", "region": "us-east-1"}


def client_for(endpoint: str) -> Any:
    return boto3.session.Session(aws_access_key_id="bench", aws_secret_access_key="bench",
                                 region_name="us-east-1").client("s3", endpoint_url=endpoint)


def relative_paths(files: int, partitions: int) -> list[str]:
    """Hudi-like base-file names spread over partitions, sorted as a clean plan lists them."""
    return sorted(f"dt={i % partitions:04d}/{i:08x}-0000-0000-0000-000000000000-0_0-1-2_20260101000000000.parquet"
                  for i in range(files))


def upload(client: Any, paths: list[str]) -> None:
    def put(path: str) -> None:
        client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{path}", Body=b"x")

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(put, paths))


def bare_boto3(client: Any, paths: list[str]) -> None:
    keys = [f"{PREFIX}/{p}" for p in paths]
    for start in range(0, len(keys), 1000):
        answer = client.delete_objects(
            Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]], "Quiet": True})
        assert not answer.get("Errors"), answer["Errors"]


def runner_delete_many(storage: ObjectStorage, paths: list[str]) -> None:
    results = storage.delete_many(paths)
    assert all(r.deleted and r.error is None for r in results)


def remaining(client: Any) -> int:
    """Objects left under the table, apart from the empty `prefix/` folder markers pyarrow leaves."""
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{PREFIX}/")
    return sum(1 for page in pages for o in page.get("Contents", []) if not o["Key"].endswith("/"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--old-files", type=int, default=300, help="files deleted by the per-file reference row")
    args = parser.parse_args()
    paths = relative_paths(args.files, args.partitions)
    old_paths = paths[: args.old_files]
    print(f"{args.files:,} objects in {args.partitions} partitions; Python {platform.python_version()}, "
          f"boto3 {boto3.__version__}; moto server in its own process", flush=True)
    server = Server()
    try:
        client = client_for(server.endpoint)
        client.create_bucket(Bucket=BUCKET)
        storage = ObjectStorage.from_uri(f"s3://{BUCKET}/{PREFIX}", options=options(server.endpoint), env={})
        storage.options.boto3_client()  # built once, as in a long-running apply (not timed)
        variants: dict[str, tuple[list[str], Callable[[], None]]] = {
            BASELINE: (paths, lambda: bare_boto3(client, paths)),
            RUNNER: (paths, lambda: runner_delete_many(storage, paths)),
            BEFORE: (old_paths, lambda: [storage.delete(p) for p in old_paths] and None),
        }
        seconds: dict[str, list[float]] = {label: [] for label in variants}
        requests: dict[str, dict[str, int]] = {}
        for run in range(args.runs):
            order = list(variants)[run % len(variants):] + list(variants)[:run % len(variants)]
            for label in order:
                files, action = variants[label]
                upload(client, files)
                server.counts(reset=True)
                elapsed, _ = timed(action)
                requests[label] = server.counts()
                assert remaining(client) == 0, f"{label} left objects behind"
                seconds[label].append(elapsed)
                print(f"  run {run + 1}: {label}: {elapsed:.2f} s, requests {requests[label]}", flush=True)
    finally:
        server.stop()

    base = median(seconds[BASELINE]) / len(paths)
    rows = []
    for label, (files, _) in variants.items():
        per_file = median(seconds[label]) / len(files)
        total = sum(requests[label].values())
        rows.append([label, f"{len(files):,}", f"{median(seconds[label]):.2f} s",
                     f"{min(seconds[label]):.2f}–{max(seconds[label]):.2f} s",
                     ", ".join(f"{k} {v:,}" for k, v in sorted(requests[label].items())),
                     f"{total * 500 / len(files):.2f}", f"{per_file / base:.2f}×"])
    print(f"\n### Clean deletes on S3 (moto on 127.0.0.1), median of {args.runs} runs\n")
    print(markdown_table(["what", "files", "median", "min–max", "requests (at the server)",
                          "requests per 500 files", "time per file vs baseline"], rows))


if __name__ == "__main__":
    main()
