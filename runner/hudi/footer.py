"""The record-key footer of a Hudi base file, built once for the writer and for resize.

Hudi's `HoodieBloomFilterWriteSupport` puts four keys in every base file's Parquet footer:
`org.apache.hudi.bloomfilter` (the keys' bloom filter, see `runner.hudi.bloom`),
`hoodie_bloom_filter_type_code`, and `hoodie_min_record_key` / `hoodie_max_record_key`.

The key range is read back by Hudi's bloom index (`BloomIndexFileInfo.isKeyInRange`), which
compares the looked-up key with both bounds as Java strings: `String.compareTo`, code unit by
UTF-16 code unit. That is not code point order (nor UTF-8 byte order, which Arrow uses): a
character above U+FFFF is a surrogate pair starting at U+D800..U+DBFF, so in Java it sorts
*before* U+E000..U+FFFF. A range in any other order can exclude a key the file holds, and the
index would then miss the file and write a duplicate record. So both bounds follow Java's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from runner.hudi import bloom

if TYPE_CHECKING:
    import pyarrow as pa

MIN_RECORD_KEY = "hoodie_min_record_key"
MAX_RECORD_KEY = "hoodie_max_record_key"
BLOOM_FILTER = "org.apache.hudi.bloomfilter"
BLOOM_FILTER_TYPE_CODE = "hoodie_bloom_filter_type_code"

# UTF-8 code point order and Java's UTF-16 order only disagree when a key holds a character from
# U+E000 up (the tail of the BMP, or a supplementary character); below that both orders agree. In
# UTF-8 exactly those characters start with a byte from 0xEE up (U+E000 is EE 80 80; 4-byte
# sequences start F0-F4; every other byte is below 0xEE), so one pass over the bytes finds them.
_FIRST_BYTE_FROM_E000 = 0xEE


def java_order(text: str) -> bytes:
    """A sort key equal to Java's `String.compareTo` order: the big-endian UTF-16 code units."""
    return text.encode("utf-16-be", "surrogatepass")


def key_range(keys: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """The smallest and largest record key in Java's order; None when there is no (non-null) key."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = keys.cast(pa.string())
    if len(keys) == keys.null_count:
        return None
    if not _may_order_differently(keys):
        bounds = pc.min_max(keys)
        return bounds["min"].as_py(), bounds["max"].as_py()
    present = [k for k in keys.to_pylist() if k is not None]
    return min(present, key=java_order), max(present, key=java_order)


def _may_order_differently(keys: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a string key holds a character from U+E000 up, found on the UTF-8 bytes (a regex
    over the strings cost as much as the whole bloom filter). Bytes under null slots count too:
    at worst that takes the slower exact path."""
    import numpy as np

    for chunk in keys.chunks if hasattr(keys, "chunks") else [keys]:
        if not len(chunk):
            continue
        _, offset_buffer, data_buffer = chunk.buffers()
        offsets = np.frombuffer(offset_buffer, np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
        if data_buffer is not None and offsets[-1] > offsets[0]:
            data = np.frombuffer(data_buffer, np.uint8)[offsets[0] : offsets[-1]]
            if bool((data >= _FIRST_BYTE_FROM_E000).any()):
                return True
    return False


def merged_range(ranges: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The range covering every given (min, max) range, in Java's order; None for no ranges."""
    listed = list(ranges)
    if not listed:
        return None
    return min((r[0] for r in listed), key=java_order), max((r[1] for r in listed), key=java_order)


def range_of(footer: Mapping[bytes, bytes] | None) -> tuple[str, str] | None:
    """The (min, max) record keys a Parquet footer records, or None when it lacks either."""
    if not footer:
        return None
    low, high = footer.get(MIN_RECORD_KEY.encode()), footer.get(MAX_RECORD_KEY.encode())
    return None if low is None or high is None else (low.decode("utf-8"), high.decode("utf-8"))


def record_key_footer(keys: pa.Array | pa.ChunkedArray) -> dict[str, str]:
    """The footer entries Hudi derives from a file's record keys, given in file order: the bloom
    filter always, the key range when there is a key."""
    import pyarrow as pa

    flat = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    footer = {BLOOM_FILTER: bloom.serialize(flat.cast(pa.string())), BLOOM_FILTER_TYPE_CODE: bloom.TYPE_CODE}
    return footer | range_footer(key_range(flat))


def range_footer(bounds: tuple[str, str] | None) -> dict[str, str]:
    """The two key-range footer entries, none without a range."""
    return {} if bounds is None else {MIN_RECORD_KEY: bounds[0], MAX_RECORD_KEY: bounds[1]}
