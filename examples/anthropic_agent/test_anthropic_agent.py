"""Replays the streaming Anthropic agent offline from cassettes/weather.json."""

from __future__ import annotations

from anthropic_weather_agent import run


def test_streaming_weather_agent(otel_replay):
    with otel_replay("weather") as gateway:
        answer = run("Oslo")
    assert answer == "stub reply to: rainy and 12°C in Oslo"
    summary = gateway.summary
    assert (summary.replayed, summary.live, summary.misses) == (2, 0, [])
    assert summary.spans_received == 2  # the agent's own spans reached the gateway
