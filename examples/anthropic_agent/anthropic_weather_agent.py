"""A small Anthropic tool-calling agent that streams, with its own OpenTelemetry set-up.

Like the OpenAI example it reads only the standard environment (``ANTHROPIC_BASE_URL``,
``ANTHROPIC_API_KEY``, ``OTEL_EXPORTER_OTLP_*``), so otel-replay needs no change to it.

Run it: ``python examples/anthropic_agent/anthropic_weather_agent.py [CITY]``.
"""

from __future__ import annotations

import sys
from typing import Any

import anthropic
from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

MODEL = "claude-haiku-4-5"
SYSTEM = "You are a travel helper. Use the weather tool, then answer in one sentence."
TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]


def get_weather(city: str) -> str:
    city = city.rstrip("?").split()[-1]  # the stub model passes the whole question
    return f"rainy and 12°C in {city}"


def run(city: str = "Oslo") -> str:
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("weather-agent")
    try:
        with (
            anthropic.Anthropic(max_retries=0) as client,
            tracer.start_as_current_span("agent run"),
        ):
            return _loop(client, tracer, city)
    finally:
        provider.shutdown()


def _loop(client: anthropic.Anthropic, tracer: trace.Tracer, city: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": f"What is the weather in {city}?"}
    ]
    for _ in range(4):
        headers: dict[str, str] = {}
        propagate.inject(headers)
        with client.messages.stream(
            model=MODEL,
            max_tokens=512,
            system=SYSTEM,
            messages=messages,
            tools=TOOLS,
            extra_headers=headers,
        ) as stream:
            text = "".join(stream.text_stream)  # printed as it arrives by a real agent
            message = stream.get_final_message()
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return text
        messages.append(
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in uses]}
        )
        results = []
        for use in uses:
            with tracer.start_as_current_span(f"execute_tool {use.name}"):
                output = get_weather(**use.input)  # type: ignore[arg-type]
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": output})
        messages.append({"role": "user", "content": results})
    return "gave up"


if __name__ == "__main__":
    print(run(*sys.argv[1:2]))
