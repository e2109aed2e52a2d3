"""LangChain (``langchain-openai``) with OpenInference's and with OpenLLMetry's
instrumentation: a production trace builds a cassette that replays the same agent
strictly, and the agent recorded and replayed through the gateway, its spans sent to the
gateway, is never said to have bypassed it (the agent runs in one worker process,
``app_langchain``)."""

from __future__ import annotations

import pytest
from framework_agents import round_trip, semantic, source, through_gateway, worker_fixture

worker = worker_fixture("app_langchain")
SOURCES = {
    "openinference": source(
        "openinference.instrumentation.langchain", "openinference-instrumentation-langchain"
    ),
    "openllmetry": source(
        "opentelemetry.instrumentation.langchain", "opentelemetry-instrumentation-langchain"
    ),
}
SPANS = {
    "openinference": ["weather_agent", "get_weather"],
    "openllmetry": ["weather_agent.workflow", "execute_tool get_weather"],
}
"""The agent's other spans each instrumentation writes, kept in the cassette."""


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_langchain_trace_replays(tmp_path, worker, instrumentation):
    summary = semantic(SOURCES[instrumentation])
    round_trip(
        tmp_path, worker.agent(instrumentation), summary, SPANS[instrumentation], entries=True
    )


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_langchain_through_the_gateway_claims_no_bypass(tmp_path, worker, instrumentation):
    through_gateway(tmp_path, worker.agent(instrumentation))
