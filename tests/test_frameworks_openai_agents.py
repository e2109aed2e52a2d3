"""openai-agents with OpenInference's and with OpenLLMetry's instrumentation: a
production trace builds a cassette that replays the same agent strictly, and the agent
recorded and replayed through the gateway, its spans sent to the gateway, is never said
to have bypassed it (the agent runs in one worker process, ``app_openai_agents``)."""

from __future__ import annotations

import pytest
from framework_agents import round_trip, semantic, source, through_gateway, worker_fixture

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
    round_trip(
        tmp_path, worker.agent(instrumentation), summary, SPANS[instrumentation], entries=True
    )


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_openai_agents_through_the_gateway_claims_no_bypass(tmp_path, worker, instrumentation):
    through_gateway(tmp_path, worker.agent(instrumentation))


def test_two_instrumentations_of_one_call_keep_the_most_faithful(tmp_path, worker):
    """The framework's instrumentation and the SDK's both see every model call: the
    cassette holds one interaction per call, the SDK span's exact request where it is
    readable. (The SDK instrumentation records no provider on the async streamed calls,
    and ``doctor`` says so; the framework's spans cover those.)"""
    trip = round_trip(
        tmp_path,
        worker.agent("openinference+openinference-sdk"),
        semantic(SOURCES["openinference"]),
        SPANS["openinference"],
    )
    sdk = source("openinference.instrumentation.openai", "openinference-instrumentation-openai")
    assert (
        f"{sdk}: 4 model calls · 2 exactly · 0 semantically · 2 not replayable\n"
        "otel-replay build:   2 × provider not recorded"
    ) in trip.build_stderr
    exact = [i.raw_request is not None for i in trip.cassette.interactions]
    assert exact == [True, True, False, False]
