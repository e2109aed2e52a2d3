"""The GenAI vocabulary is one language for writing and reading spans: an exchange written
as a span and read back through the semantic-convention attributes alone (the project's
own ``otel_replay.*`` layer removed) gives the same canonical request."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from test_spans import attrs, completion

from otel_replay import providers
from otel_replay.core import genai
from otel_replay.core.exchange import Exchange, Response
from otel_replay.providers.parts import (
    message,
    reasoning_part,
    text_part,
    tokens_part,
    tool_call_part,
    tool_response_part,
)
from otel_replay.readers import read_span
from otel_replay.spans.attributes import P
from otel_replay.spans.encode import exchange_to_span

words = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20)
tool_ids = st.sampled_from(["call_1", "call_2", "toolu_9"])
arguments = st.dictionaries(st.sampled_from(["city", "unit"]), words, max_size=2)
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@st.composite
def openai_messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if draw(st.booleans()):
        out.append({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(words)})
    out.append({"role": "user", "content": draw(words)})
    for _ in range(draw(st.integers(0, 2))):
        call_id = draw(tool_ids)
        function = {"name": "get_weather", "arguments": json.dumps(draw(arguments))}
        call = {"id": call_id, "type": "function", "function": function}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": call_id, "content": draw(words)})
    out.append({"role": "user", "content": draw(words)})
    return out


@st.composite
def openai_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"model": draw(st.sampled_from(["gpt-4o", "o3-mini"]))}
    body["messages"] = draw(openai_messages())
    if draw(st.booleans()):
        body["tools"] = [TOOL]
    if draw(st.booleans()):
        body["max_tokens"] = draw(st.integers(1, 4096))
    if draw(st.booleans()):
        body["temperature"] = draw(st.sampled_from([0.0, 0.5, 1.0]))
    return body


@st.composite
def anthropic_bodies(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": draw(words)}]
    if draw(st.booleans()):
        call_id = draw(tool_ids)
        use = {"type": "tool_use", "id": call_id, "name": "get_weather", "input": draw(arguments)}
        result = {"type": "tool_result", "tool_use_id": call_id, "content": draw(words)}
        messages += [
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
    body: dict[str, Any] = {
        "model": "claude-haiku-4-5",
        "max_tokens": draw(st.integers(1, 4096)),
        "messages": messages,
    }
    if draw(st.booleans()):
        body["system"] = draw(words)
    if draw(st.booleans()):
        body["tools"] = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    return body


def anthropic_answer(model: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 2},
    }


def semconv_only(span: Span) -> Span:
    """The span as a GenAI-aware instrumentation would have written it."""
    kept = [kv for kv in span.attributes if not kv.key.startswith(P)]
    del span.attributes[:]
    span.attributes.extend(kept)
    return span


def round_trip(provider: str, operation: str, body: dict[str, Any], answer: Any) -> Exchange:
    api = providers.get(provider)
    endpoint = api.endpoint(operation, model=body["model"])
    ex = Exchange(
        provider,
        operation,
        api.canonical(endpoint, body),
        Response(200, {"content-type": "application/json"}, body=answer),
        raw_request=body,
        trace_id="ab" * 16,
        span_id="cd" * 8,
    )
    back = read_span({}, semconv_only(exchange_to_span(ex)))
    assert back is not None and back.source == "genai-semconv"
    assert (back.provider, back.operation) == (provider, operation)
    assert back.request.known >= {"endpoint", "model", "system", "messages"}
    for component in back.request.known - {"params"}:
        assert back.request.component(component) == ex.request.component(component), component
    return back


roundtrips = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@roundtrips
@given(openai_bodies())
def test_openai_chat_exchange_span_reader_keeps_the_canonical_request(body: dict) -> None:
    back = round_trip("openai", "chat", body, completion(body["model"], "Sunny."))
    assert ("tools" in back.request.known) is ("tools" in body)
    if "max_tokens" in body:
        assert back.request.params["max_tokens"] == body["max_tokens"]
    assert back.response.body["choices"][0]["message"]["content"] == "Sunny."


@roundtrips
@given(anthropic_bodies())
def test_anthropic_messages_exchange_span_reader_keeps_the_canonical_request(body: dict) -> None:
    back = round_trip("anthropic", "messages", body, anthropic_answer(body["model"]))
    assert back.request.params["max_tokens"] == body["max_tokens"]
    assert back.response.body["content"] == [{"type": "text", "text": "Sunny."}]
    assert back.response.body["stop_reason"] == "end_turn"


def test_the_encoder_writes_the_vocabulary_the_readers_read() -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "seed": 7}
    ex = Exchange(
        "openai",
        "chat",
        providers.get("openai").canonical("/v1/chat/completions", body),
        Response(200, {}, body=completion("gpt-4o", "hello")),
    )
    span = exchange_to_span(ex)
    written = attrs(span)
    assert span.name == genai.span_name("chat", "gpt-4o") == "chat gpt-4o"
    assert written[genai.OPERATION_NAME] == genai.operation_name("chat") == "chat"
    assert written[genai.PARAM_OF_NAME["seed"].attribute] == 7
    assert genai.read_params(written) == {"seed": 7}
    assert genai.read_usage(written, genai.USAGE_OF_ATTRIBUTE) == {
        "input_tokens": 11,
        "output_tokens": 3,
    }


def test_operation_names_and_span_names() -> None:
    for operation, name in genai.OPERATION_OF_EXCHANGE.items():
        assert genai.EXCHANGE_OF_OPERATION[name] in (operation, "chat")
    assert genai.operation_name("models") == "models"
    assert genai.span_name("completions", None) == "text_completion"
    assert genai.span_name("messages", "claude-haiku-4-5") == "chat claude-haiku-4-5"


def test_params_written_from_any_alias_read_back_under_the_first() -> None:
    by_attribute = {p.attribute: p for p in genai.REQUEST_PARAMS}
    assert genai.PARAM_OF_NAME["max_completion_tokens"].attribute == "gen_ai.request.max_tokens"
    assert genai.read_params({"gen_ai.request.stop_sequences": ["END"]}) == {"stop": ["END"]}
    assert genai.read_params({"gen_ai.request.encoding_formats": ["float"]}) == {}
    assert not by_attribute["gen_ai.request.encoding_formats"].read


def test_usage_reads_deprecated_spellings_and_numbers_only() -> None:
    recorded = {
        "gen_ai.usage.prompt_tokens": 5,
        "gen_ai.usage.completion_tokens": 2.0,
        "gen_ai.usage.cache_read_input_tokens": True,
        "llm.token_count.prompt": 9,
    }
    assert genai.read_usage(recorded, genai.USAGE_OF_ATTRIBUTE) == {
        "input_tokens": 5,
        "output_tokens": 2,
    }
    assert genai.read_usage(recorded, genai.OI_USAGE_OF_ATTRIBUTE) == {"input_tokens": 9}
    assert (
        genai.usage_attribute("cache_read.input_tokens") == "gen_ai.usage.cache_read.input_tokens"
    )


def test_finish_reasons_in_semconv_terms() -> None:
    assert genai.finish_reason("tool_use") == genai.finish_reason("tool_calls") == "tool_call"
    assert genai.finish_reason("end_turn") == genai.FINISH_STOP
    assert genai.finish_reason("max_tokens") == genai.FINISH_LENGTH
    assert genai.finish_reason("pause_turn") == "pause_turn"


# --- the parts form -------------------------------------------------------------------------


def test_part_constructors_give_the_parts_form() -> None:
    assert text_part("hi") == {"type": "text", "content": "hi"}
    assert reasoning_part("hm") == {"type": "reasoning", "content": "hm"}
    assert tokens_part([1, 2]) == {"type": "tokens", "tokens": [1, 2]}
    assert tool_call_part("c", "f", '{"a": 1}') == {
        "type": "tool_call",
        "id": "c",
        "name": "f",
        "arguments": {"a": 1},
    }
    assert tool_response_part("c", "ok") == {
        "type": "tool_call_response",
        "id": "c",
        "response": "ok",
    }
    assert message(None, []) == {"role": "user", "parts": []}
    assert message("tool", [], "fn") == {"role": "tool", "parts": [], "name": "fn"}


def test_both_providers_and_the_span_readers_build_the_same_tool_result() -> None:
    openai = providers.get("openai").canonical(
        "/v1/chat/completions",
        {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": "ok"}]},
    )
    anthropic = providers.get("anthropic").canonical(
        "/v1/messages",
        {
            "model": "m",
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}],
                }
            ],
        },
    )
    from otel_replay.readers.messages import message_from_plain, norm_part

    read = message_from_plain({"role": "tool", "tool_call_id": "c", "content": "ok"})
    expected = tool_response_part("c", "ok")
    assert openai.messages[0]["parts"] == anthropic.messages[0]["parts"] == [expected]
    assert read["parts"] == [expected]
    assert norm_part({"type": "tool_call_response", "id": "c", "result": "ok"}) == expected


def test_endpoint_takes_the_model() -> None:
    for name, operation, path in (
        ("openai", "chat", "/v1/chat/completions"),
        ("anthropic", "messages", "/v1/messages"),
    ):
        api = providers.get(name)
        assert api.endpoint(operation, model="any-model") == api.endpoint(operation) == path
