"""exchange ⇄ span: the gateway's own spans carry an exchange without loss."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay import providers
from otel_replay.core.errors import TraceFormatError
from otel_replay.core.exchange import CanonicalRequest, Exchange, Response, SSEEvent
from otel_replay.providers import surfaces
from otel_replay.providers.base import OutputView, Provider
from otel_replay.readers.own import span_to_exchange
from otel_replay.spans.encode import exchange_to_span, export_request

# --- a stand-in provider, so these tests do not depend on provider internals ----------


class FakeProvider:
    """Canonicalises a body deterministically and reports a fixed output view."""

    def __init__(self, name: str, *, broken: bool = False) -> None:
        self.name = name
        self.broken = broken

    def canonical(self, path: str, body: Any) -> CanonicalRequest:
        body = body if isinstance(body, dict) else {}
        messages = body.get("messages") or []
        return CanonicalRequest(
            endpoint=path,
            model=body.get("model"),
            system=None,
            messages=[
                {"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]}
                for m in messages
            ],
            tools=body.get("tools"),
            params={
                k: v for k, v in body.items() if k not in ("model", "messages", "tools", "stream")
            },
        )

    def operation(self, path: str) -> str:
        return "chat"

    def body_from_stream(self, operation: str, events: list[SSEEvent]) -> Any:
        if self.broken:
            raise RuntimeError("provider bug")
        return {"id": "chatcmpl-stream", "model": "gpt-4o-2024-08-06", "choices": []}

    def view_from_response(self, operation: str, body: Any) -> OutputView:
        if self.broken:
            raise RuntimeError("provider bug")
        return OutputView(
            messages=[
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": "hi"}],
                    "finish_reason": "stop",
                }
            ],
            response_id=body.get("id"),
            model=body.get("model"),
            usage={"input_tokens": 11, "output_tokens": 3},
        )


@contextmanager
def fake_providers(*, broken: bool = False) -> Iterator[None]:
    saved = dict(surfaces._LOADED)
    surfaces._LOADED.clear()
    surfaces._LOADED.update(
        {n: cast(Provider, FakeProvider(n, broken=broken)) for n in ("openai", "anthropic")}
    )
    try:
        yield
    finally:
        surfaces._LOADED.clear()
        surfaces._LOADED.update(saved)


# --- strategies: realistic OpenAI chat calls -----------------------------------------

words = st.text(st.characters(codec="utf-8"), max_size=30)
hex_ids = st.integers(min_value=1).map(lambda n: f"{n % (1 << 64):016x}")
trace_ids = st.binary(min_size=16, max_size=16).filter(any).map(bytes.hex)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant"]), "content": words}
    ),
    min_size=1,
    max_size=4,
)
models = st.sampled_from(["gpt-4o", "gpt-4o-mini", "o3-mini"])


@st.composite
def chat_bodies(draw: st.DrawFn, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": draw(models), "messages": draw(messages)}
    if draw(st.booleans()):
        body["temperature"] = draw(st.floats(0, 2, allow_nan=False))
    if draw(st.booleans()):
        body["max_tokens"] = draw(st.integers(1, 4096))
    if draw(st.booleans()):
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ]
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def chunk_events(model: str, text: str, times: list[float]) -> list[SSEEvent]:
    events = [
        SSEEvent(
            data=json.dumps(
                {
                    "id": "chatcmpl-abc123",
                    "model": model,
                    "choices": [{"index": 0, "delta": {"content": piece}}],
                },
                separators=(",", ":"),
            ),
            t=t,
        )
        for piece, t in zip(text.split() or [text], times, strict=False)
    ]
    return [*events, SSEEvent(data="[DONE]", t=(times[-1] if times else 0.0) + 0.001)]


@st.composite
def responses(draw: st.DrawFn, model: str, stream: bool) -> Response:
    headers = draw(
        st.dictionaries(
            st.sampled_from(
                ["content-type", "x-request-id", "retry-after", "x-ratelimit-remaining-tokens"]
            ),
            st.text("abcdef0123456789-", max_size=12),
            max_size=3,
        )
    )
    kind = draw(st.sampled_from(["ok", "ok", "error", "text", "timeout", "reset", "mid"]))
    text = draw(words)
    if kind == "ok" and not stream:
        return Response(200, headers, body=completion(model, text))
    times = sorted(draw(st.lists(st.floats(0, 30, allow_nan=False), min_size=1, max_size=5)))
    if kind == "ok":
        return Response(200, headers, events=chunk_events(model, text, times))
    if kind == "error":
        status = draw(st.sampled_from([400, 401, 429, 500, 503]))
        return Response(status, headers, body={"error": {"message": text, "type": "x"}})
    if kind == "text":
        return Response(502, headers, body=f"<html>{text}</html>")
    if kind == "mid":
        return Response(
            200, headers, events=chunk_events(model, text, times)[:-1], fault="reset_mid_stream"
        )
    return Response(0, {}, fault=kind)


@st.composite
def exchanges(draw: st.DrawFn) -> Exchange:
    stream = draw(st.booleans())
    body = draw(chat_bodies(stream))
    with_body = draw(st.booleans())
    if with_body:
        request = FakeProvider("openai").canonical("/v1/chat/completions", body)
    else:  # e.g. an exchange rebuilt from a trace without the exact body
        request = CanonicalRequest(
            "/v1/chat/completions",
            model=body["model"],
            messages=[{"role": "user", "parts": []}],
            params={"temperature": 0.5},
            known=frozenset({"endpoint", "model", "messages"}),
        )
    start = draw(st.integers(1, 2**62))
    return Exchange(
        provider="openai",
        operation="chat",
        request=request,
        response=draw(responses(body["model"], stream)),
        raw_request=body if with_body else None,
        stream=stream,
        start_ns=start,
        end_ns=start + draw(st.integers(0, 10**10)),
        trace_id=draw(trace_ids),
        span_id=draw(hex_ids),
        parent_span_id=draw(st.none() | hex_ids),
        source=draw(st.sampled_from(["otel-replay", "openinference"])),
        provenance=draw(st.none() | provenances),
    )


provenances = st.fixed_dictionaries(
    {
        "call": st.integers(1, 50),
        "origin": st.sampled_from(["replayed", "live"]),
        "model": st.none() | st.sampled_from(["gpt-4o-mini", "claude-haiku-4-5"]),
    }
)
"""A forked run's interaction (``session.fork``)."""


def attrs(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        if kind == "array_value":
            out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in kv.value.array_value.values]
        else:
            out[kv.key] = getattr(kv.value, kind)
    return out


# --- properties ----------------------------------------------------------------------

fast = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(exchanges(), st.booleans())
def test_exchange_span_exchange_is_lossless(ex: Exchange, replayed: bool) -> None:
    with fake_providers():
        span = exchange_to_span(ex, replayed=replayed)
        wire = Span.FromString(span.SerializeToString())
        back = span_to_exchange(wire)
    assert back == ex
    assert attrs(wire)["otel_replay.replayed"] is replayed


@fast
@given(exchanges())
def test_semconv_attributes(ex: Exchange) -> None:
    with fake_providers():
        span = exchange_to_span(ex)
    a = attrs(span)
    assert span.name == f"chat {ex.request.model}"
    assert span.kind == Span.SPAN_KIND_CLIENT
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.request.model"] == ex.request.model
    assert json.loads(a["gen_ai.input.messages"]) == ex.request.messages
    for name in ("temperature", "max_tokens"):
        if name in ex.request.params:
            assert a[f"gen_ai.request.{name}"] == ex.request.params[name]
    failed = ex.response.status >= 400 or ex.response.fault is not None
    assert (span.status.code == Status.STATUS_CODE_ERROR) is failed
    assert ("error.type" in a) is failed
    if ex.response.status:
        assert a["http.response.status_code"] == ex.response.status
    if not failed:
        assert a["gen_ai.response.finish_reasons"] == ["stop"]
        assert a["gen_ai.usage.input_tokens"] == 11
        assert json.loads(a["gen_ai.output.messages"])[0]["role"] == "assistant"
    assert ("otel_replay.request.body" in a) is (ex.raw_request is not None)


@settings(max_examples=25, deadline=None)
@given(exchanges())
def test_provider_failure_still_writes_exact_body(ex: Exchange) -> None:
    with fake_providers(broken=True):
        span = exchange_to_span(ex)
        back = span_to_exchange(span)
    assert "gen_ai.output.messages" not in attrs(span)
    assert back is not None and back.response == ex.response


# --- examples ------------------------------------------------------------------------


def simple(**kw: Any) -> Exchange:
    fields: dict[str, Any] = {
        "provider": "openai",
        "operation": "embeddings",
        "request": CanonicalRequest(
            "/v1/embeddings",
            model="text-embedding-3-small",
            params={"input": "hi", "encoding_format": "float"},
        ),
        "response": Response(200, body={"data": []}),
        "raw_request": {"model": "text-embedding-3-small", "input": "hi"},
    }
    fields.update(kw)
    return Exchange(**fields)


def test_span_name_ids_and_server_attributes() -> None:
    with fake_providers():
        span = exchange_to_span(simple(), server_address="api.openai.com", server_port=443)
    a = attrs(span)
    assert span.name == "embeddings text-embedding-3-small"
    assert a["gen_ai.operation.name"] == "embeddings"
    assert a["gen_ai.request.encoding_formats"] == ["float"]
    assert (a["server.address"], a["server.port"]) == ("api.openai.com", 443)
    assert len(span.trace_id) == 16 and any(span.trace_id)
    assert len(span.span_id) == 8 and any(span.span_id)
    assert span.parent_span_id == b""


def test_completions_operation_name() -> None:
    ex = simple(
        operation="completions",
        request=CanonicalRequest("/v1/completions", model="gpt-3.5-turbo-instruct"),
    )
    with fake_providers():
        span = exchange_to_span(ex)
    assert span.name == "text_completion gpt-3.5-turbo-instruct"


def test_other_spans_are_not_ours() -> None:
    span = Span(name="chat gpt-4o", trace_id=b"\1" * 16, span_id=b"\2" * 8)
    kv = span.attributes.add()
    kv.key, kv.value.string_value = "gen_ai.operation.name", "chat"
    assert span_to_exchange(span) is None


def test_corrupt_span_names_the_span() -> None:
    with fake_providers():
        span = exchange_to_span(simple(span_id="00000000000000ab"))
    for kv in span.attributes:
        if kv.key == "otel_replay.response.headers":
            kv.value.string_value = "{not json"
    with pytest.raises(TraceFormatError, match="span 00000000000000ab"):
        span_to_exchange(span)


def test_unknown_provider_keeps_endpoint_and_model() -> None:
    ex = simple(provider="acme")
    span = exchange_to_span(ex)
    back = span_to_exchange(span)
    assert back is not None
    assert back.request.endpoint == "/v1/embeddings"
    assert back.request.model == "text-embedding-3-small"
    assert back.request.known == frozenset({"endpoint", "model"})
    assert back.raw_request == ex.raw_request and back.response == ex.response


def test_export_request_wraps_spans() -> None:
    with fake_providers():
        spans = [exchange_to_span(simple()), exchange_to_span(simple())]
    req = export_request(spans, service_name="agent-under-test")
    (rs,) = req.resource_spans
    assert {kv.key: kv.value.string_value for kv in rs.resource.attributes} == {
        "service.name": "agent-under-test"
    }
    (ss,) = rs.scope_spans
    assert ss.scope.name == "otel-replay" and ss.scope.version
    assert list(ss.spans) == spans


def test_real_openai_provider_round_trip() -> None:
    pytest.importorskip("otel_replay.providers.openai")
    pytest.importorskip("otel_replay.providers.anthropic")
    body = {
        "model": "gpt-4o",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "temperature": 0.2,
    }
    provider = providers.get("openai")
    ex = Exchange(
        "openai",
        "chat",
        provider.canonical("/v1/chat/completions", body),
        Response(
            200,
            {"content-type": "application/json"},
            body=completion("gpt-4o-2024-08-06", "Hello!"),
        ),
        raw_request=body,
        trace_id="ab" * 16,
        span_id="cd" * 8,
    )
    span = exchange_to_span(ex)
    a = attrs(span)
    assert a["gen_ai.response.id"] == "chatcmpl-abc123"
    assert a["gen_ai.response.model"] == "gpt-4o-2024-08-06"
    assert a["gen_ai.usage.input_tokens"] == 11 and a["gen_ai.usage.output_tokens"] == 3
    assert "Hello!" in a["gen_ai.output.messages"]
    assert "Be brief." in a["gen_ai.system_instructions"]
    assert span_to_exchange(span) == ex


@settings(max_examples=30, deadline=None)
@given(exchanges())
def test_lossless_with_the_real_openai_provider(ex: Exchange) -> None:
    pytest.importorskip("otel_replay.providers.openai")
    pytest.importorskip("otel_replay.providers.anthropic")
    if ex.raw_request is not None:
        ex.request = providers.get("openai").canonical(ex.request.endpoint, ex.raw_request)
    span = exchange_to_span(ex)
    assert span_to_exchange(Span.FromString(span.SerializeToString())) == ex
