"""Haystack (``OpenAIChatGenerator`` in Haystack's ``Agent``) with OpenInference's
instrumentation: a production trace builds a cassette that replays the same agent
strictly, and the agent recorded and replayed through the gateway, its spans sent to the
gateway, is never said to have bypassed it (the agent runs in one worker process,
``app_haystack``).

The generator sends ``temperature`` (set on the client) and ``n``; its spans record
neither the parameters nor the tool definitions, and record the conversation's messages
by their text alone (an assistant message's tool calls and a tool message's result are
its role only): none of those is compared, and ``doctor`` says so."""

from __future__ import annotations

from framework_agents import round_trip, semantic, source, through_gateway, worker_fixture

worker = worker_fixture("app_haystack")
SOURCE = source("openinference.instrumentation.haystack", "openinference-instrumentation-haystack")
SPANS = ["Agent.run", "ChatPromptBuilder.run"]
"""The agent's other spans, kept in the cassette."""


def test_haystack_trace_replays(tmp_path, worker):
    trip = round_trip(tmp_path, worker.agent("openinference"), semantic(SOURCE), SPANS)
    said = trip.build_stderr
    assert "not recorded, so not compared on replay: params (4), tools (4)" in said
    assert "compared only in what the trace's form expresses: bare-messages (2)" in said
    assert all(i.request.params == {} for i in trip.cassette.interactions)


def test_haystack_through_the_gateway_claims_no_bypass(tmp_path, worker):
    through_gateway(tmp_path, worker.agent("openinference"))
