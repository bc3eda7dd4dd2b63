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

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from runner.errors import RefusedError
from runner.hudi import bloom, bloom_merge

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
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
# Keys of each input checked against the merged bloom filter: a filter that is not its file's
# fails nearly every key, so a few catch it, and hashing them is little next to the merge itself.
_SAMPLE_KEYS = 32


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
        fixed = _fixed_length_range(keys)
        if fixed is not None:
            return fixed
        bounds = pc.min_max(keys)
        return bounds["min"].as_py(), bounds["max"].as_py()
    present = [k for k in keys.to_pylist() if k is not None]
    return min(present, key=java_order), max(present, key=java_order)


def _fixed_length_range(keys: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """`pc.min_max` of string keys all of one length and none null (UUIDs, fixed-width ids), on
    their bytes seen as numpy fixed-width byte strings (`S<length>`), whose `argmin` and
    `argmax` compare them as unsigned bytes over the whole width, Arrow's order: `key_range` of
    31,250 6-digit keys 0.26 ms where Arrow's string min_max made it 0.82 (bench/README.md, the
    writer9 round). None for any other column (left to `pc.min_max`)."""
    import numpy as np

    chunks = keys.chunks if hasattr(keys, "chunks") else [keys]
    if len(chunks) != 1 or keys.null_count:
        return None
    chunk = chunks[0]
    _, offset_buffer, data_buffer = chunk.buffers()
    offsets = np.frombuffer(offset_buffer, np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
    count, first = len(chunk), int(offsets[0])
    length = (int(offsets[-1]) - first) // count if count else 0
    if not length or int(offsets[-1]) - first != count * length:
        return None
    if not bool((offsets[1:] - offsets[:-1] == length).all()):
        return None
    data = np.frombuffer(data_buffer, np.uint8)[first : first + count * length]
    strings = data.view(f"S{length}")
    # numpy's argmin/argmax of byte strings costs about 1 ns a key, and 10 for each key that is
    # a new extreme: in ascending keys every key is a new max. So the scan for the max (min) runs
    # from the end where the keys seem to end up higher (lower): ascending, descending and random
    # keys all take about 1 ns a key each way.
    rising = data[:length].tobytes() <= data[len(data) - length :].tobytes()
    least = int(strings.argmin()) if rising else count - 1 - int(strings[::-1].argmin())
    greatest = count - 1 - int(strings[::-1].argmax()) if rising else int(strings.argmax())
    return (data[least * length : (least + 1) * length].tobytes().decode("utf-8"),
            data[greatest * length : (greatest + 1) * length].tobytes().decode("utf-8"))


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


def extended_record_key_footer(old: bloom_merge.InputFilter,
                               keys: pa.Array | pa.ChunkedArray) -> tuple[dict[str, str], str]:
    """`record_key_footer` of a file whose first `old.records` keys, in order, are those of the file
    whose footer `old` comes from, hashing only the keys after them; and where the filter came from:
    "extended" (the old filter with the other keys added, `bloom.extend`), or "rebuilt: <why>"
    from all the keys. A copy-on-write merge writes such a file: the old records stay in place
    (an update replaces a record by one of the same key) and the inserts follow.

    The old filter is extended only when it has this writer's DYNAMIC_V0 geometry and exactly the
    rows and `currentNbRecord` of a filter of `old.records` keys (`bloom_merge.dynamic_rows`), and a
    sample of the first keys passes it: a filter that does not hold its file's keys (stale, or
    another file's) is rebuilt, not passed on. Built by Hudi or by `serialize`, the extended filter
    is byte for byte the rebuilt one; from a filter a resize merged it holds every key as well."""
    import pyarrow as pa

    flat = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    flat = flat.cast(pa.string())
    rows = _extendable(old, flat)
    if isinstance(rows, str):
        return record_key_footer(flat), f"rebuilt: {rows}"
    sample = flat.take(pa.array(_spread(0, old.records)))
    if not bool(bloom_merge.rows_hold(rows, sample).all()):
        return record_key_footer(flat), f"rebuilt: {old.path}: its bloom filter does not hold its record keys"
    value = bloom.extend(rows, old.records, flat.slice(old.records))
    entries = {BLOOM_FILTER: value, BLOOM_FILTER_TYPE_CODE: bloom.TYPE_CODE}
    return entries | range_footer(key_range(flat)), "extended"


def _extendable(old: bloom_merge.InputFilter, keys: pa.Array) -> list[npt.NDArray[np.uint8]] | str:
    """The old filter's rows when it can be extended with `keys` after its own; else why not."""
    if old.type_code != bloom.TYPE_CODE:
        return f"{old.path}: bloom filter type {old.type_code!r}, not {bloom.TYPE_CODE}"
    if not 0 < old.records <= len(keys):
        return f"{old.path}: {old.records} records, and the new file holds {len(keys)} record keys"
    try:
        bloom.check_keys(keys)  # what `serialize` refuses, refused here too without hashing
    except RefusedError as error:
        return str(error)
    try:
        return bloom_merge.dynamic_rows(old)
    except bloom_merge.NotMergeable as why:
        return str(why)


def range_footer(bounds: tuple[str, str] | None) -> dict[str, str]:
    """The two key-range footer entries, none without a range."""
    return {} if bounds is None else {MIN_RECORD_KEY: bounds[0], MAX_RECORD_KEY: bounds[1]}


def input_filter(path: str, entries: Mapping[bytes, bytes] | None, records: int) -> bloom_merge.InputFilter:
    """An input file's bloom filter as its footer entries (pyarrow's key-value metadata) give it."""
    entries = entries or {}
    value, code = entries.get(BLOOM_FILTER.encode()), entries.get(BLOOM_FILTER_TYPE_CODE.encode())
    return bloom_merge.InputFilter(path, code.decode("utf-8", "replace") if code else None, value, records)


def merged_record_key_footer(inputs: Sequence[bloom_merge.InputFilter],
                             keys: pa.ChunkedArray) -> tuple[dict[str, str], str]:
    """The footer of a file holding the inputs' rows, whose record keys are `keys` (each input's in
    turn, in input order), and where its bloom filter came from: "merged" from the inputs' filters
    (`runner.hudi.bloom_merge`, no key hashed) when they qualify, else "rebuilt: <why>" from the
    keys. Besides the layout checks of `bloom_merge`, a sample of every input's keys must pass the
    merged filter, so that a filter which does not hold its file's keys (taken from a file outside
    the group, or stale) is caught and rebuilt rather than passed on. A null or empty key is left to
    the rebuild, which refuses it.

    The key range, in Java's order, is computed from the keys, as Hudi's clustering computes it
    from the rows it writes. The inputs' recorded ranges would spare that scan (about 40 ms a group
    of a million keys), but only a sample of keys could check them, and a range that leaves out a
    key the file holds makes Hudi's bloom index skip the file for that key: an upsert of it then
    writes it again elsewhere (tests/hudi/test_footer.py, the unsampled key)."""
    merged = _checked_merge(inputs, keys)
    if isinstance(merged, str):
        return record_key_footer(keys), f"rebuilt: {merged}"
    entries = {BLOOM_FILTER: merged.value, BLOOM_FILTER_TYPE_CODE: merged.type_code}
    return entries | range_footer(key_range(keys)), "merged"


def _checked_merge(inputs: Sequence[bloom_merge.InputFilter], keys: pa.ChunkedArray
                   ) -> bloom_merge.MergedFilter | str:
    """The merged filter, checked on a sample of every input's keys; or why it is to be rebuilt."""
    import numpy as np
    import pyarrow as pa

    if keys.null_count:
        return "a record key is null"
    if sum(f.records for f in inputs) != len(keys):
        return f"the inputs record {sum(f.records for f in inputs)} rows but hold {len(keys)} record keys"
    try:
        for chunk in keys.chunks:
            bloom.check_keys(chunk)
    except RefusedError as error:
        return str(error)
    try:
        merged = bloom_merge.merge(inputs)
    except bloom_merge.NotMergeable as why:
        return str(why)
    starts = [0]
    for f in inputs:
        starts.append(starts[-1] + f.records)
    picks = np.concatenate([_spread(a, b) for a, b in pairwise(starts)])
    sample = keys.take(pa.array(picks)).combine_chunks()
    missing = (~bloom_merge.members(merged, sample)).nonzero()[0]
    if len(missing):
        return f"record key {sample[int(missing[0])].as_py()!r} fails its input's bloom filter"
    return merged


def _spread(start: int, end: int) -> npt.NDArray[np.int64]:
    """Up to _SAMPLE_KEYS indices from `start` to `end`, spread evenly, first and last included."""
    import numpy as np

    # Integer steps rather than numpy's linspace and unique: a merge samples 32 keys of every file
    # it writes, and the two calls cost more than the arithmetic on so few.
    count = min(end - start, _SAMPLE_KEYS)
    if count <= 1:
        return np.arange(start, start + count, dtype=np.int64)
    span = end - 1 - start
    return np.array(sorted({start + i * span // (count - 1) for i in range(count)}), np.int64)
