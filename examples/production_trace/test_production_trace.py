"""Replays the support agent from a cassette built out of a production trace file."""

from __future__ import annotations

from support_agent import run


def test_support_agent_from_production_trace(otel_replay):
    with otel_replay("support") as gateway:
        answer = run()
    assert answer == "stub reply to: order A-1042 shipped yesterday"
    assert (gateway.summary.replayed, gateway.summary.misses) == (2, [])
