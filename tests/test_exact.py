"""The exact-body shortcut inside the matcher: a body identical to a recorded one is found
by its body, with exactly the outcome (index and consumption) the full match gives."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import providers
from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import Exchange, Response
from otel_replay.gateway.bodies import Bodies
from otel_replay.matching.exact import RAW_MAX, ExactIndex, exact_key
from otel_replay.matching.matcher import Matcher
from otel_replay.redaction.redact import PATTERNS_ONLY

PATH = "/v1/chat/completions"

# bodies that are equal, equal up to volatile values or key order, or different
BODIES = [
    {"model": "m", "messages": [{"role": "user", "content": "hi call_a1"}], "temperature": 0.2},
    {"model": "m", "messages": [{"role": "user", "content": "hi call_b2"}], "temperature": 0.2},
    {"temperature": 0.2, "model": "m", "messages": [{"role": "user", "content": "hi call_a1"}]},
    {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.2},
    {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.7},
    {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
]


def exchange(body: dict, partial: bool = False) -> Exchange:
    request = providers.get("openai").canonical(PATH, body)
    if partial:  # as rebuilt from a trace: params known only in part
        request = dataclasses.replace(request, known=request.known - {"params"})
    return Exchange("openai", "chat", request, Response(200), raw_request=body)


def full_match(matcher: Matcher, body: dict) -> int | None:
    try:
        return matcher.match(providers.get("openai").canonical(PATH, body))
    except ReplayMiss:
        return None


def test_exact_index_keys_and_lookups():
    recorded = [exchange(BODIES[0]), exchange(BODIES[3], partial=True), exchange(BODIES[0])]
    index = ExactIndex(recorded)
    assert index.for_body("openai", PATH, BODIES[0]) == [0, 2]
    assert index.for_body("openai", PATH, BODIES[3]) == []  # partial: not indexed
    assert index.for_body("anthropic", PATH, BODIES[0]) == []
    assert index.for_body("openai", PATH, json.loads(json.dumps(BODIES[0]))) == [0, 2]
    assert index.for_body("openai", PATH, "not a dict") == []
    raw = json.dumps(BODIES[0], separators=(",", ":")).encode()
    assert index.for_raw("openai", PATH, raw) == [0, 2]  # small: found as sent
    assert index.for_raw("openai", PATH, b"\xff{") == []
    assert index.for_raw("openai", PATH, b"[1]") == []
    big = {**BODIES[0], "padding": "x" * RAW_MAX}
    large = ExactIndex([exchange(big)])
    assert large.for_raw("openai", PATH, json.dumps(big, separators=(",", ":")).encode()) == []
    assert large.for_body("openai", PATH, json.loads(json.dumps(big))) == [0]  # by its body
    key = exact_key("openai", PATH, {"a": "é", "b": [{"c": 1}, "d"]})
    assert key == exact_key("openai", PATH, {"a": "é", "b": [{"c": 1}, "d"]})
    assert key.startswith("openai /v1/chat/completions ")
    for other in ({"b": [{"c": 1}, "d"], "a": "é"}, {"a": "é", "b": [{"c": 1}]}, {"a": "e"}):
        assert exact_key("openai", PATH, other) != key  # order, items and text all count
    assert not ExactIndex()


def test_exact_hits_consume_in_order_and_defer_when_shapes_are_mixed():
    matcher = Matcher.for_exchanges([exchange(BODIES[0]), exchange(BODIES[0])])
    reread = json.loads(json.dumps(BODIES[0]))
    assert matcher.exact_hit("openai", PATH, reread) == 0
    assert matcher.exact_hit("openai", PATH, BODIES[0]) == 1
    assert matcher.exact_hit("openai", PATH, BODIES[0]) is None
    mixed = Matcher.for_exchanges([exchange(BODIES[0]), exchange(BODIES[3], partial=True)])
    assert mixed.exact_hit("openai", PATH, BODIES[0]) is None  # left to the full match
    assert mixed.used == set()


BODY_READER = Bodies(PATTERNS_ONLY)

recordings = st.lists(
    st.tuples(st.integers(0, len(BODIES) - 1), st.booleans()), min_size=0, max_size=8
)
lives = st.lists(st.tuples(st.integers(0, len(BODIES) - 1), st.booleans()), min_size=1, max_size=10)


@settings(max_examples=70, deadline=None)
@given(recordings, lives)
def test_the_exact_shortcut_gives_what_the_full_match_gives(recorded, live):
    exchanges = [exchange(BODIES[i], partial) for i, partial in recorded]
    shortcut = Matcher.for_exchanges(exchanges)
    full = Matcher.for_exchanges(exchanges)
    for i, as_bytes in live:
        body = BODIES[i]
        if as_bytes:  # as the gateway reads it: items shared with earlier bodies
            raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
            exact = shortcut.exact_hit_raw("openai", PATH, raw)
            if exact is None:
                exact = shortcut.exact_hit("openai", PATH, BODY_READER.read(raw).value)
        else:
            exact = shortcut.exact_hit("openai", PATH, body)
        got = exact if exact is not None else full_match(shortcut, body)
        assert got == full_match(full, body)
        assert shortcut.used == full.used
