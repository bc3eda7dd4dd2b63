"""`bucket_index_evidence`: what makes the runner take a table for a bucket-indexed one (pure)."""

from __future__ import annotations

import uuid

from runner.hudi.bucket_index import bucket_index_evidence, is_bucket_file_id
from runner.testing.layout import bucket_file_id, file_id


def _evidence(ids: list[str], props: dict[str, str] | None = None, folder: bool = False) -> str | None:
    return bucket_index_evidence(props or {}, has_bucket_index_folder=folder, file_ids=ids)


def test_ordinary_file_ids_are_not_taken_for_buckets():
    ids = [file_id("t", 0, n) for n in range(5_000)] + [f"{uuid.UUID(int=n << 64)}-0" for n in range(10)]
    assert _evidence(ids) is None
    assert _evidence([]) is None


def test_bucket_ids_are_found_even_after_a_few_groups_were_renamed():
    buckets = [bucket_file_id(n, file_id("t", 0, n)) for n in range(4)]
    assert all(is_bucket_file_id(i) for i in buckets)
    evidence = _evidence([*buckets, file_id("t", 1, 1), file_id("t", 1, 2)])
    assert evidence is not None and "4 of its 6 file groups" in evidence and buckets[0] in evidence
    assert _evidence([buckets[0], file_id("t", 1, 0), file_id("t", 1, 1)]) is None  # a third: chance


def test_the_properties_and_the_folder_name_themselves():
    assert _evidence([], {"hoodie.index.type": "bucket"}) == "hoodie.properties sets hoodie.index.type=bucket"
    assert _evidence([], {"index.type": "BUCKET"}) == "hoodie.properties sets index.type=BUCKET"
    assert _evidence([], {"hoodie.index.type": "BLOOM"}) is None
    assert _evidence([], {"hoodie.bucket.index.num.buckets": "8"}) == \
        "hoodie.properties sets hoodie.bucket.index.num.buckets=8"
    assert ".hoodie/.bucket_index/ exists" in (_evidence([], folder=True) or "")
