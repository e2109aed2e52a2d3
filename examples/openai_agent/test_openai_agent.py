"""Replays the OpenAI agent offline from cassettes/weather.json with the pytest fixture."""

from __future__ import annotations

from openai_weather_agent import run


def test_weather_agent(otel_replay):
    with otel_replay("weather") as gateway:
        answer = run("Lisbon")
    assert answer == "stub reply to: sunny and 21°C in Lisbon"
    summary = gateway.summary
    assert (summary.replayed, summary.live, summary.misses) == (2, 0, [])
    assert summary.spans_received == 2  # the agent's own spans still reached the gateway
