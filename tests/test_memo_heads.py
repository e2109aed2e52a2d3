"""The memos that take a list's head whole from the last list give what the plain map and
the plain hash give, whatever the lists share with each other and in whatever order."""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.core.memo import ListHash, ListMap, forget, shared_head

# a pool of objects: a list drawn from it shares items (the very objects) with the others
_POOL = [{"n": n} for n in range(6)] + [[1], "text", 3, None]
_lists = st.lists(st.lists(st.integers(0, len(_POOL) - 1), max_size=8), max_size=8)


def _plain_text(items: list[Any]) -> bytes:
    return b"[" + b",".join(json.dumps(i).encode() for i in items) + b"]"


@settings(max_examples=100, deadline=None)
@given(_lists, st.integers(0, 8))
def test_list_map_and_list_hash_equal_the_plain_ones(picks: list[list[int]], clear: int) -> None:
    calls: list[object] = []

    def tag(item: object) -> tuple[str, object]:
        calls.append(item)
        return ("out", item)

    each = ListMap(tag)
    digests = ListHash(lambda item: json.dumps(item).encode())
    for n, pick in enumerate(picks):
        items = [_POOL[i] for i in pick]
        if n == clear:
            forget()
        out = each(items)
        assert out == [("out", item) for item in items]
        assert all(o[1] is item for o, item in zip(out, items, strict=True))
        out.append("changed by its caller")  # the memo keeps its own copy
        assert digests.hexdigest(items) == hashlib.sha256(_plain_text(items)).hexdigest()
        assert digests.size(items) == len(_plain_text(items))
    # each item object converted once at most between two clears
    assert len(calls) <= len(_POOL) * 2


@given(_lists)
def test_shared_head_counts_the_identical_items_at_the_head(picks: list[list[int]]) -> None:
    for a, b in itertools.pairwise(picks):
        left, right = [_POOL[i] for i in a], [_POOL[i] for i in b]
        plain = 0
        while plain < min(len(left), len(right)) and left[plain] is right[plain]:
            plain += 1
        assert shared_head(left, right) == plain
