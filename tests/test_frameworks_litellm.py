"""litellm with its OpenTelemetry callback: a production trace builds a cassette that
replays the same agent strictly (the agent runs in one worker process, ``app_litellm``)."""

from __future__ import annotations

from framework_agents import round_trip, semantic, worker_fixture

ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
worker = worker_fixture("app_litellm", ENV)
forms_worker = worker_fixture("app_litellm", ENV)
"""A worker of its own: litellm's callback exports through the global tracer provider,
which a process sets once."""


def test_litellm_otel_callback_trace_replays(tmp_path, worker):
    round_trip(tmp_path, worker.agent("otel"), semantic("litellm"), ["raw_gen_ai_request"])


def test_every_litellm_call_form_becomes_an_interaction(tmp_path, forms_worker):
    """Plain, awaited, streamed, and streamed and awaited: each call is in the cassette."""
    agent = forms_worker.agent("forms")
    trip = round_trip(tmp_path, agent, semantic("litellm"), ["raw_gen_ai_request"])
    assert [i.stream for i in trip.cassette.interactions] == [False, False, True, True]
