"""Whether a table is laid out for Hudi's bucket index, which moving records between file groups breaks.

With `hoodie.index.type=BUCKET` a writer never looks records up: it hashes a key to a bucket number
and takes the file group whose id starts with that number (`BucketIdentifier.bucketIdFromFileId`:
the id's first 8 characters, a zero-padded decimal; new ids are a random UUID with those 8
characters replaced). The consistent-hashing engine keeps its buckets' ranges and file ids in
`.hoodie/.bucket_index/`. A rewrite into a file group with a fresh id, or an insert routed to
another bucket's small file, leaves records where the index will never look: the next upsert of
such a key writes a second copy instead of replacing it, and a delete misses it. Hudi does not
size-cluster such tables either (only its consistent-hashing engine resizes buckets, its own way).

The index type is a writer setting, which Hudi does not record in `hoodie.properties`; so the
evidence is any of: the property where a tool did record it, the consistent-hashing folder, or the
file ids themselves. A random UUID starts with `000` and five more decimal digits once in about
44,000 file groups, while bucket ids start so for every bucket number below 100,000; when at least
half of the table's active file groups look like that, the table is taken for a bucket table.
Refusing a resize of an ordinary table by mistake costs nothing but the resize.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping

BUCKET_INDEX_FOLDER = ".hoodie/.bucket_index"

# Writer settings that, found in hoodie.properties, say the table is bucket-indexed; Flink spells
# the first without the `hoodie.` prefix.
_INDEX_TYPE_KEYS = ("hoodie.index.type", "index.type")
_BUCKET_KEY_PREFIXES = ("hoodie.bucket.index.", "hoodie.index.bucket.")
_BUCKET_FILE_ID = re.compile(r"000\d{5}-")


def is_bucket_file_id(file_id: str) -> bool:
    """A file id as the bucket index names file groups (bucket numbers below 100,000)."""
    return _BUCKET_FILE_ID.match(file_id) is not None


def new_file_id() -> str:
    """A new file group id as Hudi makes one (a random UUID and the first file index, `-0`), never
    one that looks bucket-numbered: the runner's own groups must not count as evidence."""
    while True:
        file_id = f"{uuid.uuid4()}-0"
        if not is_bucket_file_id(file_id):
            return file_id


def bucket_index_evidence(
    properties: Mapping[str, str],
    *,
    has_bucket_index_folder: bool,
    file_ids: Iterable[str],
) -> str | None:
    """What says the table uses a bucket index, in words naming the property, folder or file ids;
    None when nothing does.

    Args:
        properties: hoodie.properties as read.
        has_bucket_index_folder: `.hoodie/.bucket_index` exists.
        file_ids: the ids of the table's active file groups (those listed).
    """
    for key in _INDEX_TYPE_KEYS:
        value = properties.get(key, "").strip()
        if value.upper() == "BUCKET":
            return f"hoodie.properties sets {key}={value}"
    bucket_keys = sorted(k for k in properties if k.startswith(_BUCKET_KEY_PREFIXES))
    if bucket_keys:
        return f"hoodie.properties sets {bucket_keys[0]}={properties[bucket_keys[0]].strip()}"
    if has_bucket_index_folder:
        return f"{BUCKET_INDEX_FOLDER}/ exists (the consistent-hashing bucket index keeps its buckets there)"
    ids = list(file_ids)
    bucketed = [i for i in ids if is_bucket_file_id(i)]
    if bucketed and 2 * len(bucketed) >= len(ids):
        return (f"{len(bucketed)} of its {len(ids)} file groups have bucket-numbered ids "
                f"(e.g. {bucketed[0]}: the bucket index's 8-digit bucket number first)")
    return None


def bucket_index_refusal(evidence: str, *, what: str, fix: str) -> str:
    """The sentence that refuses `what` on a bucket-indexed table, with the fix."""
    return (f"{what} refused: the table looks bucket-indexed (hoodie.index.type=BUCKET): {evidence}. "
            "Its writers find each record's file group by the bucket number in the file id, so records "
            f"moved to another file group would be duplicated by the next upsert; {fix}")
