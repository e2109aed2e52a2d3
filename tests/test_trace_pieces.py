"""Long strings stored once per trace file (``spans.pieces`` / ``readers.pieces``): a
recording's trace builds exactly the cassette the whole-body spans build, holds each
long string once, and still shows every call in the GenAI attributes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from agents import WEATHER, anthropic_agent, openai_agent
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.cassette.model import load
from otel_replay.core import genai, jsontext
from otel_replay.core.errors import TraceFormatError
from otel_replay.core.exchange import Exchange, Response
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.otlp import codec
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.otlp.files import iter_trace_requests
from otel_replay.otlp.store import TraceStore
from otel_replay.pipeline.build import build
from otel_replay.providers import get
from otel_replay.readers import read_exchanges
from otel_replay.redaction.redact import Redactor
from otel_replay.reports.spantree import load_spans
from otel_replay.spans import attributes as own
from otel_replay.spans import pieces as pieces_module
from otel_replay.spans import request_half
from otel_replay.spans.draft import RequestDraft
from otel_replay.spans.encode import exchange_to_trace_json
from otel_replay.spans.pieces import MIN_PIECE, Ledger, holds_no_piece
from otel_replay.testing.stub import run_stub

SYSTEM_EXTRA = "".join(f" Rule {i}: answer briefly, cite the tool." for i in range(40))
MARK = "Rule 39: answer briefly"  # once in the system prompt
DESCRIBED = {
    **WEATHER,
    "function": {**WEATHER["function"], "description": "The weather in a city. " * 30},
}


def _record(tmp_path: Path, provider: str, stream: bool) -> tuple[Path, Path, list[Any]]:
    traces, cassette = tmp_path / "t.jsonl", tmp_path / "c.json"
    with run_stub() as stub:
        config = GatewayConfig(
            mode="record",
            cassette=cassette,
            traces=traces,
            upstream_openai=stub.openai_url,
            upstream_anthropic=stub.anthropic_url,
        )
        with GatewayThread(config) as gw:
            env = gw.env
            if provider == "openai":
                with openai.OpenAI(
                    base_url=env["OPENAI_BASE_URL"], api_key="sk-test", max_retries=0
                ) as client:
                    openai_agent(
                        client, stream=stream, system_extra=SYSTEM_EXTRA, tools=[DESCRIBED]
                    )
            else:
                with anthropic.Anthropic(
                    base_url=env["ANTHROPIC_BASE_URL"], api_key="sk-ant-test", max_retries=0
                ) as client:
                    anthropic_agent(client, stream=stream, system_extra=SYSTEM_EXTRA)
        sent = [r.body for r in stub.received]
    return traces, cassette, sent


def _whole_body_trace(exchanges: list[Exchange], path: Path) -> Path:
    """The same exchanges as spans holding their bodies whole (what the store wrote
    before pieces, and what older trace files hold)."""
    redactor = Redactor()
    store = TraceStore(path, redact=redactor.json, redact_text=redactor.text)
    for ex in exchanges:
        store.append_traces(store.traces_line(exchange_to_trace_json(ex)))
    store.close()
    return path


@pytest.mark.parametrize(
    ("provider", "stream"), [("openai", True), ("openai", False), ("anthropic", True)]
)
def test_recording_builds_the_same_cassette_with_each_long_string_once(
    tmp_path: Path, provider: str, stream: bool
) -> None:
    traces, cassette, sent = _record(tmp_path, provider, stream)
    built = build([traces]).interactions
    assert [ex.raw_request for ex in built] == sent  # the bodies exactly as the SDK sent them
    assert built == load(cassette).interactions
    older = build([_whole_body_trace(built, tmp_path / "whole.jsonl")]).interactions
    assert built == older  # the cassette whole-body spans give

    text = traces.read_text()
    assert text.count(MARK) == 1  # once in the file, though sent every turn
    lines = [json.loads(line) for line in text.splitlines()]
    spans = [r["resourceSpans"][0]["scopeSpans"][0]["spans"][0] for r in lines]
    assert len(spans) == len(sent) >= 2
    first, later = (
        {a["key"]: a["value"].get("stringValue") for a in span["attributes"]}
        for span in (spans[0], spans[-1])
    )
    assert MARK in json.dumps(first)  # the first call shows it in full
    # later calls keep every message in the GenAI attributes, repeated content as a marker
    messages = json.loads(later[genai.INPUT_MESSAGES])
    assert len(messages) == len([m for m in sent[-1]["messages"] if m["role"] != "system"])
    assert all("role" in m and isinstance(m["parts"], list) for m in messages)
    system = later.get(genai.SYSTEM_INSTRUCTIONS) or later[genai.INPUT_MESSAGES]
    assert own.PIECE_MARKER in system and MARK not in system
    assert own.REQUEST_BODY not in later and own.PIECE_MARKER in later[own.REQUEST_TEMPLATE]
    assert traces.stat().st_size < (tmp_path / "whole.jsonl").stat().st_size
    # the run report's spans carry the requests whole too
    shown = [n.exchange.raw_request for n in load_spans([traces]) if n.exchange is not None]
    assert shown == sent


def test_a_file_missing_the_spans_that_store_a_piece_says_so(tmp_path: Path) -> None:
    traces, _, _ = _record(tmp_path, "openai", False)
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(traces.read_text().splitlines(keepends=True)[1:]))
    with pytest.raises(
        TraceFormatError, match=r"refers to (piece|list) .* read the whole trace file"
    ):
        list(read_exchanges(iter_trace_requests(rest)))


# --- any body, any sequence --------------------------------------------------------------

SECRET = "sk-proj-" + "A1b2C3d4" * 5
longs = st.sampled_from(
    [
        "x" * MIN_PIECE,
        'line one\nline "two" \\ é 日本 ' * 20,
        f"the key is {SECRET} " * 20,
        "password: hunter2hunter2 " * 20,
        "\\u0073k-" + "z" * MIN_PIECE,
    ]
)
values = st.recursive(
    st.none() | st.integers() | st.text(max_size=5) | longs,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["content", "text", "password", "api_key", "x"]), inner)
    ),
    max_leaves=12,
)
bodies = st.fixed_dictionaries(
    {"model": st.just("gpt-4o"), "messages": st.lists(values, max_size=4)},
    optional={"system": longs, "metadata": values},
)


@settings(max_examples=25, deadline=None)
@given(st.lists(bodies, min_size=1, max_size=4))
def test_bodies_come_back_as_the_whole_body_spans_give_them(
    tmp_path_factory: pytest.TempPathFactory, sent: list[dict[str, Any]]
) -> None:
    """Bodies written through one ledger (pieces shared across calls) read back exactly
    as the same bodies written whole, secrets under named keys and all."""
    folder = tmp_path_factory.mktemp("pieces")
    calls = [
        Exchange(
            provider="openai",
            operation="chat",
            request=get("openai").canonical("/v1/chat/completions", body),
            response=Response(status=200, body={"id": f"r{i}"}),
            raw_request=body,
            start_ns=i + 1,
            end_ns=i + 2,
            trace_id="1af7651916cd43dd8448eb211c80319c",
            span_id=f"{i + 1:016x}",
        )
        for i, body in enumerate(sent)
    ]
    redactor = Redactor()
    store = TraceStore(folder / "p.jsonl", redact=redactor.json, redact_text=redactor.text)
    ledger = Ledger()
    for ex in calls:  # as the session stores them
        line, intact = store.own_line(exchange_to_trace_json(ex, ledger=ledger))
        if store.append_traces(line) and intact:
            ledger.commit()
        else:
            ledger.drop()
    store.close()
    whole = build([_whole_body_trace(calls, folder / "w.jsonl")]).interactions
    assert build([folder / "p.jsonl"]).interactions == whole
    assert SECRET not in (folder / "p.jsonl").read_text()


def test_a_piece_under_a_secret_named_key_stays_in_place() -> None:
    ledger = Ledger()
    long = "hunter2 " * 40
    template, refs = ledger.template({"password": long, "content": long})
    assert template == {"password": long, "content": own.PIECE_MARKER + refs[0][1]}
    assert refs == [[["content"], refs[0][1]]]


def _short_exchange() -> Exchange:
    """A call whose body is too short to hold pieces."""
    body = {"model": "m", "messages": []}
    return Exchange(
        provider="openai",
        operation="chat",
        request=get("openai").canonical("/v1/chat/completions", body),
        response=Response(status=200, body={"id": "r"}),
        raw_request=dict(body),
    )


def test_spans_without_pieces_read_as_before(tmp_path: Path) -> None:
    """A span whose body is whole (older files, short bodies) has no piece attributes."""
    ex = _short_exchange()
    doc = exchange_to_trace_json(ex, ledger=Ledger())
    span = codec.from_doc(codec.TRACES, doc, "t").resource_spans[0].scope_spans[0].spans[0]
    attrs = attributes_to_dict(span.attributes)
    assert own.REQUEST_BODY in attrs and not {own.REQUEST_TEMPLATE, own.PIECES} & set(attrs)


def test_a_span_of_a_newer_format_asks_for_an_upgrade() -> None:
    ex = _short_exchange()
    doc = exchange_to_trace_json(ex)
    span_doc = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    for attribute in span_doc["attributes"]:
        if attribute["key"] == own.FORMAT_ATTRIBUTE:
            attribute["value"] = {"intValue": str(own.SPAN_FORMAT_VERSION + 1)}
    request = codec.from_doc(codec.TRACES, doc, "t")
    with pytest.raises(TraceFormatError, match="upgrade otel-replay"):
        list(read_exchanges([request]))


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max([0, *map(_longest_string, value.values())])
    if isinstance(value, list):
        return max([0, *map(_longest_string, value)])
    return 0


@settings(max_examples=70, deadline=None)
@given(values, st.sampled_from([(",", ":"), (", ", ": ")]), st.booleans())
def test_a_short_text_holds_no_piece(value: Any, separators: Any, ascii_only: bool) -> None:
    """``holds_no_piece`` never says "no piece" of a body that holds one, whatever its
    escapes; and a span made without the ledger for a short body is the span the ledger
    makes (the gateway skips the ledger for such calls), but for a list the ledger makes
    known to later spans (``spans.lists``): both read back as the same call."""
    raw = json.dumps(value, separators=separators, ensure_ascii=ascii_only).encode()
    if holds_no_piece(raw):
        assert _longest_string(value) < MIN_PIECE
        ex = Exchange(
            provider="openai",
            operation="chat",
            request=get("openai").canonical("/v1/chat/completions", {"messages": [value]}),
            response=Response(status=200, body={"id": "r"}),
            raw_request={"messages": [value]},
            trace_id="1af7651916cd43dd8448eb211c80319c",
            span_id="00000000000000a1",
        )
        whole, listed = exchange_to_trace_json(ex), exchange_to_trace_json(ex, ledger=Ledger())
        if not Ledger().lists.plan(ex.raw_request).owns:
            assert whole == listed
        both = [codec.from_doc(codec.TRACES, doc, "t") for doc in (whole, listed)]
        assert [list(read_exchanges([r])) for r in both[1:]] == [list(read_exchanges(both[:1]))]


def test_escaped_quotes_and_backslashes_do_not_hide_a_piece() -> None:
    long = 'say \\"' * 60 + "\\\\" * 40  # short runs between escaped quotes
    raw = json.dumps({"content": long}).encode()
    assert max(map(len, raw.split(b'"'))) < MIN_PIECE  # a plain split would be fooled
    assert not holds_no_piece(raw)
    assert holds_no_piece(json.dumps({"content": "x" * (MIN_PIECE - 1)}).encode())
    assert not holds_no_piece(json.dumps({"content": "x" * MIN_PIECE}).encode())
    for ascii_only in (True, False):  # escaped, or written as several bytes each
        accents = json.dumps({"content": "é€" * (MIN_PIECE // 2)}, ensure_ascii=ascii_only)
        assert not holds_no_piece(accents.encode())
    assert not holds_no_piece(b'{"content": "' + b"\xff" * MIN_PIECE + b'"}')  # not UTF-8


# --- drafted while the provider works -----------------------------------------------------


def _exchange(i: int, body: dict[str, Any], answer: Any) -> Exchange:
    return Exchange(
        provider="openai",
        operation="chat",
        request=get("openai").canonical("/v1/chat/completions", body),
        response=Response(status=200, body={"id": f"r{i}", "choices": [answer]}),
        raw_request=body,
        start_ns=i + 1,
        end_ns=i + 2,
        trace_id="1af7651916cd43dd8448eb211c80319c",
        span_id=f"{i + 1:016x}",
    )


chats = st.fixed_dictionaries(
    {
        "model": st.just("gpt-4o"),
        "messages": st.lists(
            st.fixed_dictionaries({"role": st.just("user"), "content": longs | st.just("hi")}),
            min_size=1,
            max_size=3,
        ),
    },
)
answers = st.builds(
    lambda text: {"index": 0, "message": {"role": "assistant", "content": text}},
    longs | st.text(max_size=5),
)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(chats | bodies, answers, st.integers(0, 3), st.booleans(), st.booleans()),
        min_size=1,
        max_size=5,
    )
)
def test_a_drafted_span_is_the_span_made_at_once(calls: list[Any]) -> None:
    """A request's half drafted while the provider works, with any other calls' spans
    stored or dropped in between, gives exactly the span made at once, with the file's
    pieces afterwards the same too (placing decides against what the file holds then)."""
    drafted, fresh = Ledger(), Ledger()
    pending: list[tuple[Exchange, RequestDraft, bool, bool]] = []
    for i, (body, answer, lag, stored, short) in enumerate(calls):
        ex = _exchange(i, body, answer)
        pending.append((ex, RequestDraft(ex.request, ex.raw_request, drafted), stored, short))
        # the oldest drafts are finished once ``lag`` later calls have been drafted
        while len(pending) > lag or (i == len(calls) - 1 and pending):
            ex, draft, stored, short = pending.pop(0)
            with drafted.storing() as kept_drafted, fresh.storing() as kept_fresh:
                got = exchange_to_trace_json(ex, ledger=None if short else drafted, draft=draft)
                want = exchange_to_trace_json(ex, ledger=None if short else fresh)
                assert got == want
                kept_drafted.append(stored)
                kept_fresh.append(stored)
    assert drafted._written == fresh._written
    assert drafted.lists._written == fresh.lists._written


def test_a_drafted_span_does_not_walk_the_request_again(monkeypatch: Any) -> None:
    """Once drafted, only the answer's strings are found when the span is made."""
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": SYSTEM_EXTRA}]}
    ex = _exchange(0, body, {"message": {"role": "assistant", "content": "hi"}})
    ledger = Ledger()
    draft = RequestDraft(ex.request, ex.raw_request, ledger)
    walked: list[Any] = []
    real = pieces_module.long_strings

    def counting(value: Any) -> Any:
        walked.append(value)
        return real(value)

    monkeypatch.setattr(request_half, "long_strings", counting)
    monkeypatch.setattr(pieces_module, "long_strings", counting)
    drafted = exchange_to_trace_json(ex, ledger=ledger, draft=draft)
    assert walked and all(value is not ex.raw_request for value in walked)
    assert ex.request.messages not in walked
    ledger.drop()
    walked.clear()
    assert exchange_to_trace_json(ex, ledger=ledger) == drafted
    assert any(value is ex.raw_request for value in walked)


def test_a_draft_of_another_request_is_not_used() -> None:
    one = _exchange(0, {"model": "gpt-4o", "messages": ["a" * MIN_PIECE]}, {})
    other = _exchange(1, {"model": "gpt-4o", "messages": ["b" * MIN_PIECE]}, {})
    draft = RequestDraft(one.request, one.raw_request, Ledger())
    made = exchange_to_trace_json(other, ledger=Ledger(), draft=draft)
    assert made == exchange_to_trace_json(other, ledger=Ledger())


shared_pool = st.lists(
    st.dictionaries(st.sampled_from(["content", "text", "password", "x"]), values, max_size=3),
    min_size=1,
    max_size=4,
)


def _walked(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    """The definition: every long string with its path, but under a key naming a secret."""
    if isinstance(value, str):
        return [(path, value)] if len(value) >= MIN_PIECE else []
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and pieces_module._names_secret(key):
                continue
            found += _walked(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _walked(item, (*path, index))
    return found


@settings(max_examples=50, deadline=None)
@given(shared_pool, st.lists(st.lists(st.integers(0, 3), max_size=5), min_size=1, max_size=4))
def test_an_object_met_again_holds_the_strings_a_fresh_walk_finds(
    pool: list[dict[str, Any]], picks: list[list[int]]
) -> None:
    """``long_strings`` walks an object in a list once and remembers what it holds: the
    same objects met again, at other places, in other lists, nested or not, give the
    strings and paths the definition gives."""
    bodies = []
    for n, chosen in enumerate(picks):
        items = [pool[i % len(pool)] for i in chosen]
        bodies.append({"messages": items, "nested": [{"content": items}], "n": n})
    for _ in range(2):  # the second time every object is remembered
        for body in bodies:
            assert pieces_module.long_strings(body) == _walked(body)


odd_leaves = st.sampled_from([float("nan"), float("inf"), 1e16, 2**70, 0.1, "\ud800", True])
"""What orjson writes otherwise than the standard library, or refuses."""
draft_pool = st.lists(
    st.dictionaries(
        st.sampled_from(["content", "text", "password", "x"]),
        values | odd_leaves | st.lists(longs | odd_leaves, max_size=2),
        max_size=3,
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=70, deadline=None)
@given(
    draft_pool,
    st.lists(
        st.tuples(st.lists(st.integers(0, 4), max_size=6), st.lists(st.booleans(), max_size=12)),
        min_size=1,
        max_size=4,
    ),
)
def test_a_drafted_text_joined_from_its_objects_is_the_text_written_whole(
    pool: list[dict[str, Any]], turns: list[tuple[list[int], list[bool]]]
) -> None:
    """A draft writes an object met again in a list once (every long string a marker,
    or none in it) and joins its items' texts: the texts are those the value written
    whole gives, for any of its strings known, objects shared between requests and
    places, and values orjson writes otherwise than the standard library (or refuses)."""
    from otel_replay.spans.draft import _template_text, marked_text

    for _ in range(2):  # the second time every object is remembered
        for chosen, known_flags in turns:
            items = [pool[i % len(pool)] for i in chosen]
            for value in (items, {"model": "m", "messages": items, "tools": [*items, "x"]}):
                found = pieces_module.long_strings(value)
                flags = known_flags or [False]
                known = [
                    pieces_module.piece_id(text) if flags[n % len(flags)] else None
                    for n, (_, text) in enumerate(found)
                ]
                whole = jsontext.value_text(Ledger.marked(value, found, known))
                assert marked_text(value, found, known) == whole
                refs = [[list(path), pieces_module.piece_id(text)] for path, text in found]
                templated = jsontext.value_text(pieces_module.templated(value, refs))
                assert _template_text(value, found, refs) == templated
