"""The driver engine's tagging: the key-only lookup (index keys unique) gives the join's rows."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.writer import local
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
@given(records=st.lists(pairs, max_size=40),
       index=st.dictionaries(st.sampled_from(KEYS), st.tuples(st.sampled_from(PARTITIONS), st.sampled_from("abc"))))
def test_the_key_lookup_tags_as_the_join_does_when_index_keys_are_unique(
        records: list[tuple[str, str]], index: dict[str, tuple[str, str]]) -> None:
    table = _index([(p, k, f) for k, (p, f) in index.items()])
    assert local._unique(table.column("_w_ikey"))
    by_key = local._tag_by_key(_records(records), table)
    assert by_key.num_rows == len(records)
    assert _rows(by_key) == _rows(local._tag_by_join(_records(records), table))


def test_a_key_in_two_groups_is_tagged_for_both_by_the_join() -> None:
    index = _index([("eu", "1", "a"), ("eu", "1", "b"), ("us", "2", "c")])
    assert not local._unique(index.column("_w_ikey"))
    tagged = local.tag(_records([("eu", "1"), ("us", "2"), ("us", "1")]), index)
    assert _rows(tagged) == [(0, "a"), (0, "b"), (1, "c"), (2, None)]
