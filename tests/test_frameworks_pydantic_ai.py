"""pydantic-ai with its native instrumentation, in every data-format version it supports:
a production trace builds a cassette that replays the same agent strictly."""

from __future__ import annotations

import asyncio
import warnings

import openai
import pytest
from framework_agents import (
    MODEL,
    QUESTIONS,
    SYSTEM,
    Outcome,
    Traced,
    instrumented,
    round_trip,
    weather,
)
from pydantic_ai import Agent, PydanticAIDeprecationWarning
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

VERSIONS = [2, 3, 4, 5, 6]


def pydantic_ai_agent(version: int):  # type: ignore[no-untyped-def]
    def run(base_url: str, telemetry: Traced | None) -> Outcome:
        return asyncio.run(_turns(base_url, telemetry, version))

    return run


async def _turns(base_url: str, telemetry: Traced | None, version: int) -> Outcome:
    outcome = Outcome()
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, system_prompt=SYSTEM)
    if telemetry is not None:
        with warnings.catch_warnings():  # versions 2 to 4 are deprecated formats
            warnings.simplefilter("ignore", PydanticAIDeprecationWarning)
            agent.instrument = InstrumentationSettings(
                tracer_provider=telemetry.tracer_provider, version=version, include_content=True
            )

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Current weather for a city"""
        return weather(outcome, city)

    async with client:
        outcome.answers.append((await agent.run(QUESTIONS[0])).output)
        async with agent.run_stream(QUESTIONS[1]) as stream:
            outcome.answers.append(await stream.get_output())
    return outcome


@pytest.mark.parametrize("version", VERSIONS)
def test_pydantic_ai_native_instrumentation_replays(tmp_path, version):
    round_trip(tmp_path, instrumented(pydantic_ai_agent(version)))
