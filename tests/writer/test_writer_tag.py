"""The driver engine's tagging: the key-only lookup (index keys unique) gives the join's rows."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.writer import local
from runner.writer.index import OLD_ROW
from runner.writer.prepare import SEQ
from runner.writer.schema import PARTITION_PATH, RECORD_KEY
from runner.writer.tasks import TARGET

PARTITIONS = ["eu", "us", ""]
KEYS = [str(i) for i in range(8)]


def _records(pairs: list[tuple[str, str]]) -> pa.Table:
    return pa.table({PARTITION_PATH: [p for p, _ in pairs], RECORD_KEY: [k for _, k in pairs],
                     SEQ: list(range(len(pairs)))},
                    schema=pa.schema([(PARTITION_PATH, pa.string()), (RECORD_KEY, pa.string()), (SEQ, pa.int64())]))


def _index(rows: list[tuple[str, str, str]]) -> pa.Table:
    return pa.table({"_w_ipath": [r[0] for r in rows], "_w_ikey": [r[1] for r in rows],
                     "_w_ifid": [r[2] for r in rows]}, schema=pa.schema(
                         [("_w_ipath", pa.string()), ("_w_ikey", pa.string()), ("_w_ifid", pa.string())]))


def _rows(tagged: pa.Table) -> list[tuple[int, str | None]]:
    return sorted(zip(tagged.column(SEQ).to_pylist(), tagged.column(TARGET).to_pylist(), strict=True),
                  key=repr)


pairs = st.tuples(st.sampled_from(PARTITIONS), st.sampled_from(KEYS))


@settings(max_examples=200, deadline=None)
@given(records=st.lists(pairs, max_size=40, unique_by=lambda pair: pair[1]),
       index=st.dictionaries(st.sampled_from(KEYS), st.tuples(st.sampled_from(PARTITIONS), st.sampled_from("abc"))))
def test_the_key_lookup_tags_as_the_join_does_when_keys_are_unique(
        records: list[tuple[str, str]], index: dict[str, tuple[str, str]]) -> None:
    table = _index([(p, k, f) for k, (p, f) in index.items()])
    by_key = local._tag_by_key(_records(records), table)
    assert by_key is not None  # no key twice on either side: the lookup answers
    assert by_key.num_rows == len(records)
    assert by_key.column(SEQ).to_pylist() == list(range(len(records)))  # input order
    assert _rows(by_key) == _rows(local._tag_by_join(_records(records), table))


@settings(max_examples=300, deadline=None)
@given(records=st.lists(pairs, max_size=30),
       index=st.lists(st.tuples(st.sampled_from(PARTITIONS), st.sampled_from(KEYS), st.sampled_from("abc")),
                      max_size=20))
def test_tagging_gives_the_joins_rows_whatever_repeats_on_either_side(
        records: list[tuple[str, str]], index: list[tuple[str, str, str]]) -> None:
    """Keys repeated among the records (one key in two partitions) or in the index (one key in two
    groups): the lookup declines and the join answers, so `tag` always gives the join's rows."""
    table = _index(index)
    assert _rows(local.tag(_records(records), table)) == _rows(local._tag_by_join(_records(records), table))
    keys = [k for _, k in records]
    declines = len(set(keys)) < len(keys) or any(sum(1 for _, held, _ in index if held == k) > 1 for k in set(keys))
    assert (local._tag_by_key(_records(records), table) is None) == declines


def test_a_key_in_two_groups_is_tagged_for_both_by_the_join() -> None:
    index = _index([("eu", "1", "a"), ("eu", "1", "b"), ("us", "2", "c")])
    assert local._tag_by_key(_records([("eu", "1"), ("us", "2"), ("us", "1")]), index) is None
    tagged = local.tag(_records([("eu", "1"), ("us", "2"), ("us", "1")]), index)
    assert _rows(tagged) == [(0, "a"), (0, "b"), (1, "c"), (2, None)]


def test_keys_known_distinct_tag_as_the_join_does() -> None:
    """The lookup told the keys are distinct (by de-duplication) skips its own check, same rows."""
    index = pa.table({"_w_ipath": ["eu", "us", "eu"], "_w_ikey": ["1", "2", "3"], "_w_ifid": ["f1", "f2", "f3"]})
    records = _records([("eu", "1"), ("us", "2"), ("us", "3"), ("eu", "4")])
    tagged = local.tag(records, index, keys_distinct=True)
    assert _rows(tagged) == _rows(local._tag_by_join(records, index))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["f1", "f10", "f2", "é", "a", None]), st.integers(0, 50)), max_size=40,
                unique_by=lambda r: r[1]))
def test_runs_come_in_the_order_of_arrows_sort_by_value_then_position(rows: list[tuple[str | None, int]]) -> None:
    table = pa.table({TARGET: pa.array([r[0] for r in rows], pa.string()),
                      SEQ: pa.array([r[1] for r in rows], pa.int64())})
    expected = table.sort_by([(TARGET, "ascending"), (SEQ, "ascending")])
    assert table.take(pa.array(local._runs_of(table, TARGET)[0], pa.int64())).equals(expected)


@settings(max_examples=200, deadline=None)
@given(records=st.lists(pairs, max_size=30, unique_by=lambda pair: pair[1]),
       index=st.lists(st.tuples(st.sampled_from(PARTITIONS), st.sampled_from(KEYS), st.sampled_from("ab")),
                      max_size=20, unique_by=lambda row: row[1]))
def test_the_lookup_gives_each_tagged_record_the_row_of_its_key_in_its_file(
        records: list[tuple[str, str]], index: list[tuple[str, str, str]]) -> None:
    """With the driver's index (`OLD_ROW`: each key's row in its file), a tagged record carries the
    row of its key in the file it is tagged to, an untagged one none; and every row of a file whose
    key and partition a record has is claimed by that record, which the merge relies on to find its
    updated rows without a lookup."""
    rows_in_file: dict[str, int] = {}
    old_rows = []
    for _, _, file_id in index:
        old_rows.append(rows_in_file.get(file_id, 0))
        rows_in_file[file_id] = old_rows[-1] + 1
    table = _index(index).append_column(OLD_ROW, pa.array(old_rows, pa.int64()))
    tagged = local.tag(_records(records), table, keys_distinct=True)
    claimed = dict(zip(zip(tagged.column(TARGET).to_pylist(), tagged.column(OLD_ROW).to_pylist(), strict=True),
                       tagged.column(RECORD_KEY).to_pylist(), strict=True))
    expected = {(file_id, row): key for (path, key, file_id), row in zip(index, old_rows, strict=True)
                if (path, key) in set(records)}
    assert {k: v for k, v in claimed.items() if k[0] is not None} == expected
    assert all(row is None for fid, row in claimed if fid is None)
