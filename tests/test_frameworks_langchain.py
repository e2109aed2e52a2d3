"""LangChain (``langchain-openai``) with OpenInference's and with OpenLLMetry's
instrumentation: a production trace builds a cassette that replays the same agent
strictly (the agent runs in one worker process, ``app_langchain``)."""

from __future__ import annotations

import pytest
from framework_agents import round_trip, semantic, source, worker_fixture

worker = worker_fixture("app_langchain")
SOURCES = {
    "openinference": source(
        "openinference.instrumentation.langchain", "openinference-instrumentation-langchain"
    ),
    "openllmetry": source(
        "opentelemetry.instrumentation.langchain", "opentelemetry-instrumentation-langchain"
    ),
}


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_langchain_trace_replays(tmp_path, worker, instrumentation):
    round_trip(tmp_path, worker.agent(instrumentation), semantic(SOURCES[instrumentation]))
