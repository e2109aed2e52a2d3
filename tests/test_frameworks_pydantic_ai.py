"""pydantic-ai with its native instrumentation, in every data-format version it supports:
a production trace builds a cassette that replays the same agent strictly; and the agent
recorded and replayed through the gateway, its spans sent to the gateway, is never said
to have bypassed it."""

from __future__ import annotations

import asyncio
import warnings

import openai
import pytest
from framework_agents import (
    FINAL_TEXT,
    MODEL,
    QUESTIONS,
    SYSTEM,
    Outcome,
    Traced,
    build_cli,
    doctor,
    instrumented,
    round_trip,
    semantic,
    source,
    through_gateway,
    weather,
)
from pydantic_ai import Agent, PydanticAIDeprecationWarning
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from otel_replay.testing.stub import run_stub

VERSIONS = [2, 3, 4, 5, 6]
AGENT_SPANS = ["invoke_agent agent", "execute_tool get_weather"]
AGENT_SPANS_V2 = ["agent run", "running tool"]
"""The agent's other spans, kept in the cassette (data format 2 names them so)."""


def pydantic_ai_agent(version: int, content: bool = True):  # type: ignore[no-untyped-def]
    def run(base_url: str, telemetry: Traced | None) -> Outcome:
        return asyncio.run(_turns(base_url, telemetry, version, content))

    return run


async def _turns(base_url: str, telemetry: Traced | None, version: int, content: bool) -> Outcome:
    outcome = Outcome()
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, system_prompt=SYSTEM)
    if telemetry is not None:
        with warnings.catch_warnings():  # versions 2 to 4 are deprecated formats
            warnings.simplefilter("ignore", PydanticAIDeprecationWarning)
            agent.instrument = InstrumentationSettings(
                tracer_provider=telemetry.tracer_provider, version=version, include_content=content
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
    summary = semantic(source("pydantic-ai", "pydantic-ai-slim"))
    spans = (
        ["agent run", "running tool"]
        if version == 2
        else ["invoke_agent agent", "execute_tool get_weather"]
    )
    round_trip(tmp_path, instrumented(pydantic_ai_agent(version)), summary, spans, entries=True)


def test_pydantic_ai_through_the_gateway_claims_no_bypass(tmp_path):
    through_gateway(tmp_path, instrumented(pydantic_ai_agent(VERSIONS[-1])))


def test_a_trace_without_content_gets_the_setting_that_fixes_it(tmp_path):
    """Content capture off: ``doctor`` names the setting, and ``build`` — which saw model
    calls it cannot replay — writes nothing and exits 1."""
    agent = instrumented(pydantic_ai_agent(5, content=False))
    with run_stub() as stub:
        assert agent(stub.openai_url, tmp_path).answers == [FINAL_TEXT, FINAL_TEXT]
    traces = tmp_path / "traces.jsonl"
    found = doctor([traces])
    assert found.returncode == 1
    assert found.stdout.splitlines() == [
        f"{source('pydantic-ai', 'pydantic-ai-slim')}: 4 model calls · 0 exactly"
        " · 0 semantically · 4 not replayable",
        "  4 × message content not captured — pass InstrumentationSettings(include_content=True)",
        "  2 tool calls · 0 with arguments and result captured",
        "  2 × tool content not captured — pass InstrumentationSettings(include_content=True)",
        "  bypass check: 4 model calls record no request text: a run tells them from the"
        " gateway's calls by their time alone",
    ]
    built = build_cli([traces], tmp_path / "c.json")
    assert built.returncode == 1 and not (tmp_path / "c.json").exists()
    assert "saw 4 model calls and can replay none of them" in built.stderr
