"""The Haystack agent of the conformance suite: ``OpenAIChatGenerator`` with a temperature
set on the client (``generation_kwargs``) in Haystack's own tool-calling ``Agent``, one
run per turn, the second streamed (a streaming callback). Run in ``framework_worker.py``:
the instrumentations patch Haystack's components for the whole process."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import framework_agents
from framework_agents import MODEL, QUESTIONS, SYSTEM, Outcome, Traced, weather

os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"  # Haystack's usage telemetry (PostHog)

from haystack.components.agents import Agent
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage, StreamingChunk
from haystack.tools import create_tool_from_function
from haystack.utils import Secret

TEMPERATURE = 0.2
INSTRUMENTORS = {
    "openinference": ("openinference.instrumentation.haystack", "HaystackInstrumentor"),
    "openllmetry": ("opentelemetry.instrumentation.haystack", "HaystackInstrumentor"),
}


def instrumentors(variant: str) -> list[Callable[[], Any]]:
    return framework_agents.instrumentors(INSTRUMENTORS, variant)


def agent(variant: str) -> Callable[[str, Traced | None], Outcome]:
    del variant

    def run(base_url: str, telemetry: Traced | None) -> Outcome:
        del telemetry
        outcome = Outcome()

        def get_weather(city: str) -> str:
            """Current weather for a city"""
            return weather(outcome, city)

        generator = OpenAIChatGenerator(
            api_key=Secret.from_token("sk-test"),
            model=MODEL,
            api_base_url=base_url,
            generation_kwargs={"temperature": TEMPERATURE},
            max_retries=0,
        )
        weather_agent = Agent(
            chat_generator=generator,
            tools=[create_tool_from_function(get_weather)],
            system_prompt=SYSTEM,
        )
        chunks: list[StreamingChunk] = []
        for index, question in enumerate(QUESTIONS):
            ask = [ChatMessage.from_user(question)]
            callback = chunks.append if index > 0 else None
            result = weather_agent.run(messages=ask, streaming_callback=callback)
            outcome.answers.append(result["last_message"].text)
        assert chunks, "the second turn did not stream"
        return outcome

    return run
