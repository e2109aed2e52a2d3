"""The LlamaIndex agent of the conformance suite: ``llama-index-llms-openai``'s ``OpenAI``
with a temperature set on the client, in LlamaIndex's own tool-calling agent
(``FunctionAgent``, which adds ``tool_choice`` and ``parallel_tool_calls`` to each call),
one run per turn, the second streamed. It runs in ``framework_worker.py`` under the venv
of its own, ``.venv/llamaindex`` (``make frameworks``): llama-index-llms-openai takes
``openai<3``, the rest of the suite ``openai>=3``; and the instrumentations patch
LlamaIndex's global dispatcher."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import framework_agents
from framework_agents import MODEL, QUESTIONS, SYSTEM, Outcome, Traced, weather
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai import OpenAI

TEMPERATURE = 0.2
INSTRUMENTORS = {
    "openinference": ("openinference.instrumentation.llama_index", "LlamaIndexInstrumentor"),
    "openllmetry": ("opentelemetry.instrumentation.llamaindex", "LlamaIndexInstrumentor"),
}


def instrumentors(variant: str) -> list[Callable[[], Any]]:
    return framework_agents.instrumentors(INSTRUMENTORS, variant)


def agent(variant: str) -> Callable[[str, Traced | None], Outcome]:
    del variant

    def run(base_url: str, telemetry: Traced | None) -> Outcome:
        del telemetry
        return asyncio.run(_turns(base_url))

    return run


async def _turns(base_url: str) -> Outcome:
    outcome = Outcome()

    def get_weather(city: str) -> str:
        """Current weather for a city"""
        return weather(outcome, city)

    llm = OpenAI(
        model=MODEL,
        api_base=base_url,
        api_key="sk-test",
        max_retries=0,
        temperature=TEMPERATURE,
    )
    tools = [FunctionTool.from_defaults(get_weather)]
    for index, question in enumerate(QUESTIONS):
        streamed = index > 0
        weather_agent = FunctionAgent(
            tools=tools, llm=llm, system_prompt=SYSTEM, streaming=streamed
        )
        handler = weather_agent.run(user_msg=question)
        if streamed:
            async for _event in handler.stream_events():
                pass
        outcome.answers.append(str(await handler))
    return outcome
