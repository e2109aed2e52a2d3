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


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_openai_agents_trace_replays(tmp_path, worker, instrumentation):
    round_trip(tmp_path, worker.agent(instrumentation), semantic(SOURCES[instrumentation]))
