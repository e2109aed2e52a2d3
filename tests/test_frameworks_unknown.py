"""A framework no test names: an agent on the official ``openai`` SDK whose own
instrumentation records each model call the way a framework does — OpenInference's
attribute helpers, or the OpenTelemetry GenAI utilities' ``TelemetryHandler`` — with the
framework's client settings beside the request's parameters (a context window, model
flags, a system-role name, ``num_output: -1``, a base URL, a timeout) and nulls for what
it left unset. The trace builds a cassette that the same agent replays strictly: what the
provider's API does not take is kept as context, never matched."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from typing import Any

import openai
import pytest
from framework_agents import (
    MODEL,
    QUESTIONS,
    SYSTEM,
    Outcome,
    instrumented,
    round_trip,
    semantic,
    weather,
)
from openinference.instrumentation import (
    get_input_attributes,
    get_llm_attributes,
    get_output_attributes,
    get_span_kind_attributes,
)
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import (
    FunctionToolDefinition,
    InputMessage,
    OutputMessage,
    Text,
    ToolCallRequest,
    ToolCallResponse,
)
from third_party_agents import OPENAI_TOOLS, Traced, openai_turn

TEMPERATURE = 0.2  # what the client sends (``third_party_agents.openai_turn``)
SCOPE = "tiny_agents"


def client_settings(base_url: str, stream: bool) -> dict[str, Any]:
    """What a framework records as its invocation parameters: its client's settings, the
    request's one parameter, and nulls."""
    return {
        "model": MODEL,
        "temperature": TEMPERATURE,
        "stream": stream,
        "context_window": 128000,
        "is_chat_model": True,
        "is_function_calling_model": True,
        "system_role": "system",
        "num_output": -1,
        "max_tokens": None,
        "top_k": 40,  # a sampling setting OpenAI's API does not take
        "api_base": base_url,
        "timeout": 60.0,
        "max_retries": 0,
        "additional_kwargs": {},
        "callback_manager": None,
    }


def ask(client: openai.OpenAI, messages: list[Any], stream: bool) -> dict[str, Any]:
    """One call as the framework's client makes it: the reply as a message dict."""
    reply = openai_turn(client, messages, stream)
    return {"role": "assistant", **reply, "content": reply["content"] or None}


Recorder = Any
"""A context manager factory: ``record(base_url, messages, stream)`` yields a callback
the agent hands the reply to."""


def run_agent(base_url: str, telemetry: Traced | None, recorder: Recorder) -> Outcome:
    """Two turns with the weather tool, the second streamed; each model call inside the
    framework's own model-call span."""
    outcome = Outcome()
    with openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as client:
        for turn, question in enumerate(QUESTIONS):
            messages: list[Any] = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": question},
            ]
            while True:
                stream = bool(turn)
                with recorder(telemetry, base_url, messages, stream) as done:
                    reply = ask(client, messages, stream)
                    done(reply)
                calls = reply.pop("tool_calls")
                if calls:
                    reply["tool_calls"] = calls
                messages.append(reply)
                if not calls:
                    break
                for call in calls:
                    result = weather(outcome, json.loads(call["function"]["arguments"])["city"])
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
            outcome.answers.append(reply["content"])
    return outcome


# --- OpenInference attributes, as a framework's own instrumentation writes them --------


def _oi_message(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message["role"]}
    if message.get("content") is not None:
        out["content"] = message["content"]
    if message.get("tool_call_id"):
        out["tool_call_id"] = message["tool_call_id"]
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "function": dict(c["function"])} for c in message["tool_calls"]
        ]
    return out


@contextmanager
def openinference_span(
    telemetry: Traced | None, base_url: str, messages: list[Any], stream: bool
) -> Iterator[Any]:
    if telemetry is None:
        yield lambda reply: None
        return
    tracer = telemetry.tracer_provider.get_tracer(SCOPE)
    with tracer.start_as_current_span("TinyLLM.chat") as span:
        span.set_attributes(get_span_kind_attributes("llm"))
        span.set_attributes(get_input_attributes(messages[-1]["content"] or ""))
        span.set_attributes(
            get_llm_attributes(
                provider="openai",
                system="openai",
                model_name=MODEL,
                invocation_parameters=client_settings(base_url, stream),
                input_messages=[_oi_message(m) for m in messages],
                tools=[{"json_schema": json.dumps(t)} for t in OPENAI_TOOLS],
            )
        )

        def done(reply: dict[str, Any]) -> None:
            span.set_attributes(get_llm_attributes(output_messages=[_oi_message(reply)]))
            span.set_attributes(get_output_attributes(reply["content"] or ""))

        yield done


# --- the OpenTelemetry GenAI utilities' handler ----------------------------------------


def _parts(message: dict[str, Any]) -> list[Any]:
    parts: list[Any] = []
    if message.get("role") == "tool":
        return [ToolCallResponse(response=message["content"], id=message["tool_call_id"])]
    if message.get("content"):
        parts.append(Text(content=message["content"]))
    for call in message.get("tool_calls") or []:
        arguments = json.loads(call["function"]["arguments"])
        name = call["function"]["name"]
        parts.append(ToolCallRequest(arguments=arguments, name=name, id=call["id"]))
    return parts


@contextmanager
def genai_invocation(
    telemetry: Traced | None, base_url: str, messages: list[Any], stream: bool
) -> Iterator[Any]:
    if telemetry is None:
        yield lambda reply: None
        return
    handler = TelemetryHandler(tracer_provider=telemetry.tracer_provider)
    invocation = handler.start_inference("openai", request_model=MODEL)
    invocation.system_instruction = [Text(content=SYSTEM)]
    invocation.input_messages = [
        InputMessage(role=m["role"], parts=_parts(m)) for m in messages if m["role"] != "system"
    ]
    invocation.tool_definitions = [
        FunctionToolDefinition(
            name=t["function"]["name"],
            description=t["function"].get("description"),
            parameters=t["function"]["parameters"],
        )
        for t in OPENAI_TOOLS
    ]
    invocation.temperature = TEMPERATURE
    invocation.top_k = 40.0  # a sampling setting OpenAI's API does not take
    invocation.attributes = {
        "gen_ai.request.context_window": 128000,
        "gen_ai.request.is_chat_model": True,
        "tiny_agents.api_base": base_url,
        "tiny_agents.num_output": -1,
    }

    def done(reply: dict[str, Any]) -> None:
        reason = "tool_call" if reply.get("tool_calls") else "stop"
        invocation.output_messages = [
            OutputMessage(role="assistant", parts=_parts(reply), finish_reason=reason)
        ]

    yield done
    invocation.stop()


@pytest.fixture
def content_on_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")


def test_an_openinference_framework_with_client_settings_replays(tmp_path):
    agent = instrumented(lambda url, out: run_agent(url, out, openinference_span))
    trip = round_trip(tmp_path, agent, semantic(SCOPE), [])
    for interaction in trip.cassette.interactions:
        assert interaction.request.params == {"temperature": TEMPERATURE}
        assert interaction.context["context_window"] == 128000
        assert interaction.context["num_output"] == -1
        assert "max_tokens" not in interaction.context  # a null is no value


def test_a_genai_conventions_framework_with_settings_the_api_lacks_replays(
    tmp_path, content_on_spans
):
    agent = instrumented(lambda url, out: run_agent(url, out, genai_invocation))
    scope = f"opentelemetry.util.genai.handler {version('opentelemetry-util-genai')}"
    trip = round_trip(tmp_path, agent, semantic(scope), [])
    for interaction in trip.cassette.interactions:
        assert interaction.request.params == {"temperature": TEMPERATURE}
        assert interaction.context == {"top_k": 40.0}
