"""LlamaIndex (``llama-index-llms-openai``'s ``OpenAI`` in a ``FunctionAgent``) with
OpenInference's instrumentation: a production trace builds a cassette that replays the
same agent strictly, and the agent recorded and replayed through the gateway, its spans
sent to the gateway, is never said to have bypassed it. The agent runs in one worker
process under LlamaIndex's own venv (``app_llamaindex``). (OpenLLMetry's LlamaIndex
instrumentation writes no span for a ``FunctionAgent``'s model calls: nothing to read.)

The framework sends ``temperature`` (set on the client), ``tool_choice`` and
``parallel_tool_calls``; its spans record the client's settings as invocation parameters
(a context window, model flags), none of those three: the cassette compares no parameter
the trace did not record, and ``doctor`` says so. Each model call also has a step span
of kind LLM that calls nothing (``OpenAI._prepare_chat_with_tools``: the arguments it
prepared, no answer): not a model call."""

from __future__ import annotations

from framework_agents import (
    framework_python,
    round_trip,
    semantic,
    through_gateway,
    worker_fixture,
)

worker = worker_fixture("app_llamaindex", python=framework_python("llamaindex"))
SOURCE = "openinference.instrumentation.llama_index 4.6.1"
"""The pinned version (``pyproject.toml``'s ``llamaindex`` extra): not this venv's."""
STEPS = [
    "init_run",
    "setup_agent",
    "run_agent_step",
    "parse_agent_output",
    "call_tool",
    "aggregate_tool_results",
]
SPANS = [
    "FunctionAgent.run",
    *(f"BaseWorkflowAgent.{step}" for step in STEPS),
    "OpenAI._prepare_chat_with_tools",
    "FunctionTool.acall",
]
"""The agent's other spans, kept in the cassette."""


def test_llamaindex_trace_replays(tmp_path, worker):
    trip = round_trip(tmp_path, worker.agent("openinference"), semantic(SOURCE), SPANS)
    assert "not recorded, so not compared on replay: params (4)" in trip.build_stderr
    for interaction in trip.cassette.interactions:
        assert "params" not in interaction.request.known
        assert interaction.request.params == {}
        assert interaction.context["context_window"] == 128000


def test_llamaindex_through_the_gateway_claims_no_bypass(tmp_path, worker):
    through_gateway(tmp_path, worker.agent("openinference"))
