"""The normaliser engine as a table: each kind of rule hits, still misses what it should,
numbers across turns, reaches into JSON carried as a string and respects its scope. Plus
the memo: the cached engine gives exactly what the uncached definition gives."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.core.errors import ReplayMiss
from otel_replay.core.exchange import CanonicalRequest
from otel_replay.matching.ignore import Step, drop_path, dropper, parse_path
from otel_replay.matching.matcher import Matcher
from otel_replay.matching.normalize import Normalizer, Numbering
from otel_replay.matching.rules import (
    BUILTIN_RULES,
    IgnoreRule,
    Scope,
    Subject,
    VolatileRule,
)
from otel_replay.matching.ruleset import RuleSet, substitute
from otel_replay.matching.session_rules import matching_rules

CODEX_META = "x-codex-turn-metadata"
TURN_RULE = IgnoreRule(f"params.client_metadata.{CODEX_META}.turn_started_at_unix_ms")
TICKET_RULE = VolatileRule("ticket", r"TICKET-\d+")


def codex(started: int, *, turn: str = "t-1", ticket: str = "TICKET-1") -> CanonicalRequest:
    """A Responses request as Codex sends it: turn metadata as a JSON string."""
    meta = json.dumps({"turn_id": turn, "turn_started_at_unix_ms": started})
    return CanonicalRequest(
        endpoint="/v1/responses",
        model="gpt-5-codex",
        system=[{"type": "text", "content": "You are Codex."}],
        messages=[{"role": "user", "parts": [{"type": "text", "content": f"fix {ticket}"}]}],
        params={"client_metadata": {CODEX_META: meta}, "store": False},
    )


def hits(rules, recorded, live, **kw) -> bool:
    try:
        Matcher([recorded], normalizer=Normalizer(rules, **kw)).match(live)
    except ReplayMiss:
        return False
    return True


# name -> (rules, recorded, live, hits?)
ROWS = {
    "builtin: volatile id hits": (
        BUILTIN_RULES,
        codex(1, ticket="call_ab12"),
        codex(1, ticket="call_zz99"),
        True,
    ),
    "builtin: a changed text still misses": (BUILTIN_RULES, codex(1), codex(1, turn="t-2"), False),
    "builtin: a changed time in a JSON string misses": (
        BUILTIN_RULES,
        codex(1),
        codex(2),
        False,
    ),
    "ignore into a JSON string: hits": ((*BUILTIN_RULES, TURN_RULE), codex(1), codex(2), True),
    "ignore into a JSON string: the rest still counts": (
        (*BUILTIN_RULES, TURN_RULE),
        codex(1),
        codex(2, turn="t-2"),
        False,
    ),
    "user volatile regex: hits": (
        (*BUILTIN_RULES, TICKET_RULE),
        codex(1),
        codex(1, ticket="TICKET-7"),
        True,
    ),
    "user volatile regex: other text still misses": (
        (*BUILTIN_RULES, TICKET_RULE),
        codex(1),
        codex(1, ticket="BUG-7"),
        False,
    ),
    "without the user rule: misses": (BUILTIN_RULES, codex(1), codex(1, ticket="TICKET-7"), False),
    "ignore a whole param": (
        (*BUILTIN_RULES, IgnoreRule("params.client_metadata")),
        codex(1),
        codex(2, turn="t-9"),
        True,
    ),
    "ignore with a key wildcard": (
        (*BUILTIN_RULES, IgnoreRule("params.client_metadata.x-codex-*")),
        codex(1),
        codex(2, turn="t-9"),
        True,
    ),
}


@pytest.mark.parametrize("name", ROWS)
def test_rule_rows(name):
    rules, recorded, live, expected = ROWS[name]
    assert hits(rules, recorded, live) is expected


# scope -> (normalizer settings under which the ignore rule applies, ones where it does not)
SCOPES = [
    (Scope(provider="openai"), {"provider": lambda e: "openai"}, {"provider": lambda e: "x"}),
    (Scope(provider="openai"), {"provider": lambda e: "openai"}, {}),
    (Scope(model="gpt-5*"), {}, None),
    (Scope(model="claude-*"), None, {}),
    (Scope(endpoint="/v1/responses"), {}, {"endpoint": lambda e: "/v1/chat/completions"}),
    (Scope(profile="codex"), {"profile": "codex"}, {"profile": "claude-code"}),
    (Scope(profile="codex"), {"profile": "codex"}, {}),
]


@pytest.mark.parametrize(("scope", "inside", "outside"), SCOPES)
def test_rules_apply_only_within_their_scope(scope, inside, outside):
    rules = (*BUILTIN_RULES, IgnoreRule(TURN_RULE.path, scope))
    if inside is not None:
        assert hits(rules, codex(1), codex(2), **inside)
    if outside is not None:
        assert not hits(rules, codex(1), codex(2), **outside)


def test_scope_against_a_subject():
    subject = Subject(provider="openai", model="gpt-4o-mini", endpoint="/v1/chat/completions")
    assert Scope().applies(subject)
    assert Scope(provider="openai", model="gpt-4o*").applies(subject)
    assert not Scope(provider="anthropic").applies(subject)
    assert not Scope(profile="codex").applies(subject)  # an unknown value never fits


def test_numbering_runs_across_turns_and_requests_of_a_run():
    """A later request of the run repeats the earlier turns: they normalise the same, and
    a user kind is numbered by first occurrence like the built-in ones."""
    engine = Normalizer((*BUILTIN_RULES, TICKET_RULE))

    def turn(call_id, ticket):
        return [
            {"role": "user", "parts": [{"type": "text", "content": f"{ticket} {call_id}"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id}]},
        ]

    first = CanonicalRequest("/v1/chat/completions", messages=turn("call_a1", "TICKET-5"))
    second = CanonicalRequest(
        "/v1/chat/completions",
        messages=[*turn("call_a1", "TICKET-5"), *turn("call_b2", "TICKET-5")],
    )
    one, two = engine.normalize(first), engine.normalize(second)
    assert two.messages[:2] == one.messages
    assert two.messages[2]["parts"][0]["content"] == "<ticket:1> <id:2>"
    assert engine.normalize(two) == two  # placeholders of a user kind are kept as they are


def test_numbering_is_an_object_passed_through():
    engine = Normalizer()
    numbering = Numbering()
    assert engine.text("call_a1", numbering) == "<id:1>"
    assert engine.value({"x": "call_b2", "y": "call_a1"}, numbering) == {
        "x": "<id:2>",
        "y": "<id:1>",
    }
    assert numbering.counts == {"id": 2}
    assert engine.text("call_b2") == "<id:1>"  # a fresh numbering unless one is given


def test_the_session_rules_compare_azure_endpoints_as_their_operation():
    engine = matching_rules()
    azure = CanonicalRequest("/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21")
    assert engine.normalize(azure).endpoint == "/v1/chat/completions"
    assert Normalizer().normalize(azure).endpoint == azure.endpoint


def test_transport_rows_are_what_the_provider_surfaces_leave_out():
    from otel_replay import providers

    body = {"model": "m", "messages": [], "stream": True, "stream_options": {"x": 1}, "seed": 1}
    engine = matching_rules()
    for name, path in (("openai", "/v1/chat/completions"), ("anthropic", "/v1/messages")):
        parsed = providers.get(name).canonical(path, body).params
        kept = engine.normalize(CanonicalRequest(path, params=dict(body))).params
        assert set(parsed) - {"messages"} == set(kept) - {"model", "messages"}, name


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("params.user", (Step(key="params"), Step(key="user"))),
        (
            "messages[*].parts[0]",
            (Step(key="messages"), Step(any_index=True), Step(key="parts"), Step(index=0)),
        ),
        ("params.x-a.*", (Step(key="params"), Step(key="x-a"), Step(key="*"))),
    ],
)
def test_parse_path(path, steps):
    assert parse_path(path) == steps


@pytest.mark.parametrize("path", ["", "[0].x", "params..x", "params.", "params[x]", "a]b"])
def test_a_bad_path_is_refused(path):
    with pytest.raises(ValueError):
        parse_path(path)
    with pytest.raises(ValueError):
        Normalizer((IgnoreRule(path),))


def test_drop_path_leaves_untouched_values_as_they_are():
    value = {"a": [{"id": 1, "k": 2}, {"id": 3}], "s": '{"t": 1, "u": 2}', "n": "not json"}
    steps = parse_path("x.a[*].id")[1:]
    assert drop_path(value, steps) == {**value, "a": [{"k": 2}, {}]}
    assert drop_path(value, parse_path("x.s.t")[1:])["s"] == '{"u":2}'
    assert drop_path(value, parse_path("x.n.t")[1:]) is value
    assert drop_path(value, parse_path("x.a[5]")[1:]) is value
    assert drop_path(value, parse_path("x.a[1]")[1:]) == {**value, "a": [{"id": 1, "k": 2}]}


part = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_result"])},
    optional={
        "text": st.sampled_from(["hi", "<secret>x</secret>", '{"id": 1, "k": 2}']),
        "id": st.integers(0, 3),
    },
)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant"]), "parts": st.lists(part, max_size=3)}
)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(message, max_size=6),
    st.lists(message, max_size=3),
    st.sampled_from(["x[*].parts[*]", "x[*].parts[*].id", "x[*].parts[0]", "x[1]", "x[*]"]),
    st.booleans(),
)
def test_a_dropper_equals_drop_path_as_a_conversation_grows(earlier, added, path, only_some):
    """``dropper`` remembers each message's result by identity: every turn of a growing
    conversation (earlier messages resent as the same objects, one changed in a copy) gets
    what ``drop_path`` gives afresh, and the list itself when nothing is dropped."""
    from otel_replay.matching.linear import full_text

    when = full_text(r"<secret>.*</secret>") if only_some else None
    steps = parse_path(path)[1:]
    drop = dropper(steps, when)
    turns = [earlier, earlier + added, [dict(m) for m in earlier] + added + earlier[:1]]
    for messages in turns:
        dropped = drop(messages)
        assert dropped == drop_path(messages, steps, when)
        if dropped == messages:
            assert dropped is messages


class _Dict(dict):  # type: ignore[type-arg]
    """A dict the general walk of ``drop_path`` reads (its fast path takes plain dicts)."""


class _List(list):  # type: ignore[type-arg]
    pass


def _general(value: object) -> object:
    if type(value) is dict:
        return _Dict({k: _general(v) for k, v in value.items()})
    if type(value) is list:
        return _List(_general(v) for v in value)
    return value


@settings(max_examples=70, deadline=None)
@given(
    st.lists(message, max_size=4),
    st.sampled_from(
        ["x[*].parts[*].id", "x[*].parts[*].text.id", "x[*].parts", "x[*].role", "x[*].parts[*]"]
    ),
    st.booleans(),
)
def test_drop_path_on_plain_values_is_the_general_walk(messages, path, only_some):
    """The short way ``drop_path`` takes through plain dicts by one key and plain lists by
    every index gives what its general walk gives (a copy only where something is
    dropped, the value itself where nothing is)."""
    from otel_replay.matching.linear import full_text

    when = full_text(r"<secret>.*</secret>|\d") if only_some else None
    steps = parse_path(path)[1:]
    fast = drop_path(messages, steps, when)
    assert fast == drop_path(_general(messages), steps, when)
    if fast == messages:
        assert fast is messages


# -- the memo: cached == uncached ---------------------------------------------------------

FRAGMENTS = [
    "call_ab12",
    "call_weather",
    "msg_01XFDUDYJgAACzvnptvVoYEL",
    "3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "2024-05-01T12:00:00Z",
    "a.b@example.com",
    "<id:1>",
    "[REDACTED:openai-key]",
    "TICKET-42",
    "hello",
    "x" * 70,
    " ",
]
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=6).map("".join) | st.text(max_size=80)


@settings(max_examples=50, deadline=None)
@given(st.lists(texts, min_size=1, max_size=12), st.booleans())
def test_cached_engine_equals_the_uncached_definition(strings, with_user_rule):
    rules = (*BUILTIN_RULES, TICKET_RULE) if with_user_rule else BUILTIN_RULES
    engine = Normalizer(rules)
    cached = engine.default_set()
    for s in strings:  # warm the memo with every string first
        cached.text(s, Numbering())
    volatile = [r for r in rules if isinstance(r, VolatileRule)]
    plain = RuleSet(volatile, [])
    a, b = Numbering(), Numbering()
    assert [cached.text(s, a) for s in strings] == [substitute(plain, s, b) for s in strings]
    assert (a.seen, a.counts) == (b.seen, b.counts)


LINEAR_TICKET = VolatileRule("ticket", r"TICKET-[0-9]+", linear=True)
long_texts = st.lists(
    st.sampled_from([*FRAGMENTS, "/home/ana/src", "<ticket:7>"]), max_size=12
).map(lambda parts: "x" * 65 + "".join(parts))


@settings(max_examples=50, deadline=None)
@given(st.lists(long_texts, min_size=1, max_size=8))
def test_long_strings_met_again_fill_their_template_as_the_definition(strings):
    """A long string with volatile values is substituted once, then filled from its
    template: every later request gets what substituting afresh gives, numbering alike."""
    engine = Normalizer((*BUILTIN_RULES, LINEAR_TICKET), places=("/home/ana/src", "/home/ana"))
    cached = engine.default_set()
    warm = Numbering()
    for s in strings:
        cached.text(s, warm)
    a, b = Numbering(), Numbering()
    assert [cached.text(s, a) for s in strings] == [substitute(cached, s, b) for s in strings]
    assert (a.seen, a.counts) == (b.seen, b.counts)


@pytest.mark.parametrize(
    "rule",
    [
        IgnoreRule("metadata.user_id"),  # not a component
        VolatileRule("no spaces", r"x"),
        VolatileRule("ticket", r"TICKET-(\d+"),
    ],
)
def test_a_rule_that_cannot_apply_is_refused_with_the_table(rule):
    with pytest.raises(ValueError):
        Normalizer((*BUILTIN_RULES, rule))


def test_why_explains_with_the_rules_it_is_given():
    from otel_replay.matching.why import explain

    assert explain(codex(2), [codex(1)]).startswith("replay miss: params changed (hash ")
    with_rule = Normalizer((*BUILTIN_RULES, TURN_RULE))
    report = explain(codex(2), [codex(1)], normalizer=with_rule)
    assert report.startswith("no miss: the request matches recording #0")


def _defined(rules: RuleSet, value, numbering: Numbering):  # type: ignore[no-untyped-def]
    """A JSON value normalised by definition: keys sorted, each string substituted (a
    key before its value), integers and integral floats by the rules for numbers."""
    if isinstance(value, str):
        return substitute(rules, value, numbering)
    if isinstance(value, dict):
        out = {}
        for key in sorted(value):
            name = substitute(rules, key, numbering)
            out[name] = _defined(rules, value[key], numbering)
        return out
    if isinstance(value, list):
        return [_defined(rules, item, numbering) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return rules.number(value, numbering)
    return rules.number(int(value), numbering) if value.is_integer() else value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 1_700_000_000_123) | st.floats(-1e6, 1e6) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=16,
)


@settings(max_examples=70, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=4))
def test_walking_values_equals_the_definition(values):
    """The walk (strings known to hold nothing, met before, taken in line) gives what the
    definition gives, numbering alike, however much of it the memo holds."""
    engine = Normalizer((*BUILTIN_RULES, TICKET_RULE))
    cached = engine.default_set()
    for value in values[::2]:  # a memo holding some of it
        cached.walk(value, Numbering())
    a, b = Numbering(), Numbering()
    assert [cached.walk(v, a) for v in values] == [_defined(cached, v, b) for v in values]
    assert (a.seen, a.counts) == (b.seen, b.counts)
