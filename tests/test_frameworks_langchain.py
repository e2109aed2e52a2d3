"""LangChain (``langchain-openai``) with OpenInference's and with OpenLLMetry's
instrumentation: a production trace builds a cassette that replays the same agent
strictly (the agent runs in one worker process, ``app_langchain``)."""

from __future__ import annotations

import pytest
from framework_agents import QUESTIONS, Worker, round_trip


@pytest.fixture(scope="module")
def worker():
    running = Worker("app_langchain")
    yield running
    running.close()


@pytest.mark.parametrize("instrumentation", ["openinference", "openllmetry"])
def test_langchain_trace_replays(tmp_path, worker, instrumentation):
    trip = round_trip(tmp_path, worker.agent(instrumentation))
    assert trip.production.tool_calls == [
        ("get_weather", {"city": QUESTIONS[0]}),
        ("get_weather", {"city": QUESTIONS[1]}),
    ]
