"""A small OpenAI tool-calling agent with its own OpenTelemetry set-up.

It reads nothing but the standard environment: ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``
for the SDK and ``OTEL_EXPORTER_OTLP_*`` for its traces, so it runs unchanged against the
real API, under ``otel-replay record`` / ``replay`` and inside the pytest fixture. Each
model call carries ``traceparent``, so the gateway's model-call spans nest in its trace.

Run it: ``python examples/openai_agent/openai_weather_agent.py [CITY]``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import openai
from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

MODEL = "gpt-4o-mini"
SYSTEM = "You are a travel helper. Use the weather tool, then answer in one sentence."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def get_weather(city: str) -> str:
    """The agent's tool (a real agent would call a weather service here)."""
    city = city.rstrip("?").split()[-1]  # the stub model passes the whole question
    return f"sunny and 21°C in {city}"


def tracer_provider() -> TracerProvider:
    """Traces go to OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, as any OTel app's do."""
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def run(city: str = "Lisbon") -> str:
    provider = tracer_provider()
    tracer = provider.get_tracer("weather-agent")
    try:
        with openai.OpenAI(max_retries=0) as client, tracer.start_as_current_span("agent run"):
            return _loop(client, tracer, city)
    finally:
        provider.shutdown()  # flushes the agent's spans


def _loop(client: openai.OpenAI, tracer: trace.Tracer, city: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"What is the weather in {city}?"},
    ]
    for _ in range(4):
        headers: dict[str, str] = {}
        propagate.inject(headers)
        reply = client.chat.completions.create(
            model=MODEL, messages=messages, tools=TOOLS, extra_headers=headers
        )
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            with tracer.start_as_current_span(f"execute_tool {call.function.name}"):
                result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "gave up"


if __name__ == "__main__":
    print(run(*sys.argv[1:2]))
