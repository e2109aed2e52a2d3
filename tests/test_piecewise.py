"""Work proportional to what is new: a request's repeated items are read, redacted,
normalised and hashed once, and the result is exactly what the whole-body definitions give.

Bodies are built from a pool of items (messages, tools) that later bodies repeat, written
in varied layouts; each stage is checked against its plain definition on fresh copies."""

from __future__ import annotations

import copy
import hashlib
import json
import re

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import providers
from otel_replay.core.exchange import CanonicalRequest
from otel_replay.core.jsontext import value_key
from otel_replay.core.memo import SHARED
from otel_replay.gateway.bodies import Bodies
from otel_replay.gateway.body import Item
from otel_replay.gateway.call import (
    BodyTooDeep,
    parse_body,
    parses_within,
    redacted_body,
    within_depth,
)
from otel_replay.matching.normalize import Normalizer
from otel_replay.matching.projection import canonical_bytes, canonical_json, digest, item_bytes
from otel_replay.redaction.redact import Redactor

SECRET = "s3cr3t-value-of-the-agent-0042"
REDACTOR = Redactor({"AGENT_TOKEN": SECRET})
FRAGMENTS = [
    "call_ab12",
    "toolu_01XFDUDYJgAACzvnptvVoYEL",
    "3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "0b1c2d3e-5717-4562-b3fc-2c963f66afa6",
    "77777777-5717-4562-b3fc-2c963f66afa6",
    "2024-05-01T12:00:00Z",
    "sk-proj-" + "A1b2C3d4" * 6,
    SECRET,
    "<id:1>",
    'quote " and \\ slash',
    "\u00e9\U0001f600",
    "plain words",
    "x" * 300,
]
text = st.lists(st.sampled_from(FRAGMENTS), max_size=4).map(" ".join)
leaf = st.none() | st.booleans() | st.integers(-5, 10**12) | text
value = st.recursive(
    leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=12,
)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": text},
    optional={"tool_call_id": st.sampled_from(FRAGMENTS[:3]), "extra": value},
)
pool = st.lists(message | value, min_size=1, max_size=6)
picks = st.lists(st.integers(0, 5), max_size=6)
layout = st.tuples(st.booleans(), st.booleans(), st.sampled_from(["", " ", "\n  "]))


def _bodies(items: list[object], choices: list[list[int]]) -> list[dict[str, object]]:
    return [
        {
            "model": "m",
            "instructions": f"{'long instructions ' * 20}{len(chosen) % 2}",
            "messages": [items[i % len(items)] for i in chosen],
            "meta": items[len(chosen) % len(items)],
            "n": len(chosen),
            # a secret by its field's name, short or remembered like an item (long)
            "api_key": FRAGMENTS[len(chosen) % len(FRAGMENTS)],
        }
        for chosen in choices
    ]


def _write(body: object, spaced: bool, ascii_only: bool, pad: str) -> bytes:
    separators = (", ", ": ") if spaced else (",", ":")
    raw = json.dumps(body, separators=separators, ensure_ascii=ascii_only)
    return (pad + raw + pad).encode()


@settings(max_examples=70, deadline=None)
@given(pool, st.lists(picks, min_size=1, max_size=5), st.lists(layout, min_size=5, max_size=5))
def test_bodies_read_as_the_whole_body_definitions(items, choices, layouts):
    reader = Bodies(REDACTOR)
    for body, (spaced, ascii_only, pad) in zip(_bodies(items, choices), layouts, strict=False):
        raw = _write(body, spaced, ascii_only, pad)
        read = reader.read(raw)
        assert read.value == parse_body(raw) == body
        if spaced:  # redacted a step at a time, as while a provider works
            for _ in read.redacting():
                pass
        assert read.redacted() == redacted_body(REDACTOR, raw)
        assert SECRET not in json.dumps(read.redacted())


def test_a_top_level_field_named_as_a_secret_is_redacted_as_in_the_whole_body() -> None:
    reader = Bodies(REDACTOR)
    body = {
        "model": "m",
        "password": "hunter2hunter2",
        "api_key": "credential-" + "q7" * 200,  # long: read like an array item
        "messages": [{"role": "user", "content": "hi"}],
    }
    for _ in range(2):  # the second time from what the reader remembers
        raw = json.dumps(body).encode()
        read = reader.read(raw)
        assert read.redacted() == redacted_body(REDACTOR, raw)
        written = json.dumps(read.redacted())
        assert "hunter2hunter2" not in written and "q7q7" not in written


@settings(max_examples=40, deadline=None)
@given(pool, st.lists(picks, min_size=2, max_size=5))
def test_an_item_met_again_is_the_same_object(items, choices):
    reader = Bodies(REDACTOR)
    seen: dict[str, object] = {}
    for body in _bodies(items, choices):
        read = reader.read(json.dumps(body).encode())
        assert isinstance(read.value, dict)
        for item in read.value["messages"]:
            if isinstance(item, dict | list):
                seen.setdefault(json.dumps(item), item)
                assert seen[json.dumps(item)] is item


@settings(max_examples=50, deadline=None)
@given(
    st.sampled_from(
        [
            b"",
            b"[1, 2]",
            b'"text"',
            b"not json",
            b'{"a": [1, 2,]}',
            b'{"a": 1} trailing',
            b'{"a": 1, "a": [2]}',
            b'{"a": [{"b": 1}, {"b": 1}]}',
            b"\xff\xfe{}",
            b'{"a": [' + b"[" * 10 + b"]" * 10 + b"]}",
            b'{"a": ' + b"[" * 10 + b"]" * 10 + b"}",
            b'{"a": [{"b": "' + b"[" * 20 + b'"}]}',
        ]
    ),
    st.integers(1, 14),
)
def test_odd_bodies_and_depth_limits_as_the_whole_body_path(raw, limit):
    try:
        expected: object = parse_body(raw, limit)
    except BodyTooDeep:
        expected = BodyTooDeep
    reader = Bodies(REDACTOR, limit)
    for _ in range(2):  # read again: remembered items keep the same verdict
        try:
            got: object = reader.read(raw).value
        except BodyTooDeep:
            got = BodyTooDeep
        assert got == expected


@settings(max_examples=70, deadline=None)
@given(value, st.integers(0, 14), layout)
def test_a_body_within_depth_is_read_later_as_it_would_be_at_once(body, limit, layout):
    """Record mode sends a body before reading it when it opens no more brackets than
    the limit (``within_depth``) or orjson finds it nests within it (``parses_within``):
    such a body never nests too deep, and read later it is the body and the redaction
    the reading at once gives."""
    raw = _write({"model": "m", "meta": body}, *layout)
    if not within_depth(raw, limit) and not parses_within(raw, limit):
        with pytest.raises(BodyTooDeep):  # read before it is sent, and refused
            parse_body(raw, limit)
        return
    assert parse_body(raw, limit) == {"model": "m", "meta": body}  # never BodyTooDeep
    later, reading = Bodies(REDACTOR, limit).later(raw)()
    assert later == parse_body(raw, limit)
    assert reading.redacted() == redacted_body(REDACTOR, raw)


requests_items = st.lists(message, min_size=1, max_size=6)


@settings(max_examples=50, deadline=None)
@given(requests_items, st.lists(picks, min_size=1, max_size=6))
def test_normalising_shared_items_equals_normalising_fresh_copies(items, choices):
    """Placeholders are numbered by first occurrence across the request whether an item
    is walked afresh or filled from its template; canonical requests built through the
    provider's remembered per-item conversion equal those built from copies; list
    digests are the sha256 of the canonical JSON."""
    provider = providers.get("openai")
    warm = Normalizer()
    for body in _bodies(items, choices):
        body["tools"] = body["messages"][::-2]  # shared items again, numbered after messages
        shared = warm.normalize(provider.canonical("/v1/chat/completions", body))
        plain = Normalizer().normalize(
            provider.canonical("/v1/chat/completions", copy.deepcopy(body))
        )
        assert shared == plain
        for component in (shared.messages, shared.system, shared.tools):
            expected = hashlib.sha256(canonical_json(component).encode()).hexdigest()
            assert digest(component) == expected


def test_a_new_item_after_remembered_ones_is_numbered_after_them():
    a = {"role": "user", "content": "a 3fa85f64-5717-4562-b3fc-2c963f66afa6"}
    b = {"role": "user", "content": "b 0b1c2d3e-5717-4562-b3fc-2c963f66afa6"}
    c = {"role": "user", "content": "c 77777777-5717-4562-b3fc-2c963f66afa6"}
    engine = Normalizer()
    engine.normalize(CanonicalRequest("/v1/x", messages=[a, b], tools=[a]))
    later = engine.normalize(CanonicalRequest("/v1/x", messages=[a, b, c], tools=[c, a]))
    assert later.messages == [
        {"content": "a <uuid:1>", "role": "user"},
        {"content": "b <uuid:2>", "role": "user"},
        {"content": "c <uuid:3>", "role": "user"},
    ]
    assert later.tools == [
        {"content": "c <uuid:3>", "role": "user"},
        {"content": "a <uuid:1>", "role": "user"},
    ]


def test_an_item_numbered_differently_by_what_precedes_it_is_filled_again():
    first = {"role": "user", "content": "id 3fa85f64-5717-4562-b3fc-2c963f66afa6"}
    later = {"role": "user", "content": "ids 9fa85f64-5717-4562-b3fc-2c963f66afa6"}
    engine = Normalizer()
    alone = engine.normalize(CanonicalRequest("/v1/x", messages=[first]))
    after = engine.normalize(CanonicalRequest("/v1/x", messages=[later, first]))
    assert alone.messages == [{"content": "id <uuid:1>", "role": "user"}]
    assert after.messages == [
        {"content": "ids <uuid:1>", "role": "user"},
        {"content": "id <uuid:2>", "role": "user"},
    ]
    again = engine.normalize(CanonicalRequest("/v1/x", messages=[first]))
    assert again.messages == alone.messages
    same = engine.normalize(CanonicalRequest("/v1/x", messages=[first]))
    assert same.messages is not None and again.messages is not None
    assert same.messages[0] is again.messages[0]  # numbered alike: the very same object


@settings(max_examples=40, deadline=None)
@given(pool, st.lists(picks, min_size=1, max_size=4), st.booleans())
def test_primed_items_are_the_recorded_objects(items, choices, ascii_only):
    """Primed with recorded bodies, a request repeating their items (in an SDK's compact
    layout) reads as the whole-body path reads it, with the recorded objects themselves."""
    recorded = _bodies(items, choices)
    reader = Bodies(REDACTOR, 8)
    reader.prime(recorded)
    for body in _bodies(items, choices[::-1]):
        raw = _write(body, False, ascii_only, "")
        try:
            expected: object = parse_body(raw, 8)
        except BodyTooDeep:
            expected = BodyTooDeep
        try:
            read = reader.read(raw)
        except BodyTooDeep:
            assert expected is BodyTooDeep
            continue
        assert read.value == expected
        assert read.redacted() == redacted_body(REDACTOR, raw)
        assert isinstance(read.value, dict)
        # the recorded objects: messages, and the top-level "meta", whose items are an
        # array's items too when it is a list
        originals = {id(m) for b in recorded for m in [*b["messages"], b["meta"]]}  # type: ignore[misc]
        originals |= {id(m) for b in recorded if type(b["meta"]) is list for m in b["meta"]}  # type: ignore[attr-defined]
        for item in read.value["messages"]:
            assert id(item) in originals or not isinstance(item, dict | list)


def test_a_body_knows_whether_it_holds_text_no_recording_holds():
    """What lets the gateway skip the exact lookup for a body that cannot be a recorded
    one: a fresh item, met once or many times, is no recording's."""
    recorded = {"model": "m", "messages": [{"role": "user", "content": "hi " * 100}]}
    reader = Bodies(REDACTOR)
    reader.prime([recorded])
    assert not reader.read(json.dumps(recorded, separators=(",", ":")).encode()).new
    fresh = {**recorded, "messages": [*recorded["messages"], {"role": "user", "content": "x"}]}
    raw = json.dumps(fresh).encode()
    assert reader.read(raw).new
    assert reader.read(raw).new  # met again, still no recording's (its run taken whole)
    assert reader.read(json.dumps({**fresh, "n": 1}).encode()).new
    assert not reader.read(json.dumps(recorded, separators=(",", ":")).encode()).new


@settings(max_examples=70, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"\xc3\xa9",
                b"\\u00e9",
                b"\xe2\x80\x99",
                b"\\ud83d\\ude00",
                b"\xf0\x9f\x98\x80",
                b"\xff",
                b"\xc3",
                b"\xed\xa0\x80",
                b"\x80",
                b"a",
                b'\\"',
                b"\\n",
            ]
        ),
        max_size=6,
    ).map(b"".join),
    st.sampled_from(["key", "short", "long", "item", "scalar"]),
)
def test_bytes_read_a_character_each_read_as_utf8(text, where):
    """The reader scans a body's bytes a character each; a value holding non-ASCII bytes,
    escapes of Latin-1 characters beside them, or bytes that are no UTF-8 at all comes
    out as the whole-body path gives it (or goes to it), read again and met again."""
    string = b'"' + text + b'"'
    long = b'"' + text + b"x" * 300 + b'"'
    raw = {
        "key": b"{" + string + b': 1, "m": [{"a": 1}]}',
        "short": b'{"v": ' + string + b', "m": [{"a": 1}]}',
        "long": b'{"v": ' + long + b"}",
        "item": b'{"m": [{"a": ' + string + b"}, {" + string + b": 2}]}",
        "scalar": b'{"m": [1, ' + string + b", " + long + b"]}",
    }[where]
    try:
        expected: object = parse_body(raw)
    except BodyTooDeep:  # pragma: no cover - shallow bodies
        expected = BodyTooDeep
    reader = Bodies(REDACTOR)
    for _ in range(2):
        assert reader.read(raw).value == expected


def test_the_reader_tells_a_resent_conversation_from_a_new_body() -> None:
    """After a body it mostly remembered (the conversation resent with one more turn) the
    reader says so, and record mode reads the next one at once; a body of new text, or
    a first body, leaves it reading the next one while the provider works."""
    turns = [
        {"role": "user", "content": f"{'question ' * 80}{i}"} for i in range(6)
    ]  # each item long enough to be worth remembering
    reader = Bodies(REDACTOR)
    reader.read(json.dumps({"model": "m", "messages": turns[:3]}).encode())
    assert not reader.reusing
    reader.read(json.dumps({"model": "m", "messages": turns[:4]}).encode())
    assert reader.reusing
    fresh = [{"role": "user", "content": f"{'other ' * 80}{i}"} for i in range(4)]
    reader.read(json.dumps({"model": "m", "messages": fresh}).encode())
    assert not reader.reusing


edits = st.lists(
    st.tuples(
        st.sampled_from(["append", "replace_last", "edit_first", "drop_last", "same"]),
        st.lists(st.integers(0, 5), min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=70, deadline=None)
@given(
    pool,
    st.lists(st.integers(0, 5), min_size=1, max_size=4),
    edits,
    st.lists(layout, min_size=7, max_size=7),
)
def test_a_conversation_resent_turn_after_turn_reads_as_the_whole_body(
    items, start, turns, layouts
):
    """A conversation resent with its new turn after it (whole, its last message replaced,
    an earlier one changed, shortened; in changing layouts, with numbers that may go on
    where the last array ended) reads as the whole body does, and what it repeats in the
    same layout is the same objects."""
    reader = Bodies(REDACTOR)
    messages = [items[i % len(items)] for i in start]
    numbers = [len(start), 10 * len(start)]
    previous: tuple[list[object], tuple[bool, bool, str]] | None = None
    for n, (edit, chosen) in enumerate(turns):
        new = [items[i % len(items)] for i in chosen]
        if edit == "append":
            messages = messages + new
            numbers = [*numbers, numbers[-1] + 1]
        elif edit == "replace_last":
            messages = messages[:-1] + new
            numbers = [*numbers[:-1], numbers[-1] * 10 + 1]  # 20 -> 201: goes on from 20
        elif edit == "edit_first":
            messages = [copy.deepcopy(new[0]), *messages[1:]]
        elif edit == "drop_last" and len(messages) > 1:
            messages = messages[:-1]
            numbers = numbers[:-1] or [0]
        body = {"model": "m", "messages": messages, "numbers": numbers}
        spaced, ascii_only, pad = layouts[n]
        raw = _write(body, spaced, ascii_only, pad)
        read = reader.read(raw)
        assert read.value == parse_body(raw) == body
        assert read.redacted() == redacted_body(REDACTOR, raw)
        if previous is not None and previous[1] == layouts[n] and edit in ("append", "same"):
            # the objects read last time, in the same layout, come back as themselves
            got = read.value["messages"]  # type: ignore[index]
            for was, now in zip(previous[0], got, strict=False):
                assert now is was or not isinstance(was, dict | list)
        previous = (read.value["messages"], layouts[n])  # type: ignore[index]


def test_a_tool_list_without_placeholders_is_the_same_after_any_numbering():
    """A list whose items hold no volatile value is answered again as a whole whatever
    the components before it numbered; a shorter list, or one with an item that does
    hold one, is walked as it is."""
    t1 = {"name": "read", "description": "reads a file"}
    t2 = {"name": "write", "description": "writes a file"}
    t3 = {"name": "fetch", "description": "fetches 3fa85f64-5717-4562-b3fc-2c963f66afa6"}
    engine = Normalizer()
    for n, tools in enumerate(([t1, t2], [t1, t2], [t1], [t1, t3], [t1, t2])):
        messages = [{"role": "user", "content": f"run {n}: {FRAGMENTS[2 + n % 3]} go"}]
        request = CanonicalRequest("/v1/x", messages=messages, tools=tools)
        plain = Normalizer().normalize(copy.deepcopy(request))
        assert engine.normalize(request) == plain


long_member = st.lists(text, min_size=1, max_size=3).map(
    lambda texts: [{"type": "input_text", "text": t + " " + "y" * 260} for t in texts]
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(long_member, value), min_size=1, max_size=4), st.booleans())
def test_a_new_item_holding_members_met_before_reads_as_the_whole_body(contents, ascii_only):
    """Each turn's item comes with a fresh id around content met before (an agent's tool
    list, a tool's output): read, its long members are the recorded objects, and the
    body reads and redacts as the whole-body path reads and redacts it."""

    def body(ids: str) -> dict[str, object]:
        items = [
            {"type": "tool_output", "id": f"{ids}_{n}", "output": output, "meta": meta}
            for n, (output, meta) in enumerate(contents)
        ]
        return {"model": "m", "input": items}

    recorded = body("recorded")
    reader = Bodies(REDACTOR)
    reader.prime([recorded])
    live = copy.deepcopy(body("live"))
    raw = _write(live, False, ascii_only, "")
    read = reader.read(raw)
    assert read.value == parse_body(raw) == live
    assert read.redacted() == redacted_body(REDACTOR, raw)
    assert SECRET not in json.dumps(read.redacted())
    assert isinstance(read.value, dict)
    first: dict[str, object] = {}  # equal outputs: the first recorded is the one met
    for original in recorded["input"]:  # type: ignore[attr-defined]
        first.setdefault(json.dumps(original["output"]), original["output"])
    for item in read.value["input"]:  # type: ignore[attr-defined]
        assert item["output"] is first[json.dumps(item["output"])]


def test_a_recorded_member_holding_nan_is_not_taken_for_one_holding_null() -> None:
    """orjson writes NaN as ``null``: a recorded member holding one is not the member
    a request sends with ``null`` there (the recorded item, which has no JSON form, is
    not remembered at all)."""
    filler = "z" * 300
    recorded = {"input": [{"id": "a", "output": [float("nan"), filler]}]}
    reader = Bodies(REDACTOR)
    reader.prime([recorded])
    raw = json.dumps({"input": [{"id": "b", "output": [None, filler]}]}).encode()
    read = reader.read(raw)
    assert read.value == parse_body(raw)
    assert read.value["input"][0]["output"][0] is None  # type: ignore[index]


number = st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
run_item = st.recursive(
    leaf | number,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


def _texts(values: list[object], writing: str) -> list[bytes] | None:
    if writing == "orjson":
        try:
            return [orjson.dumps(v) for v in values]
        except orjson.JSONEncodeError:  # an integer beyond 64 bits
            return None
    spaced = writing == "spaced"
    separators = (", ", ": ") if spaced else (",", ":")
    return [
        json.dumps(v, separators=separators, ensure_ascii=writing == "ascii").encode()
        for v in values
    ]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(run_item, min_size=1, max_size=4),
    st.sampled_from(["orjson", "compact", "spaced", "ascii", "repeated key"]),
    st.booleans(),
)
def test_new_items_read_at_once_read_as_one_by_one(values, writing, primed):
    """A turn's new items (after the array's first, to its end) read in one pass when
    their text is orjson's own are what reading them one by one gives: the same values
    (an integer as an integer, a float as a float), the same objects for items met
    before (found by their bytes, however written), and the same place where the last
    one but one ends. New items in any other writing (spaces, escapes, an integer orjson
    would read as a float, a repeated key) are left to the one-by-one reading, nothing
    read."""
    texts = _texts(values, writing)
    if texts is None:
        return
    if writing == "repeated key":
        texts = [b'{"k":1,"k":2}', *texts]
    head, tail = b'{"input":["first"', b'],"n":1}'
    raw = head + b"".join(b"," + t for t in texts) + tail
    start, stop = len(head), len(raw) - len(tail)
    recorded = {"input": [json.loads(t) for t in texts]}
    fast, slow = Bodies(REDACTOR), Bodies(REDACTOR)
    if primed:
        fast.prime([recorded])
        slow.prime([recorded])
    read: list[object] = []
    before = fast.read_run(raw, start, stop, read)  # type: ignore[arg-type]
    try:  # written as orjson writes what the standard library reads from it
        own = b",".join(texts) == b",".join(orjson.dumps(json.loads(t)) for t in texts)
    except TypeError:  # an integer beyond 64 bits
        own = False
    if before is None:  # not orjson's own, nor every item met before: nothing read
        assert not own and read == []
        return
    one_by_one: list[object] = []
    text, i, ends = raw.decode("latin-1"), start, [start]
    while i < stop:
        i = slow.read_item(text, i + 1, one_by_one)  # type: ignore[arg-type]
        ends.append(i)
    assert ends[-1] == stop and before == ends[-2]
    values_read = [item.value if isinstance(item, Item) else item for item in read]
    assert json.dumps(values_read) == json.dumps([json.loads(t) for t in texts])
    assert len(read) == len(one_by_one)
    for mine, theirs in zip(read, one_by_one, strict=True):
        assert isinstance(mine, Item) == isinstance(theirs, Item)
        if isinstance(mine, Item) and isinstance(theirs, Item):
            assert mine.text == theirs.text
            assert mine.value == theirs.value
            if primed:  # met before: the recorded object, as one by one
                assert theirs.value in recorded["input"]
                assert mine.value is fast._met.get(mine.text).value  # type: ignore[union-attr]


@settings(max_examples=50, deadline=None)
@given(st.lists(value, min_size=1, max_size=3), st.lists(st.sampled_from(FRAGMENTS), max_size=3))
def test_a_shared_value_walks_as_a_fresh_copy_wherever_it_is(members, before):
    """A long value the reader hands out shared (``core.memo.SHARED``: a tool list in an
    item of fresh id) is walked once and filled after that: placed after other volatile
    values, in another message, twice in one request, it normalises as a copy walked
    afresh does."""
    shared = [{"type": "input_text", "text": f"{m}"} for m in members]
    for value in shared:
        SHARED.add(value, 300)
    engine = Normalizer()
    for n in range(3):
        messages = [
            {"role": "user", "parts": [{"type": "text", "content": " ".join(before[:n])}]},
            {"role": "tool", "parts": [{"type": "output", "output": shared[n % len(shared)]}]},
            {"role": "tool", "parts": [{"type": "output", "output": shared[0]}]},
        ]
        request = CanonicalRequest("/v1/x", messages=messages, tools=[shared[-1]])
        plain = Normalizer().normalize(copy.deepcopy(request))
        assert engine.normalize(request) == plain


json_key = text | st.sampled_from(["é", "\U0001f600", "\uffff", "Z", "a b"])
any_json = st.recursive(
    leaf
    | number
    | st.sampled_from([float("nan"), float("inf"), 1e-05, 1e16, 0.00001])
    | st.sampled_from(["null", "x:null", "a,null", "[null]", "c46e-1e5", ":1e5", ",0.00001"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_key, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=120, deadline=None)
@given(any_json)
def test_canonical_bytes_are_the_canonical_json_text(value):
    """What a component is hashed by, written by orjson where it writes the same bytes,
    is the standard library's canonical text exactly (floats, NaN, integers beyond 64
    bits and keys past the BMP included)."""
    assert canonical_bytes(value) == canonical_json(value).encode("utf-8")


@settings(max_examples=100, deadline=None)
@given(st.lists(any_json | st.sampled_from(["x" * 1500, "\u00e9" * 1200]), min_size=1, max_size=4))
def test_an_item_written_from_its_members_is_its_canonical_json_text(values):
    """A list item's text, written from its members down with the values found there and
    long strings remembered by identity, is the standard library's canonical text of the
    item, whichever objects it shares with items written before."""
    shared = values[0]
    items = [{"role": "r", "parts": [{"a": v, "b": shared}, v]} for v in values]
    items += [values, {"deep": {"er": {"still": values}}}]
    for _ in range(2):  # the second time, from what was remembered
        for item in items:
            assert item_bytes(item) == canonical_json(item).encode("utf-8")


@settings(max_examples=100, deadline=None)
@given(any_json, any_json, st.booleans())
def test_a_value_key_tells_values_apart_as_the_matcher_does(a, b, spaced):
    """What tells a turn's members after its conversation from the last turn's (Codex
    reorders ``client_metadata`` each request): equal keys exactly for values the matcher
    compares equal, key order, spaces and a number's spelling aside; no key where orjson
    would read another value (NaN, an integer of 19 digits or more)."""
    separators = (", ", ": ") if spaced else (",", ":")
    ta = json.dumps(a, separators=separators).encode()
    tb = json.dumps(b, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()
    ka, kb = value_key(ta), value_key(tb)
    if "NaN" in ta.decode() or "Infinity" in ta.decode() or re.search(r"\d{19}", ta.decode()):
        assert ka is None
    if ka is None or kb is None:
        return
    assert ka == value_key(json.dumps(a, sort_keys=True, ensure_ascii=False).encode())
    same = canonical_json(json.loads(ta)) == canonical_json(json.loads(tb))
    assert (ka == kb) == same
    # the cases random pairs seldom meet
    assert value_key(b"1") != value_key(b"1.0") != value_key(b"true")
    assert value_key(b'{"a": 1, "b": [2.50]}') == value_key(b'{"b":[2.5],"a":1}')
    assert value_key(b'"\\u00e9"') == value_key('"\u00e9"'.encode())
    assert value_key(b"12345678901234567890") is None


@pytest.mark.parametrize("extra", [{"password": "hunter2-hunter2"}, {"note": SECRET}, {}])
def test_an_item_with_members_met_before_hides_what_the_whole_body_hides(extra):
    """An item of fresh id around a member met before, holding a secret by its field's
    name, by its value, or none: redacted as the whole body is."""
    output = [{"type": "input_text", "text": "y" * 300}]
    reader = Bodies(REDACTOR)
    reader.prime([{"input": [{"id": "recorded", "output": output}]}])
    raw = json.dumps({"input": [{"id": "live", "output": output, **extra}]}).encode()
    read = reader.read(raw)
    assert read.redacted() == redacted_body(REDACTOR, raw)
    assert "hunter2" not in json.dumps(read.redacted()) and SECRET not in json.dumps(
        read.redacted()
    )


def test_items_met_before_are_found_by_their_bytes_before_new_ones_are_read():
    """A turn whose first new items are a recording's own bytes (Claude Code's tool calls
    keep their ids) takes those as the recorded objects, escaped or not, and reads the
    rest at once; a run whose new part is not orjson's own is left whole."""
    recorded = {"input": [{"type": "tool_use", "id": "toolu_1", "input": "\u00e9" * 200}]}
    reader = Bodies(REDACTOR)
    reader.prime([recorded])
    met = json.dumps(recorded["input"][0], separators=(",", ":")).encode()  # escaped
    new = orjson.dumps({"type": "tool_result", "id": "toolu_1", "content": "done"})
    head, tail = b'{"input":["first"', b"]}"
    for run, fresh in ((met + b"," + new, 1), (met, 0), (met + b", " + new, None)):
        raw = head + b"," + run + tail
        items: list[object] = []
        before = reader.read_run(raw, len(head), len(raw) - len(tail), items)  # type: ignore[arg-type]
        if fresh is None:
            assert before is None and items == []
            continue
        assert items[0].value is recorded["input"][0]  # type: ignore[attr-defined]
        assert len(items) == 1 + fresh
        assert before == (len(head) + 1 + len(met) if fresh else len(head))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(run_item | st.dictionaries(text, run_item, min_size=1, max_size=3), max_size=5),
    st.sampled_from(["orjson", "compact", "spaced", "ascii", "repeated key"]),
    st.integers(2, 8),
)
def test_a_new_conversation_read_whole_reads_as_item_by_item(values, writing, limit):
    """The items of a body none of whose text was met (a new conversation) are read from
    one orjson pass of the body when their bytes are orjson's writing of them (``Whole``),
    and the scanner's, one by one, otherwise: either way the reading is what the
    scanner's alone gives (values, integers beyond 64 bits and floats included, and each
    item's text) and what the whole-body definitions give, its depth limit included."""
    texts = _texts(values, writing)
    if texts is None:
        texts = [json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode() for v in values]
    if writing == "repeated key":
        texts = [b'{"k":1,"k":2}', *texts]
    raw = b'{"model":"m","input":[' + b",".join(texts) + b'],"n":1}'
    fast, slow = Bodies(REDACTOR, limit), Bodies(REDACTOR, limit)
    try:
        expected = parse_body(raw, limit)
    except BodyTooDeep:
        with pytest.raises(BodyTooDeep):
            fast.read(raw)
        return
    original = Bodies._next_item

    def scanner_only(self, text, i, room, items, last, key=""):  # type: ignore[no-untyped-def]
        return original(self, text, i, room, items, last)

    read = fast.read(raw)
    Bodies._next_item = scanner_only  # type: ignore[method-assign]
    try:
        plain = slow.read(raw)
    finally:
        Bodies._next_item = original  # type: ignore[method-assign]
    assert json.dumps(read.value) == json.dumps(plain.value) == json.dumps(expected)
    assert read.redacted() == redacted_body(REDACTOR, raw)
    mine, theirs = fast._last.get("input", []), slow._last.get("input", [])
    assert [getattr(i, "text", i) for i in mine] == [getattr(i, "text", i) for i in theirs]
    assert fast._runs.get("input") == slow._runs.get("input")
