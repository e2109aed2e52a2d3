"""An OpenAI tool-calling agent instrumented the usual way, set up when it is imported.

Its telemetry is configured at import time, as applications do: a ``TracerProvider``
exporting over OTLP/HTTP to ``OTEL_EXPORTER_OTLP_*``, its exporter built when the module
is imported. The model calls are traced by ``opentelemetry-instrumentation-openai-v2``
(``instrument(tracer_provider=PROVIDER)``); the agent adds the GenAI conventions'
``invoke_agent`` and ``execute_tool`` spans of its own. It knows nothing about otel-replay.
(An application would also make ``PROVIDER`` the global one; this module leaves the global
providers alone, since the examples share one test process.)

Run it: ``python examples/instrumented_agent/instrumented_weather_agent.py [CITY]``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import openai
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

MODEL = "gpt-4o-mini"
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

# At import: the exporter reads OTEL_EXPORTER_OTLP_* now, before any test block runs.
PROVIDER = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
PROVIDER.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
tracer = PROVIDER.get_tracer("weather-agent")
instrumentor = OpenAIInstrumentor()


def get_weather(city: str) -> str:
    city = city.rstrip("?").split()[-1]  # the stub model passes the whole question
    return f"sunny and 21°C in {city}"


def run(city: str = "Lisbon") -> str:
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}
    with (
        tracer.start_as_current_span("invoke_agent weather", attributes=attributes),
        openai.OpenAI(max_retries=0) as client,
    ):
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": f"What is the weather in {city}?"}
        ]
        for _ in range(4):
            reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content or ""
            for call in message.tool_calls:
                with tracer.start_as_current_span(
                    f"execute_tool {call.function.name}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": call.function.name,
                        "gen_ai.tool.call.id": call.id,
                    },
                ):
                    result = get_weather(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "gave up"


if __name__ == "__main__":
    instrumentor.instrument(tracer_provider=PROVIDER)
    print(run(*sys.argv[1:2]))
    PROVIDER.shutdown()  # exports what is left
