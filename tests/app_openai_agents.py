"""The openai-agents agent of the conformance suite (run in ``framework_worker.py``: the
package is named ``agents``, like a test helper module)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import framework_agents
import openai
from agents import (
    Agent,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_trace_processors,
)
from framework_agents import MODEL, QUESTIONS, SYSTEM, Outcome, Traced, weather

INSTRUMENTORS = {
    "openinference": ("openinference.instrumentation.openai_agents", "OpenAIAgentsInstrumentor"),
    "openllmetry": ("opentelemetry.instrumentation.openai_agents", "OpenAIAgentsInstrumentor"),
    "openinference-sdk": ("openinference.instrumentation.openai", "OpenAIInstrumentor"),
}

set_trace_processors([])  # the SDK's own processor would send traces to OpenAI


def instrumentors(variant: str) -> list[Callable[[], Any]]:
    """``a+b``: both instrumentations at once (each sees every model call)."""
    found: list[Callable[[], Any]] = []
    for name in variant.split("+"):
        found += framework_agents.instrumentors(INSTRUMENTORS, name)
    return found


def agent(variant: str) -> Callable[[str, Traced | None], Outcome]:
    del variant

    def run(base_url: str, telemetry: Traced | None) -> Outcome:
        del telemetry
        return asyncio.run(_turns(base_url))

    return run


async def _turns(base_url: str) -> Outcome:
    outcome = Outcome()
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)

    @function_tool
    def get_weather(city: str) -> str:
        """Current weather for a city"""
        return weather(outcome, city)

    weather_agent = Agent(
        name="weather",
        instructions=SYSTEM,
        tools=[get_weather],
        model=OpenAIResponsesModel(MODEL, openai_client=client),
    )
    async with client:
        outcome.answers.append(str((await Runner.run(weather_agent, QUESTIONS[0])).final_output))
        streamed = Runner.run_streamed(weather_agent, QUESTIONS[1])
        async for _event in streamed.stream_events():
            pass
        outcome.answers.append(str(streamed.final_output))
    return outcome
