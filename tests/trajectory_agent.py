"""A tool-calling agent on the official ``openai`` SDK with its own OpenTelemetry spans in
the GenAI conventions (``invoke_agent``, ``execute_tool`` with the tool's arguments), for
the report and diff tests. Variants change one step of its trajectory."""

from __future__ import annotations

import json
from typing import Any

import openai
from opentelemetry import propagate
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_replay.testing.demo_agent import WEATHER_TOOL

SYSTEM = "You are a travel helper. Use the weather tool, then answer in one sentence."


def run(
    city: str = "Lisbon",
    *,
    extra_tool: bool = False,
    argument: str | None = None,
    extra_turn: bool = False,
) -> str:
    """One run; ``extra_tool`` also runs a second tool, ``argument`` replaces the tool's
    argument, ``extra_turn`` asks one more question after the answer."""
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("weather-agent")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": city},
    ]
    answer = ""
    try:
        with (
            openai.OpenAI(max_retries=0) as client,
            tracer.start_as_current_span(
                "invoke_agent weather", attributes={"gen_ai.operation.name": "invoke_agent"}
            ),
        ):
            for turn in range(6):
                headers: dict[str, str] = {}
                propagate.inject(headers)
                reply = client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=messages,
                    tools=[WEATHER_TOOL],
                    extra_headers=headers,
                )
                message = reply.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    answer = message.content or ""
                    if extra_turn and turn < 5:
                        extra_turn = False
                        messages.append({"role": "user", "content": "And tomorrow?"})
                        continue
                    break
                for call in message.tool_calls:
                    args = json.loads(call.function.arguments)
                    if argument is not None:
                        args = {"city": argument}
                    result = _tool(tracer, call.function.name, args)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
                    if extra_tool:
                        _tool(tracer, "log_visit", {"city": args["city"]})
    finally:
        provider.shutdown()
    return answer


def _tool(tracer: Any, name: str, args: dict[str, Any]) -> str:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": json.dumps(args),
    }
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
        return f"sunny in {args['city']}"
