"""A framework agent whose tools are MCP tools, instrumented for production: the OpenAI
Agents SDK with an MCP server over Streamable HTTP, traced by OpenInference's
instrumentation and exported over OTLP/HTTP (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``).
In a folder of its own: the package is named ``agents``, like a test helper module.

``python openai_agents_mcp.py PROMPT``: the model at ``AGENT_MODEL_URL`` (else
``OPENAI_BASE_URL``), the MCP server at ``AGENT_MCP_URL`` (else
``OTEL_REPLAY_MCP_WEATHER_URL``). Prints the run's final output."""

from __future__ import annotations

import asyncio
import os
import sys

import openai
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_trace_processors
from agents.mcp import MCPServerStreamableHttp
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


async def main(prompt: str) -> None:
    model_url = os.environ.get("AGENT_MODEL_URL") or os.environ["OPENAI_BASE_URL"]
    mcp_url = os.environ.get("AGENT_MCP_URL") or os.environ["OTEL_REPLAY_MCP_WEATHER_URL"]
    client = openai.AsyncOpenAI(base_url=model_url, api_key="sk-test", max_retries=0)
    params = {"url": mcp_url}
    async with MCPServerStreamableHttp(params=params, name="weather") as server:  # type: ignore[arg-type]
        agent = Agent(
            name="forecaster",
            instructions="Answer with the forecast.",
            model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
            mcp_servers=[server],
        )
        result = await Runner.run(agent, prompt)
    await client.close()
    print(result.final_output)


if __name__ == "__main__":
    set_trace_processors([])  # the SDK's own processor would send traces to OpenAI
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    try:
        asyncio.run(main(sys.argv[1]))
    finally:
        provider.shutdown()
