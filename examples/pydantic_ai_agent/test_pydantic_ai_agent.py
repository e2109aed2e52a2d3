"""Asserts on a Pydantic AI agent's own spans under replay: ``invoke_agent``, the ``chat``
model calls and ``execute_tool``, as the framework's instrumentation makes them, and the
tree's snapshot (``cassettes/weather.spans.json``)."""

from __future__ import annotations

import json

from pydantic_ai_weather_agent import PROVIDER, run


def test_agent_spans(otel_replay):
    with otel_replay("weather") as run_:
        answer = run("Lisbon")
        run_.flush(PROVIDER)  # the block flushes global providers itself; this one is ours
    assert answer == "stub reply to: sunny and 21°C in Lisbon"
    spans = run_.spans
    agent = spans.one("invoke_agent weather")
    tool = spans.one("execute_tool get_weather")
    first, second = spans.named("chat gpt-4o-mini")
    assert spans.roots == [agent]
    assert agent.children == [first, tool, second]
    assert first.kind == "CLIENT" and tool.kind == "INTERNAL"
    assert tool.attributes["gen_ai.tool.name"] == "get_weather"
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {
        "city": "What is the weather in Lisbon?"
    }
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_call"]
    said = json.loads(second.attributes["gen_ai.output.messages"])
    assert said[0]["parts"][0]["content"] == answer
    run_.assert_snapshot()  # the whole tree, against cassettes/weather.spans.json
