"""The record path's shortcuts give exactly what the general path gives: the span's OTLP
JSON built straight from the exchange, the store's line for it, the redactor's prefilter."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_spans import exchanges, fake_providers, fast

from otel_replay.core.exchange import Exchange, Response, SSEEvent
from otel_replay.otlp import codec
from otel_replay.otlp.store import TraceStore
from otel_replay.redaction import redact
from otel_replay.redaction.redact import Redactor
from otel_replay.session.session import Session
from otel_replay.spans.encode import exchange_to_span, exchange_to_trace_json, export_request

CHAT = "/v1/chat/completions"


def via_protobuf(ex: Exchange, **kwargs: Any) -> dict[str, Any]:
    service = kwargs.pop("service_name", "otel-replay")
    return codec.to_json(export_request([exchange_to_span(ex, **kwargs)], service))


def assert_same(ex: Exchange, **kwargs: Any) -> None:
    """The direct encoder gives the protobuf path's document, or fails as it does."""
    try:
        expected = via_protobuf(ex, **kwargs)
    except Exception as exc:
        with pytest.raises(type(exc)):
            exchange_to_trace_json(ex, **kwargs)
        return
    assert exchange_to_trace_json(ex, **kwargs) == expected


def openai_exchange(body: dict[str, Any], response: Response, **fields: Any) -> Exchange:
    from otel_replay import providers

    provider = providers.provider_for(CHAT, {})
    values: dict[str, Any] = {
        "provider": "openai",
        "operation": "chat",
        "request": provider.canonical(CHAT, body),
        "response": response,
        "raw_request": body,
        "stream": bool(body.get("stream")),
        "start_ns": 1_700_000_000_000_000_000,
        "end_ns": 1_700_000_000_400_000_000,
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "span_id": "b7ad6b7169203331",
    }
    values.update(fields)
    return Exchange(**values)


def completion(**extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
        **extra,
    }


BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}


# --- exchange -> OTLP JSON, without protobuf -------------------------------------------


@fast
@given(exchanges(), st.booleans(), st.sampled_from([None, "api.example.com"]))
def test_direct_json_is_the_protobuf_json(ex: Exchange, replayed: bool, host: str | None) -> None:
    with fake_providers():
        kwargs: dict[str, Any] = {"replayed": replayed, "server_address": host}
        if host:
            kwargs["server_port"] = 443
        assert exchange_to_trace_json(ex, **kwargs) == via_protobuf(ex, **kwargs)


@fast
@given(exchanges())
def test_direct_json_with_the_real_providers(ex: Exchange) -> None:
    assert exchange_to_trace_json(ex) == via_protobuf(ex)


@pytest.mark.parametrize(
    "response",
    [
        Response(status=200, headers={"content-type": "application/json"}, body=completion()),
        Response(status=200, body=completion(model=123)),
        Response(status=200, body=completion(id=["not", "text"])),
        Response(status=429, headers={"retry-after": "1"}, body={"error": {"message": "slow"}}),
        Response(status=502, body="<html>bad gateway</html>"),
        Response(status=0, fault="timeout"),
        Response(status=200, fault=""),
        Response(
            status=200,
            events=[SSEEvent(data='{"choices":[]}', t=0.01), SSEEvent(data="[DONE]", t=0.02)],
        ),
    ],
)
@pytest.mark.parametrize(
    "body",
    [
        BODY,
        {**BODY, "stop": [], "seed": 7, "temperature": math.nan, "top_p": 1},
        {**BODY, "stop": "END", "max_tokens": 2**63 - 1, "n": True},
        {**BODY, "model": ""},
    ],
)
def test_direct_json_matches_on_odd_values(body: dict[str, Any], response: Response) -> None:
    ex = openai_exchange(body, response, parent_span_id="00f067aa0ba902b7")
    assert_same(ex)
    assert_same(ex, service_name="")


@pytest.mark.parametrize(
    "change",
    [
        {"start_ns": 0, "end_ns": 0},
        {"start_ns": None},
        {"trace_id": None, "span_id": None},
        {"parent_span_id": ""},
        {"stream": 1},
        {"operation": "embeddings", "method": "GET", "source": "openinference"},
    ],
)
def test_direct_json_matches_on_odd_fields(change: dict[str, Any]) -> None:
    ex = openai_exchange(BODY, Response(status=200, body=completion()), **change)
    direct, general = exchange_to_trace_json(ex), via_protobuf(ex)
    if change.get("trace_id", "") is None:  # random ids: equal apart from them
        for doc in (direct, general):
            span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
            assert len(span.pop("traceId")) == 32 and len(span.pop("spanId")) == 16
    assert direct == general


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({**BODY, "seed": 2**64}, ValueError),  # beyond int64: protobuf refuses it
        ({**BODY, "messages": [{"role": "user", "content": "\ud800"}]}, UnicodeEncodeError),
    ],
)
def test_values_protobuf_refuses_still_fail(
    tmp_path: Path, body: dict[str, Any], error: type[Exception]
) -> None:
    ex = openai_exchange(body, Response(status=200, body=completion()))
    with pytest.raises(error):
        exchange_to_span(ex)
    session = Session(mode="record", cassette=None, traces=tmp_path / "t.jsonl")
    with pytest.raises(error):
        session.recorded(ex)
    assert session.live == [] and session.summary().live == 0
    session.discard()


# --- the store's line ------------------------------------------------------------------


SECRET = "sk-proj-" + "A1b2C3d4" * 5


@pytest.mark.parametrize(
    "headers",
    [
        {"x-request-id": "req_1"},
        {"x-request-id": f"Bearer {SECRET}"},
        {"x-request-id": "-----BEGIN RSA PRIVATE KEY-----\nMIIE"},  # runs to the end
    ],
)
def test_store_line_is_the_line_write_traces_writes(
    tmp_path: Path, headers: dict[str, str]
) -> None:
    redactor = Redactor({"MY_SERVICE_TOKEN": "tok-" + "z9" * 6})
    body = {**BODY, "messages": [{"role": "user", "content": f"key {'tok-' + 'z9' * 6}"}]}
    ex = openai_exchange(body, Response(status=200, headers=headers, body=completion()))
    stores = [
        TraceStore(tmp_path / f"{name}.jsonl", redact=redactor.json, redact_text=redactor.text)
        for name in ("general", "direct")
    ]
    stores[0].write_traces(export_request([exchange_to_span(ex)]), received=False)
    stores[1].append_traces(stores[1].traces_line(exchange_to_trace_json(ex)))
    for store in stores:
        store.close()
    general, direct = ((tmp_path / f"{n}.jsonl").read_bytes() for n in ("general", "direct"))
    assert direct == general
    assert SECRET.encode() not in direct and b"z9z9z9" not in direct
    assert stores[1].spans_received == 0


def test_store_without_a_traces_file_makes_no_line() -> None:
    ex = openai_exchange(BODY, Response(status=200, body=completion()))
    store = TraceStore(None)
    assert store.traces_line(exchange_to_trace_json(ex)) is None
    store.append_traces(None)
    assert TraceStore.beside("unused.jsonl").traces_line({}) is None


def test_session_records_the_same_lines(tmp_path: Path) -> None:
    first = openai_exchange(BODY, Response(status=200, body=completion()))
    streamed = openai_exchange(
        {**BODY, "stream": True},
        Response(status=200, events=[SSEEvent(data="[DONE]", t=0.5)]),
        trace_id="1af7651916cd43dd8448eb211c80319c",
    )
    session = Session(mode="record", cassette=None, traces=tmp_path / "t.jsonl")
    session.recorded(first)
    session.recorded(streamed, {"id": "assembled", "choices": []})
    session.store.close()
    expected = TraceStore(
        tmp_path / "e.jsonl", redact=session.redactor.json, redact_text=session.redactor.text
    )
    expected.write_traces(export_request([exchange_to_span(first)]), received=False)
    span = exchange_to_span(streamed, assembled={"id": "assembled", "choices": []})
    expected.write_traces(export_request([span]), received=False)
    expected.close()
    assert (tmp_path / "t.jsonl").read_bytes() == (tmp_path / "e.jsonl").read_bytes()
    assert session.trace_ids == {first.trace_id, streamed.trace_id}
    session.discard()


# --- the redactor's query prefilter ----------------------------------------------------


@given(st.text(st.sampled_from(list('ab=?&-_Z "\\x')), max_size=120))
def test_query_anchor_is_the_regex_search(text: str) -> None:
    expected = re.search(redact._QUERY_ANCHOR, text) is not None
    assert Redactor().might_hold_secret(text) is expected


def test_query_anchor_on_text_full_of_marks() -> None:
    crowded = "?&" * 1000
    assert not Redactor().might_hold_secret(crowded)
    assert Redactor().might_hold_secret(crowded + "?key=")
    assert (
        Redactor().text(crowded + "?api_key=abcdef") == crowded + "?api_key=[REDACTED:query-secret]"
    )


def test_json_lines_stay_valid(tmp_path: Path) -> None:
    ex = openai_exchange(BODY, Response(status=200, body=completion()))
    store = TraceStore(tmp_path / "t.jsonl", redact=Redactor().json, redact_text=Redactor().text)
    store.append_traces(store.traces_line(exchange_to_trace_json(ex)))
    store.close()
    (line,) = (tmp_path / "t.jsonl").read_text().splitlines()
    assert json.loads(line) == exchange_to_trace_json(ex)


PIECES = [
    *("sk- sk k_ rk_ AKIA ASIA AIza A E ECRET EARER ecret earer gh ghp_ github_pat_".split()),
    *('xox xapp- x eyJ J ey :// :/ ?a= & P PRIVATE KEY tok-z9z9 Zq\\"d word'.split()),
    *(" ", '"', ":", ",", "{", "\n"),
]
WITH_VALUES = Redactor({"A_TOKEN": "tok-z9z9", "B_KEY": 'Zq"d\\x', "C_SECRET": "plainsecret"})


@given(st.lists(st.sampled_from(PIECES), max_size=60).map("".join))
def test_prefilter_is_a_search_for_every_anchor(text: str) -> None:
    for redactor in (Redactor(), WITH_VALUES):
        literal = any(anchor in text for anchor in redactor._literals)
        patterns = (redact._QUERY_ANCHOR, *redact.ANCHOR_PATTERNS)
        expected = literal or any(re.search(p, text) is not None for p in patterns)
        assert redactor.might_hold_secret(text) is expected


FIELD_PIECES = [
    *("_token -token _TOKEN -Token _tokens token tOkEn refresh access auth".split()),
    *('"', "'", "\\", ":", "=", " ", "\t", "\n", ",", "{", "}", "_", "-"),
    *("abcdefgh12345678 [REDACTED:x] xyz".split()),
]


@given(st.lists(st.sampled_from(FIELD_PIECES), max_size=40).map("".join))
def test_prefilter_passes_every_text_redaction_changes(text: str) -> None:
    """The token names are looked for with what follows them: no field they name slips
    past the prefilter, while ``max_tokens`` alone does not send a body to the walk."""
    redactor = Redactor()
    if redactor.text(text) != text:
        assert redactor.might_hold_secret(text)


def test_token_counts_are_not_secret_candidates() -> None:
    usage = '{"usage":{"prompt_tokens":93,"completion_tokens":43},"max_tokens":256}'
    assert not Redactor().might_hold_secret(usage)
    assert Redactor().might_hold_secret('{"refresh_token":"1//0gabcdefghijk"}')
    assert Redactor().might_hold_secret("ACCESS-TOKEN = abcdefgh12345678")


def test_prefilter_on_text_full_of_a_key() -> None:
    for filler in ("A", "gh", "x", "J"):
        crowded = filler * 500
        assert not Redactor().might_hold_secret(crowded)
        for anchor in ("AKIA", "ghp_", "xapp-", "eyJ"):
            assert Redactor().might_hold_secret(crowded + anchor + crowded)
