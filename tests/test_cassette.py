"""The cassette: dumps ⇄ loads is lossless, the schema matches, errors name the place."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_check import schema_errors, validate_cassette_file

from otel_replay.cassette.model import (
    FORMAT_VERSION,
    MIGRATIONS,
    Cassette,
    default_source,
    dump,
    dumps,
    load,
    loads,
    to_json,
)
from otel_replay.cassette.v1 import V1
from otel_replay.core.errors import CassetteError, CassetteVersionError
from otel_replay.core.exchange import COMPONENTS, CanonicalRequest, Exchange, Response, SSEEvent

# --- strategies ----------------------------------------------------------------------

text = st.text(st.characters(codec="utf-8"), max_size=20)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=10,
)
json_objects = st.dictionaries(text, json_values, max_size=4)
hex16 = st.text("0123456789abcdef", min_size=16, max_size=16)
hex32 = st.text("0123456789abcdef", min_size=32, max_size=32)
parts = st.lists(st.fixed_dictionaries({"type": st.just("text"), "content": text}), max_size=2)

# SSE data: compact JSON (stored as "json"), JSON that is not compact, and plain text.
compact_json = json_values.map(lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":")))
spaced_json = json_objects.map(lambda v: json.dumps(v, indent=1))
# a cassette's wire values: SSE data and header values on lines of their own (see wire.py)
one_line = st.text(st.characters(codec="utf-8", exclude_characters="\r\n\x00"), max_size=20)
sse_data = compact_json | spaced_json | one_line | st.just("[DONE]")
header_names = st.from_regex(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,20}", fullmatch=True)
events = st.builds(
    SSEEvent,
    data=sse_data,
    event=st.none() | st.sampled_from(["message_start", "content_block_delta", "ping", ""]),
    t=st.floats(0, 120, allow_nan=False),
)


@st.composite
def requests(draw: st.DrawFn) -> CanonicalRequest:
    return CanonicalRequest(
        endpoint=draw(st.sampled_from(["/v1/chat/completions", "/v1/messages", "/v1/embeddings"])),
        model=draw(st.none() | text),
        system=draw(st.none() | parts),
        messages=draw(
            st.none() | st.lists(st.fixed_dictionaries({"role": text, "parts": parts}), max_size=3)
        ),
        tools=draw(
            st.none()
            | st.lists(
                st.fixed_dictionaries({"type": st.just("function"), "name": text}), max_size=2
            )
        ),
        params=draw(json_objects),
        known=draw(st.frozensets(st.sampled_from(COMPONENTS), min_size=1)),
    )


@st.composite
def responses(draw: st.DrawFn) -> Response:
    streamed = draw(st.booleans())
    fault = draw(st.none() | st.sampled_from(["timeout", "reset", "reset_mid_stream"]))
    status = draw(st.integers(100, 599) | (st.just(0) if fault else st.nothing()))
    return Response(
        status=status,
        headers=draw(st.dictionaries(header_names, one_line, max_size=3)),
        body=None if streamed else draw(json_values),
        events=draw(st.lists(events, max_size=4)) if streamed else None,
        fault=fault,
    )


exchanges = st.builds(
    Exchange,
    provider=st.sampled_from(["openai", "anthropic"]),
    operation=st.sampled_from(["chat", "responses", "messages", "embeddings", "models"]),
    request=requests(),
    response=responses(),
    raw_request=st.none() | json_objects,
    method=st.sampled_from(["POST", "GET"]),
    stream=st.booleans(),
    start_ns=st.integers(0, 2**63),
    end_ns=st.integers(0, 2**63),
    trace_id=st.none() | hex32,
    span_id=st.none() | hex16,
    parent_span_id=st.none() | hex16,
    source=st.sampled_from(["otel-replay", "genai-semconv", "openinference"]),
    provenance=st.none()
    | st.fixed_dictionaries(
        {
            "call": st.integers(1, 99),
            "origin": st.sampled_from(["replayed", "live"]),
            "model": st.none() | text,
        }
    ),
)
cassettes = st.builds(
    Cassette,
    interactions=st.lists(exchanges, max_size=3),
    source=st.fixed_dictionaries({"command": st.lists(text, max_size=2), "recorded_at": text}),
)
fast = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- properties ----------------------------------------------------------------------


@fast
@given(cassettes)
def test_dumps_loads_is_lossless(c: Cassette) -> None:
    text_ = dumps(c)
    assert loads(text_) == c
    assert dumps(loads(text_)) == text_
    assert text_.endswith("}\n")


@fast
@given(cassettes)
def test_schema_accepts_what_dumps_writes(c: Cassette) -> None:
    assert schema_errors(json.loads(dumps(c))) == []


# Each breakage: (where it happens, how to break an interaction document).
BREAKAGES: list[tuple[str, Any]] = [
    ("response.status", lambda d: d["response"].__setitem__("status", "200")),
    ("request.endpoint", lambda d: d["request"].__delitem__("endpoint")),
    ("request.params", lambda d: d["request"].__setitem__("params", [])),
    ("stream", lambda d: d.__setitem__("stream", "yes")),
    ("provider", lambda d: d.__setitem__("provider", 1)),
    ("response.headers.x", lambda d: d["response"]["headers"].__setitem__("x", 5)),
    ("reponse", lambda d: d.__setitem__("reponse", {})),
    ("request.known[0]", lambda d: d["request"].__setitem__("known", ["prompt"])),
]


@fast
@given(cassettes.filter(lambda c: c.interactions), st.data())
def test_broken_cassettes_are_rejected_by_schema_and_loader(
    c: Cassette, data: st.DataObject
) -> None:
    doc = json.loads(dumps(c))
    index = data.draw(st.integers(0, len(doc["interactions"]) - 1))
    where, breakage = data.draw(st.sampled_from(BREAKAGES))
    broken = copy.deepcopy(doc)
    breakage(broken["interactions"][index])
    assert schema_errors(broken)
    with pytest.raises(CassetteError) as info:
        loads(json.dumps(broken), "c.json")
    assert info.value.where == f"interactions[{index}].{where}"


# --- what the file looks like --------------------------------------------------------


def sample() -> Cassette:
    ex = Exchange(
        provider="anthropic",
        operation="messages",
        request=CanonicalRequest(
            "/v1/messages",
            model="claude-sonnet-4-5",
            system=[{"type": "text", "content": "Réponds en français."}],
            messages=[{"role": "user", "parts": [{"type": "text", "content": "héllo ✓"}]}],
            params={"max_tokens": 64},
        ),
        response=Response(
            200,
            {"content-type": "text/event-stream"},
            events=[
                SSEEvent('{"type":"message_start"}', "message_start", 0.01),
                SSEEvent('{"type": "ping"}', "ping", 0.02),
                SSEEvent("not json ✓", None, 0.5),
            ],
        ),
        raw_request={"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": True},
        stream=True,
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        start_ns=1_700_000_000_000_000_000,
        end_ns=1_700_000_000_500_000_000,
    )
    return Cassette(
        [ex], {"command": ["python", "agent.py"], "recorded_at": "2025-01-01T00:00:00+00:00"}
    )


def test_layout_is_stable_and_readable() -> None:
    text_ = dumps(sample())
    doc = json.loads(text_)
    assert list(doc) == ["version", "source", "table", "interactions"]
    assert list(doc["interactions"][0]) == [
        "provider",
        "operation",
        "request",
        "raw_request",
        "stream",
        "response",
        "trace_id",
        "span_id",
        "source",
        "start_ns",
        "end_ns",
    ]
    request = doc["interactions"][0]["request"]
    assert list(request) == [*COMPONENTS]  # not derivable from this raw request: written out
    messages = [doc["table"][ref] for ref in request["messages"]]
    assert messages == sample().interactions[0].request.messages
    assert '\n  "version": 2,' in text_ and "héllo ✓" in text_
    events_ = doc["interactions"][0]["response"]["events"]
    assert events_[0] == {"t": 0.01, "event": "message_start", "json": {"type": "message_start"}}
    assert events_[1] == {"t": 0.02, "event": "ping", "data": '{"type": "ping"}'}
    assert events_[2] == {"t": 0.5, "data": "not json ✓"}


def layout(doc: Any, ascii: bool = False) -> str:
    """A cassette's text by definition: ``json.dumps(doc, indent=2)``, except that each
    event of an interaction's ``response.events`` is on one line of its own, as
    ``json.dumps(event)`` writes it; and the closing newline."""

    def walk(value: Any, pad: str, path: tuple[Any, ...]) -> str:
        inner = pad + "  "
        if isinstance(value, dict) and value:
            items = [
                f"{json.dumps(k if isinstance(k, str) else json.dumps(k), ensure_ascii=ascii)}: "
                + walk(v, inner, (*path, k))
                for k, v in value.items()
            ]
            brackets = "{}"
        elif isinstance(value, list | tuple) and value:
            events = (
                len(path) == 4
                and path[0] == "interactions"
                and path[2:]
                == (
                    "response",
                    "events",
                )
            )
            items = [
                json.dumps(v, ensure_ascii=ascii, allow_nan=False)
                if events
                else walk(v, inner, (*path, i))
                for i, v in enumerate(value)
            ]
            brackets = "[]"
        else:
            return json.dumps(value, ensure_ascii=ascii, allow_nan=False)
        between = ",\n" + inner
        return f"{brackets[0]}\n{inner}{between.join(items)}\n{pad}{brackets[1]}"

    return walk(doc, "", ()) + "\n"


@fast
@given(cassettes)
def test_the_text_is_the_layout_and_reads_as_json(c: Cassette) -> None:
    text_ = dumps(c)
    assert text_ == layout(to_json(c))
    assert json.loads(text_) == json.loads(json.dumps(to_json(c)))


def test_each_event_is_one_line_and_a_changed_event_one_changed_line() -> None:
    c = sample()
    before = dumps(c).splitlines()
    assert (
        '          {"t": 0.01, "event": "message_start", "json": {"type": "message_start"}},'
        in (before)
    )
    assert '          {"t": 0.5, "data": "not json ✓"}' in before
    c.interactions[0].response.events[1] = SSEEvent('{"type":"pong"}', "ping", 0.02)  # type: ignore[index]
    after = dumps(c).splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [
        (
            '          {"t": 0.02, "event": "ping", "data": "{\\"type\\": \\"ping\\"}"},',
            '          {"t": 0.02, "event": "ping", "json": {"type": "pong"}},',
        )
    ]


def test_text_body_and_method_and_known() -> None:
    ex = sample().interactions[0]
    ex.response = Response(502, {}, body="<html>bad gateway</html>")
    ex.method = "GET"
    ex.request = CanonicalRequest("/v1/models", known=frozenset({"model", "endpoint"}))
    interaction = json.loads(dumps(Cassette([ex])))["interactions"][0]
    assert interaction["method"] == "GET"
    assert interaction["response"] == {
        "status": 502,
        "headers": {},
        "text": "<html>bad gateway</html>",
    }
    assert interaction["request"]["known"] == ["endpoint", "model"]


def test_lone_surrogate_is_escaped_not_lost(tmp_path: Path) -> None:
    c = sample()
    c.interactions[0].raw_request = {"q": "\ud800"}
    dump(c, tmp_path / "c.json")
    assert load(tmp_path / "c.json") == c
    c.interactions[0].response.events.append(SSEEvent("\ud800 ✓", None, 0.6))  # type: ignore[union-attr]
    text_ = dumps(c)  # the interaction holding it escaped, its events still one a line
    assert '\n          {"t": 0.6, "data": "\\ud800 \\u2713"}\n' in text_
    assert loads(text_) == c


# --- errors --------------------------------------------------------------------------


def test_truncated_json_names_the_line() -> None:
    text_ = dumps(sample())
    truncated = text_[: len(text_) // 2]
    with pytest.raises(CassetteError) as info:
        loads(truncated, "cassettes/x.json")
    message = str(info.value)
    assert message.startswith(
        f"cassettes/x.json at line {truncated.count(chr(10)) + 1}: invalid JSON"
    )
    assert "\n" not in message


def test_wrong_type_names_the_path() -> None:
    doc = json.loads(dumps(Cassette([sample().interactions[0]] * 4)))
    doc["interactions"][3]["response"]["status"] = "ok"
    with pytest.raises(CassetteError) as info:
        loads(json.dumps(doc), "x.json")
    assert str(info.value) == (
        "x.json at interactions[3].response.status: expected an integer, got a string"
    )


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ([], ""),
        ({"interactions": []}, "version"),
        ({"version": "1", "interactions": []}, "version"),
        ({"version": 1, "interactions": {}}, "interactions"),
        ({"version": 1, "interactions": [], "extra": 1}, "extra"),
        ({"version": 1, "interactions": [{}]}, "interactions[0].provider"),
        ({"version": 1, "interactions": [], "source": []}, "source"),
    ],
)
def test_structural_errors(doc: Any, where: str) -> None:
    with pytest.raises(CassetteError) as info:
        loads(json.dumps(doc))
    assert info.value.where == where


def test_nan_is_refused_both_ways(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="invalid JSON"):
        loads('{"version": 1, "interactions": [], "x": NaN}')
    c = sample()
    c.interactions[0].raw_request = {"temperature": float("nan")}
    with pytest.raises(CassetteError, match="cannot write"):
        dump(c, tmp_path / "c.json")
    assert not list(tmp_path.iterdir())


def test_newer_version_asks_for_an_upgrade() -> None:
    with pytest.raises(CassetteVersionError) as info:
        loads(json.dumps({"version": FORMAT_VERSION + 1, "interactions": []}), "new.json")
    assert "upgrade otel-replay" in str(info.value)
    assert info.value.where == "version"


def test_missing_file_is_a_cassette_error(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="cannot read"):
        load(tmp_path / "nope.json")


# --- migrations ----------------------------------------------------------------------


def test_migration_chain_covers_every_older_version() -> None:
    assert sorted(MIGRATIONS) == list(range(FORMAT_VERSION))


def test_version_0_migrates() -> None:
    v1 = V1.to_json(sample())
    v0 = {
        "command": ["python", "agent.py"],
        "recorded_at": "2024-12-01T10:00:00+00:00",
        "exchanges": v1["interactions"],
    }
    c = loads(json.dumps(v0), "old.json")
    assert c.interactions == sample().interactions
    assert c.source == {
        "command": ["python", "agent.py"],
        "recorded_at": "2024-12-01T10:00:00+00:00",
    }
    assert schema_errors(json.loads(dumps(c))) == []
    explicit = loads(json.dumps({"version": 0, **v0}))
    assert explicit == c


# --- I/O -----------------------------------------------------------------------------


def test_dump_load_round_trip_matches_schema(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "cassettes" / "a.json"
    c = Cassette(sample().interactions, default_source(command=["agent"]))
    dump(c, path)
    assert load(path) == c
    assert path.read_text(encoding="utf-8") == dumps(c)
    validate_cassette_file(path)
    assert [p.name for p in path.parent.iterdir()] == ["a.json"]
    assert path.stat().st_mode & 0o777 == 0o644


def test_dump_failure_during_serialisation_keeps_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.json"
    dump(sample(), path)
    before = path.read_bytes()

    def explode(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("disk full, say")

    monkeypatch.setattr(json, "dumps", explode)  # as cassette.dumps sees it
    with pytest.raises(RuntimeError):
        dump(Cassette([]), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_dump_failure_mid_write_keeps_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.json"
    dump(sample(), path)
    before = path.read_bytes()

    def fail_replace(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail_replace)
    with pytest.raises(CassetteError, match="No space left on device"):
        dump(Cassette([]), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_dump_keeps_existing_mode(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text("{}")
    os.chmod(path, 0o600)
    dump(sample(), path)
    assert path.stat().st_mode & 0o777 == 0o600
