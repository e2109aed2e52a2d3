"""A Pydantic AI agent with the framework's own OpenTelemetry instrumentation.

Pydantic AI traces an agent run the way the GenAI semantic conventions describe it: an
``invoke_agent`` span, a ``chat`` span per model call (with the messages) and an
``execute_tool`` span per tool call. The exporter is built when this module is imported,
as applications do; the agent reads ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` when it runs.
(An application would make ``PROVIDER`` the global provider; this module leaves the
global providers alone, since the examples share one test process.)

Run it: ``python examples/pydantic_ai_agent/pydantic_ai_weather_agent.py [CITY]``.
"""

from __future__ import annotations

import asyncio
import sys

import openai
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

# At import: the exporter reads OTEL_EXPORTER_OTLP_* now, before any test block runs.
PROVIDER = TracerProvider(resource=Resource.create({"service.name": "pydantic-ai-weather"}))
PROVIDER.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
INSTRUMENTATION = InstrumentationSettings(tracer_provider=PROVIDER, version=5)


def get_weather(city: str) -> str:
    """Current weather for a city"""
    city = city.rstrip("?").split()[-1]  # the stub model passes the whole question
    return f"sunny and 21°C in {city}"


async def ask(city: str) -> str:
    async with openai.AsyncOpenAI(max_retries=0) as client:
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
        agent = Agent(model, name="weather", tools=[get_weather])
        agent.instrument = INSTRUMENTATION
        result = await agent.run(f"What is the weather in {city}?")
    return result.output


def run(city: str = "Lisbon") -> str:
    return asyncio.run(ask(city))


if __name__ == "__main__":
    print(run(*sys.argv[1:2]))
    PROVIDER.shutdown()  # exports what is left
