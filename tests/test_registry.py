"""The reader registry: which reader a span's attribute groups select, how fidelity ranks
the spans of one call, and the operation read the same way for every reader."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from test_readers import FINAL_TEXT, QUESTION, make_span, traces

from otel_replay.core.exchange import CanonicalRequest, Exchange, Response
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.readers import read_exchanges
from otel_replay.readers.operation import operation_of
from otel_replay.readers.registry import READERS, Fidelity, Reader, read_call
from otel_replay.readers.view import Event
from otel_replay.readers.window import keep
from otel_replay.spans.encode import exchange_to_span

CHAT_BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}]}
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": FINAL_TEXT},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}
SEMCONV = {
    "gen_ai.provider.name": "openai",
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.input.messages": json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    ),
    "gen_ai.output.messages": json.dumps(
        [{"role": "assistant", "parts": [{"type": "text", "content": FINAL_TEXT}]}]
    ),
}
OI_BODY = {
    "openinference.span.kind": "LLM",
    "llm.provider": "openai",
    "input.value": json.dumps(CHAT_BODY),
    "input.mime_type": "application/json",
    "output.value": json.dumps(ANSWER),
    "output.mime_type": "application/json",
}
OI_MESSAGES = {
    "openinference.span.kind": "LLM",
    "llm.provider": "openai",
    "llm.model_name": "gpt-4o-mini",
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": QUESTION,
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": FINAL_TEXT,
}


def own_span() -> Span:
    ex = Exchange(
        "openai",
        "chat",
        CanonicalRequest("/v1/chat/completions", model="gpt-4o-mini"),
        Response(200, {}, body=ANSWER),
        raw_request=CHAT_BODY,
        trace_id="ab" * 16,
        span_id="cd" * 8,
    )
    return exchange_to_span(ex)


def selected(span: Span) -> tuple[str, Fidelity] | None:
    attrs = attributes_to_dict(span.attributes)
    reading = read_call(span, attrs)
    if reading is None:
        return None
    [reader] = [r for r in READERS if r.fidelity == reading.fidelity and r.applies(attrs)][:1]
    return reader.name, reading.fidelity


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        (own_span(), ("otel-replay", Fidelity.WIRE)),
        (make_span(OI_BODY, name="ChatCompletion"), ("openinference-body", Fidelity.BODY)),
        (
            make_span(OI_MESSAGES, name="ChatCompletion"),
            ("openinference-messages", Fidelity.MESSAGES),
        ),
        (make_span(SEMCONV, name="chat gpt-4o-mini"), ("genai-semconv", Fidelity.MESSAGES)),
    ],
    ids=["own", "openinference-body", "openinference-messages", "semconv"],
)
def test_the_attribute_groups_a_span_carries_select_its_reader(
    span: Span, expected: tuple[str, Fidelity]
) -> None:
    assert selected(span) == expected


def test_a_span_with_no_group_of_any_reader_is_not_read() -> None:
    span = make_span({"http.request.method": "POST", "llm.provider": "openai"})
    assert read_call(span, attributes_to_dict(span.attributes)) is None


def test_groups_are_names_or_flattened_prefixes_and_all_are_needed() -> None:
    reader = Reader("r", (("a", "b"), ("list.",)), Fidelity.MESSAGES, lambda s, a, e: None)
    assert reader.applies({"b": 1, "list.0.x": 2})
    assert not reader.applies({"b": 1, "list": 2})
    assert not reader.applies({"list.0": 1})


def test_a_new_reader_is_one_row_and_the_more_faithful_one_wins() -> None:
    span = make_span({**SEMCONV, "framework.request": json.dumps(CHAT_BODY)})
    seen: list[str] = []

    def framework(span: Span, attrs: Mapping[str, Any], events: Sequence[Event]) -> Exchange:
        seen.append(str(attrs["framework.request"]))
        return Exchange(
            "openai",
            "chat",
            CanonicalRequest("/v1/chat/completions", model="gpt-4o-mini"),
            Response(200),
            raw_request=json.loads(str(attrs["framework.request"])),
            source="framework",
        )

    row = Reader("framework", (("framework.request",),), Fidelity.BODY, framework)
    reading = read_call(span, attributes_to_dict(span.attributes), readers=(*READERS, row))
    assert reading is not None and reading.exchange.source == "framework"
    assert reading.fidelity is Fidelity.BODY and seen
    lower = Reader("framework", (("framework.request",),), Fidelity.MESSAGES, framework)
    reading = read_call(span, attributes_to_dict(span.attributes), readers=(lower, *READERS))
    assert reading is not None and reading.exchange.source == "framework"  # first among equals


def test_a_reader_that_reads_nothing_passes_to_the_next() -> None:
    span = make_span({**SEMCONV, "openinference.span.kind": "LLM"})  # no llm.provider
    reading = read_call(span, attributes_to_dict(span.attributes))
    assert reading is not None and reading.exchange.source == "genai-semconv"


# --- fidelity when several spans describe one call -----------------------------------------


def exchange(source: str, span_id: str, known: frozenset[str]) -> Exchange:
    return Exchange(
        "openai",
        "chat",
        CanonicalRequest("/v1/chat/completions", model="m", known=known),
        Response(200),
        span_id=span_id,
        source=source,
    )


def test_keep_takes_the_declared_fidelity_then_the_most_components() -> None:
    full = frozenset({"endpoint", "model", "messages", "tools"})
    view = exchange("genai-semconv", "1" * 16, full)
    body = exchange("framework", "2" * 16, frozenset({"endpoint", "model"}))
    assert keep([view, body], [Fidelity.MESSAGES, Fidelity.BODY]) == [body]
    assert keep([body, view], [Fidelity.MESSAGES, Fidelity.MESSAGES]) == [view]
    same = exchange("other", "3" * 16, full)
    assert keep([view, same], [Fidelity.MESSAGES, Fidelity.MESSAGES]) == [view]


def test_every_wire_attempt_is_kept_whatever_its_source_says() -> None:
    known = frozenset({"endpoint"})
    first, retry = exchange("x", "1" * 16, known), exchange("y", "2" * 16, known)
    retry.start_ns = 5
    assert keep([retry, first], [Fidelity.WIRE, Fidelity.WIRE]) == [first, retry]
    assert keep([retry, first], [Fidelity.WIRE, Fidelity.BODY]) == [retry]


def test_without_a_declared_fidelity_an_exchange_shows_its_own() -> None:
    known = frozenset({"endpoint"})
    assert Fidelity.of(exchange("otel-replay", "1" * 16, known)) is Fidelity.WIRE
    with_body = exchange("openinference", "1" * 16, known)
    with_body.raw_request = {}
    assert Fidelity.of(with_body) is Fidelity.BODY
    assert Fidelity.of(exchange("genai-semconv", "1" * 16, known)) is Fidelity.MESSAGES


def test_the_exact_body_span_of_a_call_outranks_its_semconv_span() -> None:
    semconv = make_span(SEMCONV, name="chat gpt-4o-mini", span_id="1" * 16, parent="2" * 16)
    exact = make_span(OI_BODY, name="ChatCompletion", span_id="2" * 16)
    [ex] = read_exchanges([traces(semconv, exact)])
    assert ex.source == "openinference" and ex.raw_request == CHAT_BODY


# --- the operation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "attrs", "name", "body", "expected"),
    [
        ("openai", {"gen_ai.operation.name": "chat"}, "chat gpt-4o", None, "chat"),
        ("openai", {"gen_ai.operation.name": "chat"}, "openai.response", None, "responses"),
        ("anthropic", {"gen_ai.operation.name": "chat"}, "chat claude", None, "messages"),
        ("openai", {"gen_ai.operation.name": "text_completion"}, "x", None, "completions"),
        ("openai", {"llm.request.type": "embedding"}, "x", None, "embeddings"),
        ("openai", {"gen_ai.prompt.0.role": "user"}, "openai.chat", None, "chat"),
        ("openai", {"gen_ai.operation.name": "invoke_agent"}, "chat", None, None),
        ("openai", {"gen_ai.request.model": "m"}, "chat gpt-4o", None, None),
        ("openai", {"openinference.span.kind": "LLM"}, "Embeddings", None, "embeddings"),
        ("openai", {"openinference.span.kind": "LLM"}, "Response", None, "responses"),
        ("openai", {"openinference.span.kind": "LLM"}, "Completions", None, "completions"),
        ("openai", {"openinference.span.kind": "EMBEDDING"}, "x", None, "embeddings"),
        ("openai", {"openinference.span.kind": "LLM"}, "x", {"messages": []}, "chat"),
        (
            "openai",
            {"openinference.span.kind": "LLM", "llm.input_messages.0.x": 1},
            "x",
            None,
            "chat",
        ),
        ("openai", {"openinference.span.kind": "LLM"}, "x", None, None),
        ("anthropic", {"openinference.span.kind": "LLM"}, "Completions", None, "messages"),
        ("openai", {"openinference.span.kind": "CHAIN"}, "ChatCompletion", None, None),
    ],
)
def test_operation_of(
    provider: str, attrs: dict[str, Any], name: str, body: Any, expected: str | None
) -> None:
    assert operation_of(provider, attrs, name, body) == expected
