"""openai-agents with OpenInference's and with OpenLLMetry's instrumentation: a
production trace builds a cassette that replays the same agent strictly (the agent runs
in one worker process, ``app_openai_agents``)."""

from __future__ import annotations

import pytest
from framework_agents import round_trip, semantic, source, worker_fixture

worker = worker_fixture("app_openai_agents")
SOURCES = {
    "openinference": source(
        "openinference.instrumentation.openai_agents", "openinference-instrumentation-openai-agents"
    ),
    "openllmetry": source(
        "opentelemetry.instrumentation.openai_agents", "opentelemetry-instrumentation-openai-agents"
    ),
}
SPANS = {
    "openinference": ["Agent workflow", "weather", "turn", "get_weather"],
    "openllmetry": ["Agent Workflow", "weather.agent", "get_weather.tool"],
}
"""The agent's other spans each instrumentation writes, kept in the cassette."""


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_openai_agents_trace_replays(tmp_path, worker, instrumentation):
    summary = semantic(SOURCES[instrumentation])
    round_trip(tmp_path, worker.agent(instrumentation), summary, SPANS[instrumentation])
