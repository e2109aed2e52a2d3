"""Asserts on the agent's own spans under replay: the tree of ``invoke_agent``, the model
calls and ``execute_tool``, and its trace snapshot (``cassettes/weather.spans.json``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from instrumented_weather_agent import PROVIDER, instrumentor, run


@pytest.fixture
def instrumented() -> Iterator[None]:
    """The openai SDK traced for this test only (the instrumentation patches the SDK)."""
    instrumentor.instrument(tracer_provider=PROVIDER)
    yield
    instrumentor.uninstrument()


def test_agent_spans(otel_replay, instrumented):
    with otel_replay("weather") as run_:
        answer = run("Lisbon")
        # the block flushes the global providers itself; this one is the agent's own
        print(run_.flush(PROVIDER))
    assert answer == "stub reply to: sunny and 21°C in Lisbon"
    spans = run_.spans  # no sleeping: everything was exported when the flush returned
    agent = spans.one("invoke_agent weather")
    tool = spans.one("execute_tool get_weather")
    first, second = spans.named("chat gpt-4o-mini")
    assert spans.roots == [agent]
    assert [child.name for child in agent.children] == [
        "chat gpt-4o-mini",
        "execute_tool get_weather",
        "chat gpt-4o-mini",
    ]
    assert first.parent is agent and tool.parent is agent and second.parent is agent
    assert first.kind == "CLIENT" and first.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert second.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert tool.attributes["gen_ai.tool.name"] == "get_weather"
    run_.assert_snapshot()  # the whole tree, against cassettes/weather.spans.json
