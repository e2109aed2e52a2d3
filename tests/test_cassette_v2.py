"""Cassette format version 2: each shared value stored once, canonical requests derived
where the raw ones give them back; lossless, schema-valid, small in a diff, and shared in
memory once loaded."""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from report_runs import key_set
from schema_check import schema_errors
from test_cassette import exchanges, json_values, layout, sample, text
from test_cassette_codecs import streamed

import otel_replay
import otel_replay.session.session as session_module
from otel_replay import providers
from otel_replay.cassette import table as table_module
from otel_replay.cassette import versions
from otel_replay.cassette.format import Cassette
from otel_replay.cassette.model import dumps, load, loads
from otel_replay.cassette.v1 import V1
from otel_replay.cassette.v2 import V2
from otel_replay.core.errors import CassetteError
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.reports.suite import fingerprints
from otel_replay.testing.stub import run_stub

CHAT = "/v1/chat/completions"

# --- a coding agent's conversation ----------------------------------------------------


def _chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int) -> Exchange:
    body = {"model": "gpt-4o-mini", "messages": messages, "tools": tools, "stream": False}
    return Exchange(
        provider="openai",
        operation="chat",
        request=providers.get("openai").canonical(CHAT, body),
        response=Response(200, {"content-type": "application/json"}, body={"turn": turn}),
        raw_request=body,
        start_ns=turn,
        end_ns=turn + 1,
    )


def conversation(turns: int) -> Cassette:
    """A session resending its system prompt, tools and history on every turn; each turn
    built from fresh objects, as the gateway records them."""
    tool = {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
    out = []
    for turn in range(turns):
        history: list[dict[str, Any]] = [{"role": "system", "content": "You code. " * 20}]
        for t in range(turn):
            history.append({"role": "user", "content": f"step {t}"})
            history.append({"role": "assistant", "content": f"did step {t}: " + "x" * 80})
        history.append({"role": "user", "content": f"step {turn}"})
        out.append(_chat(copy.deepcopy(history), [copy.deepcopy(tool)], turn))
    return Cassette(out, {"command": ["agent"]})


def test_one_more_turn_adds_its_new_messages_and_one_interaction() -> None:
    three, four = dumps(conversation(3)), dumps(conversation(4))
    diff = [
        line
        for line in difflib.unified_diff(three.splitlines(), four.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert not [line for line in diff if line.startswith("-")]
    added = "\n".join(diff)
    assert added.count("did step 2") == 1  # the new assistant message, once
    assert "You code." not in added and "did step 0" not in added  # earlier content: no
    assert added.count('"provider": "openai"') == 1
    doc = json.loads(four)
    # canonical requests are derived; the system prompt, tool and each message stored once
    assert all(i["request"] == {"endpoint": CHAT, "derived": True} for i in doc["interactions"])
    assert len(doc["table"]) == 1 + 1 + 2 * 3 + 1  # system, tool, 3 earlier turns, last ask
    assert four.count("You code.") == 20
    assert schema_errors(doc) == []


def test_the_same_content_gets_the_same_names_when_recorded_again() -> None:
    first, again = json.loads(dumps(conversation(3))), json.loads(dumps(conversation(3)))
    assert first["table"] == again["table"]
    assert list(first["table"]) == sorted(first["table"])
    assert all(len(name) == 13 for name in first["table"])


def test_a_loaded_cassette_shares_one_object_per_table_entry() -> None:
    c = loads(dumps(conversation(4)))
    assert c == conversation(4)
    first, last = c.interactions[1], c.interactions[3]
    raw_first, raw_last = first.raw_request, last.raw_request
    assert isinstance(raw_first, dict) and isinstance(raw_last, dict)
    shared = zip(raw_first["messages"][:3], raw_last["messages"][:3], strict=True)
    assert all(a is b for a, b in shared)
    assert raw_first["tools"][0] is raw_last["tools"][0]
    # derived canonical requests share their elements too
    assert first.request.system is not None and last.request.system is not None
    assert first.request.system[0] is last.request.system[0]
    assert first.request.messages is not None and last.request.messages is not None
    shared = zip(first.request.messages[:2], last.request.messages[:2], strict=True)
    assert all(a is b for a, b in shared)


def test_shared_canonical_elements_keep_their_exact_json() -> None:
    """Python equates 1, 1.0 and True, and objects with their keys in another order; a
    recomputed element is shared only when its JSON text is the same."""
    calls = [{"n": 1, "m": 2}, {"n": 1.0, "m": 2}, {"n": True, "m": 2}, {"m": 2, "n": True}]
    calls += [{"m": 2, "n": 0.0}, {"m": 2, "n": -0.0}]
    c = Cassette(
        [
            _chat([{"role": "user", "content": "go"}, _call(arguments)], [], turn)
            for turn, arguments in enumerate(calls)
        ]
    )
    texts = [json.dumps(ex.request.messages) for ex in c.interactions]
    assert len(set(texts)) == 6
    loaded = loads(dumps(c))
    assert [json.dumps(ex.request.messages) for ex in loaded.interactions] == texts


def _call(arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
    call["function"]["arguments"] = json.dumps(arguments)  # type: ignore[index]
    return {"role": "assistant", "content": None, "tool_calls": [call]}


# --- lossless ------------------------------------------------------------------------

reference_like = st.from_regex(r"@[0-9a-f]{12,20}", fullmatch=True)
long_text = st.text(min_size=1020, max_size=1030)
pool_values = json_values | reference_like | long_text
shared_lists = st.lists(st.sampled_from(["a", "b"]).flatmap(lambda _: pool_values), max_size=4)


@st.composite
def sharing_exchanges(draw: st.DrawFn) -> Exchange:
    """Exchanges whose raw and canonical lists hold objects, long strings and literal
    strings of the reference form, drawn from a small pool so that they repeat."""
    pool = draw(st.lists(pool_values, min_size=1, max_size=4))
    pick = st.lists(st.sampled_from(pool), max_size=4)
    ex = draw(exchanges)
    raw: dict[str, Any] = {
        "messages": draw(pick),
        "system": draw(st.sampled_from(pool)),
        "model": draw(reference_like | st.just("m")),
    }
    request = CanonicalRequest(
        ex.request.endpoint,
        model=ex.request.model,
        system=draw(st.none() | pick),
        messages=draw(pick),
        tools=draw(st.none() | pick),
        params=ex.request.params,
        known=ex.request.known,
    )
    ex.raw_request = draw(st.just(raw) | st.just(pool) | st.none())
    ex.request = request
    return ex


few = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
numbers = st.sampled_from([1, 1.0, True, 0, False, 0.0, -0.0])
chat_messages = st.fixed_dictionaries(
    {"role": st.just("user"), "content": st.just("go")}, optional={"name": numbers}
)


@st.composite
def derived_exchanges(draw: st.DrawFn) -> Exchange:
    """OpenAI chat calls as the gateway records them: the canonical request computed
    from the body, whose values repeat at the same places with Python-equal numbers."""
    body = draw(
        st.fixed_dictionaries(
            {"model": st.just("m"), "messages": st.lists(chat_messages, max_size=3)},
            optional={"temperature": numbers, "metadata": st.dictionaries(text, numbers)},
        )
    )
    ex = _chat(body["messages"], [], draw(st.integers(0, 9)))
    ex.raw_request = body
    ex.request = providers.get("openai").canonical(CHAT, body)
    return ex


sharing_cassettes = st.builds(
    Cassette,
    interactions=st.lists(sharing_exchanges() | derived_exchanges() | exchanges, max_size=4),
    source=st.fixed_dictionaries({"command": st.lists(st.text(max_size=5), max_size=2)}),
)


@few
@given(sharing_cassettes)
def test_decode_encode_is_lossless_and_matches_the_schema(c: Cassette) -> None:
    text = V2.encode(c)
    assert loads(text) == c
    assert V2.encode(loads(text)) == text
    doc = json.loads(text)
    assert text == layout(V2.to_json(c))
    assert schema_errors(doc) == []


@few
@given(st.lists(derived_exchanges(), min_size=2, max_size=4))
def test_derived_requests_come_back_with_their_exact_json(interactions: list[Exchange]) -> None:
    loaded = loads(dumps(Cassette(interactions))).interactions
    assert loaded == interactions
    assert [json.dumps(ex.request.messages) for ex in loaded] == [
        json.dumps(ex.request.messages) for ex in interactions
    ]


@few
@given(sharing_cassettes)
def test_version_1_migrates_to_version_2_keeping_every_interaction(c: Cassette) -> None:
    v1 = V1.to_json(c)
    v2 = versions.convert_1_to_2(v1)
    assert v2["version"] == 2 and schema_errors(v2) == []
    assert V2.decode(v2, "c.json").interactions == c.interactions
    assert V1.decode(v1, "c.json").interactions == c.interactions


@few
@given(sharing_cassettes)
def test_the_writer_streams_the_text_encode_writes(c: Cassette) -> None:
    c.interactions.sort(key=lambda ex: ex.start_ns)
    assert streamed(c) == V2.encode(c)


def test_a_literal_string_of_the_reference_form_is_kept() -> None:
    c = sample()
    literal = "@0123456789ab"
    nested = {"role": "user", "content": [literal, {"text": literal}]}
    c.interactions[0].raw_request = {"messages": [literal, "short", nested], "system": literal}
    doc = json.loads(dumps(c))
    raw = doc["interactions"][0]["raw_request"]
    assert raw["messages"][1] == "short" and raw["messages"][0] == raw["system"] != literal
    assert doc["table"][raw["system"]] == literal
    assert doc["table"][raw["messages"][2]]["content"] == [raw["system"], {"text": raw["system"]}]
    assert loads(dumps(c)) == c


def test_a_long_text_is_stored_once_when_the_message_around_it_changes() -> None:
    """An agent moves its cache marker to the newest message every turn: the message
    before it is sent again without the marker, its long text unchanged."""
    text = "the file, line by line\n" * 100
    provider = providers.get("anthropic")

    def turn(messages: list[Any], n: int) -> Exchange:
        body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages}
        return Exchange(
            "anthropic",
            "messages",
            provider.canonical("/v1/messages", body),
            Response(200, {}, body={"n": n}),
            raw_request=body,
        )

    marker = {"type": "ephemeral"}
    first = [{"role": "user", "content": [{"type": "text", "text": text, "cache_control": marker}]}]
    second = [
        {"role": "user", "content": [{"type": "text", "text": text}]},
        {"role": "assistant", "content": [{"type": "text", "text": "read it"}]},
        {"role": "user", "content": [{"type": "text", "text": "next", "cache_control": marker}]},
    ]
    c = Cassette([turn(first, 1), turn(second, 2)])
    written = dumps(c)
    assert written.count("line by line") == 100  # the text once, in its string entry
    loaded = loads(written)
    assert loaded == c and schema_errors(json.loads(written)) == []
    one, two = (ex.raw_request for ex in loaded.interactions)
    assert isinstance(one, dict) and isinstance(two, dict)
    assert one["messages"][0]["content"][0]["text"] is two["messages"][0]["content"][0]["text"]


def test_a_request_not_derivable_from_its_body_is_written_out() -> None:
    ex = conversation(2).interactions[1]
    ex.request = CanonicalRequest(CHAT, "gpt-4o-mini", messages=[], known=frozenset({"model"}))
    doc = json.loads(dumps(Cassette([ex])))
    assert doc["interactions"][0]["request"]["known"] == ["model"]
    assert loads(dumps(Cassette([ex]))).interactions == [ex]
    # equal in Python but not in JSON text (1.0 for 1): written out too
    ex = _chat([{"role": "user", "content": "go"}], [], 0)
    assert isinstance(ex.raw_request, dict)
    ex.raw_request["temperature"] = 1
    ex.request = providers.get("openai").canonical(CHAT, {**ex.raw_request, "temperature": 1.0})
    assert ex.request == providers.get("openai").canonical(CHAT, ex.raw_request)
    doc = json.loads(dumps(Cassette([ex])))
    assert doc["interactions"][0]["request"]["params"]["temperature"] == 1.0
    assert json.dumps(loads(dumps(Cassette([ex]))).interactions[0].request.params) == json.dumps(
        ex.request.params
    )


def test_two_values_whose_names_would_collide_get_longer_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = hashlib.sha256

    class Colliding:
        def __init__(self, data: bytes) -> None:
            self.real = real(data)

        def digest(self) -> bytes:
            return bytes(6) + self.real.digest()[6:]

    monkeypatch.setattr(table_module.hashlib, "sha256", Colliding)
    c = conversation(2)
    doc = json.loads(dumps(c))
    assert "@000000000000" in doc["table"]
    assert sorted(map(len, doc["table"]))[-1] > 13
    assert loads(dumps(c)) == c and streamed(c) == dumps(c)


def test_a_lone_surrogate_in_a_shared_value_is_escaped_not_lost() -> None:
    c = conversation(2)
    ex = c.interactions[1]
    assert isinstance(ex.raw_request, dict)
    odd = {"role": "user", "content": "\ud800"}
    ex.raw_request["messages"] = [*ex.raw_request["messages"], odd]
    ex.request = providers.get("openai").canonical(CHAT, ex.raw_request)
    text = dumps(c)
    assert "\\ud800" in text and loads(text) == c and streamed(c) == text


# --- errors name the place -----------------------------------------------------------


def _broken(edit: Any) -> dict[str, Any]:
    doc = json.loads(dumps(conversation(2)))
    edit(doc)
    return doc


@pytest.mark.parametrize(
    ("edit", "where", "message"),
    [
        (
            lambda d: d["interactions"][1]["raw_request"]["messages"].__setitem__(
                1, "@ffffffffffff"
            ),
            "interactions[1].raw_request.messages[1]",
            "unknown reference '@ffffffffffff'",
        ),
        (
            lambda d: d["table"].__setitem__("tool", {}),
            "table.tool",
            "not a reference name",
        ),
        (
            lambda d: d["interactions"][0].__setitem__("provider", "nobody"),
            "interactions[0].provider",
            "unknown provider 'nobody'",
        ),
        (
            lambda d: d["interactions"][0].__delitem__("raw_request"),
            "interactions[0].request.derived",
            "no raw_request",
        ),
        (
            lambda d: d["interactions"][0]["request"].__setitem__("derived", 1),
            "interactions[0].request.derived",
            "expected true",
        ),
        (
            lambda d: d["interactions"][0]["request"].__setitem__("model", "m"),
            "interactions[0].request.model",
            "unknown field",
        ),
        (lambda d: d.__setitem__("table", []), "table", "expected an object"),
        (lambda d: d.__delitem__("table"), "table", "missing"),
        (
            lambda d: next(v for v in d["table"].values() if "tool_calls" not in v).__setitem__(
                "content", ["@0123456789ab"]
            ),
            "table.@",
            "unknown reference '@0123456789ab' (no string entry",
        ),
    ],
)
def test_a_broken_version_2_cassette_names_the_place(edit: Any, where: str, message: str) -> None:
    doc = _broken(edit)
    with pytest.raises(CassetteError) as info:
        loads(json.dumps(doc), "c.json")
    assert info.value.where.startswith(where) and message in info.value.problem
    if where == "table.@":  # inside an entry: the entry, then the steps into it
        assert info.value.where.endswith(".content[0]")
    if "unknown" not in message:  # the schema knows neither the table's names nor providers
        assert schema_errors(doc)


# --- real clients: record, replay, and nothing changes what was loaded ----------------


def test_a_recorded_session_replays_and_nothing_changes_the_loaded_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "c.json"
    tools: Any = [{"type": "function", "function": {"name": "read", "parameters": {}}}]

    def agent() -> None:
        client = openai.OpenAI(max_retries=0)
        history: list[Any] = [{"role": "system", "content": "You code. " * 20}]
        for turn in range(4):
            history.append({"role": "user", "content": f"step {turn}"})
            answer = client.chat.completions.create(
                model="gpt-4o-mini", messages=history, tools=tools
            )
            history.append({"role": "assistant", "content": answer.choices[0].message.content})

    with run_stub() as stub, key_set():
        with otel_replay.record(cassette, upstream_openai=stub.openai_url):
            agent()
    doc = json.loads(cassette.read_text(encoding="utf-8"))
    assert doc["version"] == 2 and len(doc["interactions"]) == 4
    assert all(i["request"].get("derived") for i in doc["interactions"])
    assert cassette.read_text(encoding="utf-8").count("You code.") == 20

    loaded: list[Cassette] = []

    def keep(path: Any) -> Cassette:
        loaded.append(load(path))
        return loaded[-1]

    monkeypatch.setattr(session_module, "load", keep)
    with otel_replay.replay(cassette, mode="strict"):
        agent()
    fingerprints(loaded[0])
    assert loaded[0] == load(cassette)  # matching and the report left every value as loaded
