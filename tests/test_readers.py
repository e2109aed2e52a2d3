"""Span readers against real third-party instrumentation and hand-built deprecated forms.

Each real test runs the weather agent on the official SDK against the stub upstream with
an instrumentation on, exports the spans as OTLP JSON lines, builds a cassette from the
file and checks every component the trace recorded against the provider's own reading of
the body the stub actually received.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from third_party_agents import (
    FINAL_TEXT,
    OPENAI_TOOLS,
    QUESTION,
    SYSTEM,
    TOOL_RESULT,
    AgentResult,
    instrumentor,
    run_anthropic_agent,
    run_openai_agent,
    traced,
)

from otel_replay import providers
from otel_replay.core.exchange import Exchange
from otel_replay.otlp.attributes import dict_to_attributes, python_to_any_value
from otel_replay.pipeline.build import build
from otel_replay.readers import read_exchanges, read_span
from otel_replay.readers.census import Census
from otel_replay.testing.stub import StubUpstream

TRACE = "0af7651916cd43dd8448eb211c80319c"


# --- helpers ------------------------------------------------------------------------------


def response_view(ex: Exchange) -> Any:
    provider = providers.get(ex.provider)
    body = ex.response.body
    if ex.response.events is not None:
        body = provider.body_from_stream(ex.operation, ex.response.events)
    return provider.view_from_response(ex.operation, body)


def assert_matches_stub(
    interactions: list[Exchange], stub: StubUpstream, result: AgentResult, source: str
) -> None:
    """The cassette holds one interaction per model call, equivalent to what was sent
    and what the stub answered."""
    sent = [r for r in stub.received if r.method == "POST"]
    assert len(interactions) == len(sent) == 2
    for ex, request in zip(interactions, sent, strict=True):
        assert ex.source == source
        assert {"endpoint", "model", "system", "messages"} <= ex.request.known
        canonical = providers.get(ex.provider).canonical(request.path, request.body)
        for component in ex.request.known:
            assert ex.request.component(component) == canonical.component(component), component
    first, second = (response_view(ex).messages[0] for ex in interactions)
    calls = [p for p in first["parts"] if p["type"] == "tool_call"]
    assert [(c["id"], c["name"], c["arguments"]) for c in calls] == result.tool_calls
    assert result.tool_calls[0][1:] == ("get_weather", {"city": QUESTION})
    assert "".join(p["content"] for p in second["parts"] if p["type"] == "text") == FINAL_TEXT
    assert result.final_text == FINAL_TEXT


def run_agent(tmp_path: Path, stub: StubUpstream, names: list[str], provider: str, stream: bool):
    with traced(tmp_path, [instrumentor(n) for n in names]):
        if provider == "openai":
            result = run_openai_agent(stub.openai_url, stream=stream)
        else:
            result = run_anthropic_agent(stub.anthropic_url, stream=stream)
    return result, build([tmp_path]).interactions


# --- real instrumentation -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_openinference_openai_exact_bodies(tmp_path, stub_thread, stream):
    result, interactions = run_agent(
        tmp_path, stub_thread, ["openinference-openai"], "openai", stream
    )
    assert_matches_stub(interactions, stub_thread, result, "openinference")
    for ex, request in zip(interactions, stub_thread.received, strict=True):
        assert ex.raw_request == request.body
        assert ex.request.known == frozenset(
            {"endpoint", "model", "system", "messages", "tools", "params"}
        )
        assert ex.stream is stream and (ex.response.events is not None) is stream


def test_openllmetry_openai_semconv(tmp_path, stub_thread):
    result, interactions = run_agent(tmp_path, stub_thread, ["openllmetry-openai"], "openai", False)
    assert_matches_stub(interactions, stub_thread, result, "genai-semconv")
    assert all("tools" in ex.request.known for ex in interactions)
    parameters = OPENAI_TOOLS[0]["function"]["parameters"]
    assert interactions[0].request.tools[0]["parameters"] == parameters
    assert all(ex.raw_request is None and not ex.stream for ex in interactions)


def test_openllmetry_openai_streamed(tmp_path, stub_thread):
    """The request side is exact and the answer replays as a stream. (This release of the
    instrumentation records each streamed delta twice, so the rebuilt text repeats it.)"""
    _result, interactions = run_agent(tmp_path, stub_thread, ["openllmetry-openai"], "openai", True)
    assert len(interactions) == 2
    for ex, request in zip(interactions, stub_thread.received, strict=True):
        canonical = providers.get("openai").canonical(request.path, request.body)
        for component in ex.request.known:
            assert ex.request.component(component) == canonical.component(component)
        assert ex.stream and ex.response.events
    [message] = response_view(interactions[1]).messages
    assert "stub" in message["parts"][0]["content"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_openllmetry_anthropic_semconv(tmp_path, stub_thread, stream):
    result, interactions = run_agent(
        tmp_path, stub_thread, ["openllmetry-anthropic"], "anthropic", stream
    )
    assert_matches_stub(interactions, stub_thread, result, "genai-semconv")
    assert interactions[0].request.system == [{"type": "text", "content": SYSTEM}]
    assert interactions[0].operation == "messages"


def test_official_openai_v2_span_attributes(tmp_path, stub_thread, monkeypatch):
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    result, interactions = run_agent(tmp_path, stub_thread, ["otel-openai-v2"], "openai", True)
    assert_matches_stub(interactions, stub_thread, result, "genai-semconv")
    # This instrumentation records neither tool definitions nor the stream flag.
    assert "tools" not in interactions[0].request.known


def test_official_openai_v2_log_events(tmp_path, stub_thread, monkeypatch):
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    result, interactions = run_agent(tmp_path, stub_thread, ["otel-openai-v2"], "openai", False)
    assert (tmp_path / "logs.jsonl").exists()
    assert "gen_ai.input.messages" not in (tmp_path / "traces.jsonl").read_text()
    assert_matches_stub(interactions, stub_thread, result, "genai-semconv")


def test_stacked_instrumentations_become_one_interaction_each(tmp_path, stub_thread):
    result, interactions = run_agent(
        tmp_path, stub_thread, ["openllmetry-openai", "openinference-openai"], "openai", False
    )
    spans = (tmp_path / "traces.jsonl").read_text().count('"spanId"')
    assert spans >= 4
    assert_matches_stub(interactions, stub_thread, result, "openinference")


# --- hand-built spans: deprecated forms -----------------------------------------------------


def make_span(
    attrs: dict[str, Any],
    *,
    name: str = "openai.chat",
    span_id: str = "1" * 16,
    parent: str = "",
    start: int = 1_000,
    end: int = 2_000,
    events=(),
) -> Span:
    span = Span(
        trace_id=bytes.fromhex(TRACE),
        span_id=bytes.fromhex(span_id),
        name=name,
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=start,
        end_time_unix_nano=end,
        attributes=dict_to_attributes(attrs),
    )
    if parent:
        span.parent_span_id = bytes.fromhex(parent)
    for event_name, event_attrs in events:
        event = span.events.add(name=event_name, time_unix_nano=start)
        event.attributes.extend(dict_to_attributes(event_attrs))
    return span


def traces(*spans: Span, service: str = "agent") -> ExportTraceServiceRequest:
    resource = Resource(attributes=dict_to_attributes({"service.name": service}))
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=spans)])]
    )


OPENAI_BODY = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": TOOL_RESULT},
    ],
    "tools": OPENAI_TOOLS,
}


def assert_openai_request(ex: Exchange, *, tools: bool = True) -> None:
    canonical = providers.get("openai").canonical("/v1/chat/completions", OPENAI_BODY)
    assert ex.request.known >= {"endpoint", "model", "system", "messages"}
    assert ("tools" in ex.request.known) is tools
    for component in ex.request.known - {"params"}:
        assert ex.request.component(component) == canonical.component(component), component
    message = response_view(ex).messages[0]
    assert message["parts"] == [{"type": "text", "content": FINAL_TEXT}]


def test_openllmetry_flattened_prompt_and_completion_attributes():
    attrs = {
        "gen_ai.system": "openai",
        "llm.request.type": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": SYSTEM,
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": QUESTION,
        "gen_ai.prompt.2.role": "assistant",
        "gen_ai.prompt.2.tool_calls.0.id": "call_1",
        "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
        "gen_ai.prompt.2.tool_calls.0.arguments": '{"city": "Paris"}',
        "gen_ai.prompt.3.role": "tool",
        "gen_ai.prompt.3.tool_call_id": "call_1",
        "gen_ai.prompt.3.content": TOOL_RESULT,
        "llm.request.functions.0.name": "get_weather",
        "llm.request.functions.0.description": "Current weather for a city",
        "llm.request.functions.0.parameters": json.dumps(OPENAI_TOOLS[0]["function"]["parameters"]),
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": FINAL_TEXT,
        "gen_ai.completion.0.finish_reason": "stop",
        "gen_ai.usage.prompt_tokens": 40,
        "gen_ai.usage.completion_tokens": 6,
    }
    ex = read_span({}, make_span(attrs))
    assert ex is not None and ex.source == "openllmetry"
    assert_openai_request(ex)
    assert ex.response.body["usage"]["prompt_tokens"] == 40


def test_openllmetry_anthropic_content_blocks_as_json_text():
    attrs = {
        "gen_ai.system": "Anthropic",
        "gen_ai.request.model": "claude-haiku-4-5",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": QUESTION,
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.content": json.dumps(
            [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "P"}}]
        ),
        "gen_ai.prompt.2.role": "user",
        "gen_ai.prompt.2.content": json.dumps(
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": TOOL_RESULT}]
        ),
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": FINAL_TEXT,
        "gen_ai.completion.0.finish_reason": "end_turn",
    }
    ex = read_span({}, make_span(attrs, name="anthropic.chat"))
    assert ex is not None and ex.operation == "messages"
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "P"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": TOOL_RESULT}
                ],
            },
        ],
    }
    canonical = providers.get("anthropic").canonical("/v1/messages", body)
    assert ex.request.messages == canonical.messages
    assert ex.response.body["content"] == [{"type": "text", "text": FINAL_TEXT}]
    assert ex.response.body["stop_reason"] == "end_turn"


_MESSAGE_EVENTS = [
    ("gen_ai.system.message", {"content": SYSTEM}),
    ("gen_ai.user.message", {"content": QUESTION}),
    (
        "gen_ai.assistant.message",
        {
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ]
        },
    ),
    ("gen_ai.tool.message", {"content": TOOL_RESULT, "id": "call_1"}),
    (
        "gen_ai.choice",
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": FINAL_TEXT},
        },
    ),
]
_BASE = {
    "gen_ai.system": "openai",
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o-mini",
}


def test_deprecated_message_events_on_the_span():
    events = [(name, {"gen_ai.system": "openai", **body}) for name, body in _MESSAGE_EVENTS]
    ex = read_span({}, make_span(_BASE, name="chat gpt-4o-mini", events=events))
    assert ex is not None and ex.source == "genai-semconv"
    assert_openai_request(ex, tools=False)


def test_deprecated_message_events_as_log_records():
    span = make_span(_BASE, name="chat gpt-4o-mini")
    records = []
    for name, body in _MESSAGE_EVENTS:
        record = LogRecord(
            time_unix_nano=1_500,
            trace_id=bytes.fromhex(TRACE),
            span_id=span.span_id,
            attributes=[KeyValue(key="gen_ai.system", value=python_to_any_value("openai"))],
            body=python_to_any_value(body),
        )
        record.event_name = name
        records.append(record)
    logs = ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=records)])]
    )
    [ex] = read_exchanges([traces(span)], [logs])
    assert_openai_request(ex, tools=False)


def test_openinference_message_attributes_without_bodies():
    attrs = {
        "openinference.span.kind": "LLM",
        "llm.provider": "openai",
        "llm.model_name": "gpt-4o-mini",
        "llm.invocation_parameters": json.dumps({"model": "gpt-4o-mini"}),
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": SYSTEM,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.contents.0.message_content.type": "text",
        "llm.input_messages.1.message.contents.0.message_content.text": QUESTION,
        "llm.input_messages.2.message.role": "assistant",
        "llm.input_messages.2.message.tool_calls.0.tool_call.id": "call_1",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.name": "get_weather",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.arguments": (
            '{"city": "Paris"}'
        ),
        "llm.input_messages.3.message.role": "tool",
        "llm.input_messages.3.message.tool_call_id": "call_1",
        "llm.input_messages.3.message.content": TOOL_RESULT,
        "llm.tools.0.tool.json_schema": json.dumps(OPENAI_TOOLS[0]),
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": FINAL_TEXT,
        "input.value": "not json",
        "input.mime_type": "text/plain",
    }
    ex = read_span({}, make_span(attrs, name="ChatCompletion"))
    assert ex is not None and ex.source == "openinference" and ex.raw_request is None
    assert_openai_request(ex)
    assert "params" not in ex.request.known and ex.request.params == {}  # compared by name


def test_claude_code_raw_body_log_events():
    request = {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "stream": True,
        "system": [{"type": "text", "text": SYSTEM}],
        "messages": [{"role": "user", "content": QUESTION}],
    }
    response = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": FINAL_TEXT}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 6},
    }
    records = [
        LogRecord(
            time_unix_nano=t,
            body=python_to_any_value(f"claude_code.{name}"),
            attributes=dict_to_attributes(
                {"event.name": name, "session.id": "s1", "body": json.dumps(body)}
            ),
        )
        for t, name, body in (
            (10, "api_request_body", request),
            (20, "api_response_body", response),
            (30, "api_request_body", {"truncated": '{"model": "cla'}),
        )
    ]
    logs = ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=records)])]
    )
    [ex] = read_exchanges([], [logs])
    assert ex.source == "claude-code" and ex.provider == "anthropic" and ex.stream
    assert ex.raw_request == request
    assert ex.request == providers.get("anthropic").canonical("/v1/messages", request)
    assert (
        providers.get("anthropic").body_from_stream("messages", ex.response.events)["content"]
        == response["content"]
    )


def test_spans_that_are_not_model_calls_with_content_are_ignored():
    http = make_span({"http.request.method": "POST", "url.full": "https://x/v1/chat/completions"})
    no_content = make_span({**_BASE, "gen_ai.usage.input_tokens": 3}, span_id="2" * 16)
    agent = make_span({"gen_ai.operation.name": "invoke_agent", "gen_ai.system": "openai"})
    assert list(read_exchanges([traces(http, no_content, agent)])) == []


def test_a_framework_step_of_a_model_call_kind_is_not_counted_as_a_call():
    """LlamaIndex's ``OpenAI._prepare_chat_with_tools``: an OpenInference LLM span holding
    the arguments it prepared, with neither messages nor an answer, is no model call;
    one that records its request's messages (a stream whose span ended before it was
    read), or that failed, still is."""
    llm = {"openinference.span.kind": "LLM", "llm.provider": "openai", "llm.model_name": "m"}
    step = {
        **llm,
        "input.value": json.dumps({"tools": ["<FunctionTool object>"], "user_msg": None}),
        "input.mime_type": "application/json",
        "output.value": json.dumps({"messages": [], "tool_choice": "auto"}),
        "output.mime_type": "application/json",
    }
    unread = {**step, "llm.input_messages.0.message.role": "user"}
    spans = [
        make_span(step, name="OpenAI._prepare_chat_with_tools", span_id="1" * 16),
        make_span(unread, name="Response", span_id="2" * 16),
    ]
    failed = make_span(step, name="OpenAI.chat", span_id="3" * 16)
    failed.status.code = failed.status.STATUS_CODE_ERROR
    census = Census()
    assert list(read_exchanges([traces(*spans, failed)], census=census)) == []
    (tally,) = census.sources.values()
    assert (tally.calls, tally.not_replayable) == (2, 2)
    assert sum(census.others.values()) == 1
