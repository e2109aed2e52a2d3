"""litellm with its OpenTelemetry callback: a production trace builds a cassette that
replays the same agent strictly (the agent runs in one worker process, ``app_litellm``)."""

from __future__ import annotations

from framework_agents import round_trip, semantic, worker_fixture

worker = worker_fixture("app_litellm", {"LITELLM_LOCAL_MODEL_COST_MAP": "True"})


def test_litellm_otel_callback_trace_replays(tmp_path, worker):
    round_trip(tmp_path, worker.agent("otel"), semantic("litellm"), ["raw_gen_ai_request"])
