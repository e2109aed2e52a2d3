"""The AI SDK's spans as a source: ``ai.generateText.doGenerate`` / ``ai.streamText.doStream``
(AI SDK 4–6), and AI SDK 7's GenAI-convention spans, read back into the requests its
providers sent.

``traces/ai_sdk.jsonl`` (AI SDK 6) and ``traces/ai_sdk_v4.jsonl`` (AI SDK 4, whose
prompt says ``args`` / ``result`` / ``parameters``) are traces the real AI SDK produced
(``js/scripts/ai-sdk-trace.mjs``: a tool-using agent on ``@ai-sdk/openai``'s Chat (and,
from AI SDK 5 on, Responses) models and on ``@ai-sdk/anthropic``, streamed and not,
recorded through the gateway against the stub upstream). Each holds the gateway's own
spans, with the exact bodies, beside the AI SDK's: each call read from the AI SDK's span
must match the request the gateway saw. ``traces/ai_sdk_google.jsonl`` holds the AI SDK 6
spans of a tool-using agent on ``@ai-sdk/google`` alone (it called the stub itself).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.cassette.model import dump
from otel_replay.core.exchange import CanonicalRequest, Exchange
from otel_replay.matching.matcher import Matcher, differences
from otel_replay.matching.session_rules import matching_rules
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.otlp.codec import iter_spans, json_line, traces_from_json
from otel_replay.pipeline.build import build
from otel_replay.readers import ai_sdk, read_exchanges
from otel_replay.readers.registry import READERS, read_call

TRACES = Path(__file__).parent / "traces"
TRACE = TRACES / "ai_sdk.jsonl"
CHAT, RESPONSES, MESSAGES = ("openai", "chat"), ("openai", "responses"), ("anthropic", "messages")
GEMINI = ("gcp.gemini", "chat")
TRACE_V7 = TRACES / "ai_sdk_v7.jsonl"
GEN_AI = "gen_ai"
"""The scope of AI SDK 7's spans (its OpenTelemetry integration's tracer)."""
FIXTURES = [
    pytest.param(TRACE, (CHAT, RESPONSES, MESSAGES), "ai", "ai-sdk", id="ai-sdk-6"),
    pytest.param(TRACES / "ai_sdk_v4.jsonl", (CHAT, MESSAGES), "ai", "ai-sdk", id="ai-sdk-4"),
    pytest.param(
        TRACE_V7, (CHAT, RESPONSES, MESSAGES, GEMINI), GEN_AI, "genai-semconv", id="ai-sdk-7"
    ),
]
AI_SDK = next(r for r in READERS if r.name == "ai-sdk")
GENAI = next(r for r in READERS if r.name == "genai-semconv")
OWN = next(r for r in READERS if r.name == "otel-replay")
RULES = matching_rules()


def _differences(recorded: CanonicalRequest, live: CanonicalRequest) -> set[str]:
    """The components that differ, compared as replay compares them (a Gemini stream's
    endpoint is generateContent's)."""
    return set(differences(RULES.normalize(recorded), RULES.normalize(live)))


def _requests(trace: Path = TRACE) -> list[ExportTraceServiceRequest]:
    return [traces_from_json(line) for line in trace.read_text().splitlines() if line.strip()]


def _read(scope: str, trace: Path = TRACE, sdk: str = "ai") -> list[Exchange]:
    """The calls read from the spans of the AI SDK's scope ``sdk`` (``scope`` is it) or
    from the gateway's (any other ``scope``)."""
    reader = (AI_SDK if sdk == "ai" else GENAI) if scope == sdk else OWN
    found = []
    for request in _requests(trace):
        for _resource, scope_, span in iter_spans(request):
            if (scope_.name == sdk) != (scope == sdk):
                continue
            reading = read_call(span, attributes_to_dict(span.attributes), (), (reader,))
            if reading is not None:
                found.append(reading.exchange)
    return sorted(found, key=lambda e: e.start_ns)


@pytest.mark.parametrize(("trace", "apis", "sdk", "source"), FIXTURES)
def test_each_ai_sdk_call_reads_as_the_request_its_provider_sent(trace, apis, sdk, source):
    from_sdk, sent = _read(sdk, trace, sdk), _read("gateway", trace, sdk)
    # each model, streamed and not, two calls each (a tool call, then the answer)
    assert len(from_sdk) == len(sent) == 4 * len(apis)
    kinds = {(e.provider, e.operation, e.stream) for e in from_sdk}
    assert kinds == {
        (provider, operation, s) for provider, operation in apis for s in (False, True)
    }
    for view, exact in zip(from_sdk, sent, strict=True):
        assert (view.provider, view.operation, view.stream) == (
            exact.provider,
            exact.operation,
            exact.stream,
        )
        assert view.source == source
        assert _differences(view.request, exact.request) == set()
        assert Matcher([view.request], normalizer=RULES).probe(exact.request) == 0


def test_what_the_form_cannot_express_is_not_compared():
    view = _read("ai")[0]
    assert "params" not in view.request.known  # max_tokens, tool_choice: provider defaults
    assert view.request.views == frozenset({"tool-definitions"})
    assert view.raw_request is None  # rebuilt, not the bytes sent


def test_a_changed_prompt_differs_in_its_messages():
    view, exact = _read("ai")[0], _read("gateway")[0]
    messages = exact.request.messages
    assert isinstance(messages, list)
    changed = [{**messages[0], "parts": [{"type": "text", "content": "Lyon"}]}, *messages[1:]]
    live = replace(exact.request, messages=changed)
    assert set(differences(view.request, live)) == {"messages"}


def _only_scope(trace: Path, scope: str, out: Path) -> Path:
    """The spans of ``scope`` alone, without the gateway's: what a production trace holds."""
    lines = []
    for request in _requests(trace):
        for resource_spans in request.resource_spans:
            keep = [s for s in resource_spans.scope_spans if s.scope.name == scope]
            del resource_spans.scope_spans[:]
            resource_spans.scope_spans.extend(keep)
        lines.append(json_line(request))
    out.write_text("\n".join(lines) + "\n")
    return out


def _run(*args: str, code: int = 0) -> str:
    """``otel-replay ARGS…``'s output (stdout, then stderr), once it exited with ``code``."""
    done = subprocess.run(
        [sys.executable, "-m", "otel_replay", *args], capture_output=True, text=True
    )
    assert done.returncode == code, done.stderr
    return done.stdout + done.stderr


def _doctor(trace: Path, code: int = 0) -> str:
    return _run("doctor", str(trace), code=code)


def test_build_reads_the_ai_sdk_spans_alone(tmp_path):
    only_sdk = _only_scope(TRACE, "ai", tmp_path / "ai_sdk_only.jsonl")
    cassette = build([only_sdk])
    assert len(cassette.interactions) == 12
    assert {e.source for e in cassette.interactions} == {"ai-sdk"}
    dump(cassette, tmp_path / "built.json")
    doctor = _doctor(only_sdk)
    assert "ai: 12 model calls · 0 exactly · 12 semantically · 0 not replayable" in doctor
    exchanges = list(read_exchanges(_requests()))
    assert len(exchanges) == 12  # one per call: the gateway's exact span wins
    assert {e.source for e in exchanges} == {"otel-replay"}


def test_doctor_names_a_provider_whose_requests_are_not_rebuilt(tmp_path):
    # @ai-sdk/google sends the tool schemas converted to OpenAPI's dialect: its calls are
    # model calls the form cannot give back, and say so
    google = TRACES / "ai_sdk_google.jsonl"
    doctor = _doctor(google, code=1)  # nothing it could replay
    assert "ai: 2 model calls · 0 exactly · 0 semantically · 2 not replayable" in doctor
    assert (
        "2 × the AI SDK's google.generative-ai requests are not rebuilt from its spans"
        " — record the agent through the gateway"
    ) in doctor
    built = _run("build", str(google), "-o", str(tmp_path / "c.json"), code=1)
    assert "google.generative-ai requests are not rebuilt" in built


def _anthropic_turn(custom: dict[str, object]) -> Exchange:
    """The exchange of an ``anthropic.messages`` span whose assistant turn holds ``custom``."""
    call = {"type": "tool-call", "toolCallId": "toolu_1", "toolName": "w", "input": {}}
    result = {
        "type": "tool-result",
        "toolCallId": "toolu_1",
        "toolName": "w",
        "output": {"type": "text", "value": "sunny"},
    }
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Paris"}]},
        {"role": "assistant", "content": [custom, call]},
        {"role": "tool", "content": [result]},
    ]
    attrs = {
        "ai.model.provider": "anthropic.messages",
        "ai.model.id": "claude-sonnet-4-5",
        "ai.operationId": "ai.streamText.doStream",
        "ai.prompt.messages": json.dumps(messages),
        "ai.response.text": "done",
    }
    found = ai_sdk.read(Span(name="ai.streamText.doStream"), attrs, ())
    assert found is not None
    return found


def test_a_custom_part_is_sent_as_the_anthropic_provider_sends_it():
    # AI SDK 7 (its legacy ai.* integration too) keeps a streamed answer's start as a
    # custom part of the next turn; @ai-sdk/anthropic sends none but a fallback's
    start = {"type": "custom", "kind": "anthropic.message_start", "providerOptions": {}}
    assert _anthropic_turn(start).request.messages[1]["parts"] == [
        {"type": "tool_call", "id": "toolu_1", "name": "w", "arguments": {}}
    ]
    fallback = {
        "type": "custom",
        "kind": "anthropic.fallback",
        "providerOptions": {"anthropic": {"from": {"model": "a"}, "to": {"model": "b"}}},
    }
    parts = _anthropic_turn(fallback).request.messages[1]["parts"]
    assert parts[0]["type"] == "fallback"
    assert (parts[0]["from"], parts[0]["to"]) == ({"model": "a"}, {"model": "b"})


# --- AI SDK 7 ------------------------------------------------------------------------------
#
# AI SDK 7's spans as a source: its OpenTelemetry integration (``@ai-sdk/otel``) writes
# the GenAI semantic conventions (``chat {model}`` spans under the scope ``gen_ai``, with
# ``gen_ai.input.messages``, ``gen_ai.system_instructions``, ``gen_ai.tool.definitions`` and
# ``gen_ai.output.messages``), no longer the ``ai.*`` attributes of AI SDK 4–6.
#
# ``traces/ai_sdk_v7.jsonl`` is a trace the real AI SDK 7 produced
# (``js/scripts/ai-sdk-trace.mjs`` run from ``js/test-ai7``: a tool-using agent on
# ``@ai-sdk/openai``'s Chat and Responses models, on ``@ai-sdk/anthropic`` and on
# ``@ai-sdk/google``, streamed and not, recorded through the gateway against the stub
# upstream). It holds the gateway's own spans, with the exact bodies, beside the AI SDK's:
# each call read from the AI SDK's span must match the request the gateway saw, compared
# in what the form expresses.


def test_what_the_form_cannot_express_is_named_and_not_compared():
    calls = _read(GEN_AI, TRACE_V7, GEN_AI)
    for view in calls:
        assert "params" not in view.request.known  # max_tokens, tool_choice: provider defaults
        assert view.raw_request is None  # rebuilt, not the bytes sent
        assert "tool-definitions" in view.request.views  # no strict flag, no provider options
    # the system prompt went to the Responses API as an input message, not `instructions`
    responses = [v for v in calls if v.operation == "responses"]
    assert all("system-placement" in v.request.views for v in responses)
    # Anthropic's streamed answer gave the next turn a provider part kept as its type alone
    bare = [v for v in calls if "bare-parts" in v.request.views]
    assert [(v.provider, v.stream) for v in bare] == [("anthropic", True)]
    assert {"type": "custom"} in bare[0].request.messages[1]["parts"]


def _with_text(request: CanonicalRequest, role: str, text: str) -> CanonicalRequest:
    """``request`` with its first ``role`` message saying ``text``."""
    messages = list(request.messages or ())
    index = next(i for i, m in enumerate(messages) if m["role"] == role)
    messages[index] = {**messages[index], "parts": [{"type": "text", "content": text}]}
    return replace(request, messages=messages)


def test_what_the_form_expresses_still_counts():
    for view, exact in zip(
        _read(GEN_AI, TRACE_V7, GEN_AI), _read("gateway", TRACE_V7, GEN_AI), strict=True
    ):
        lyon = _with_text(exact.request, "user", "Lyon")
        assert _differences(view.request, lyon) == {"messages"}
        if view.operation == "responses":
            # the AI SDK sends the system prompt as the first input message
            at_length = _with_text(exact.request, "system", "You answer at length.")
            assert _differences(view.request, at_length) == {"system"}


def test_build_and_doctor_read_the_ai_sdk_7_spans_alone(tmp_path):
    only_sdk = _only_scope(TRACE_V7, GEN_AI, tmp_path / "ai_sdk_7_only.jsonl")
    cassette = build([only_sdk])
    calls = [e for e in cassette.interactions if e.provider != "mcp"]
    assert len(calls) == 16
    assert {e.source for e in calls} == {"genai-semconv"}
    doctor = _doctor(only_sdk)
    assert "gen_ai: 16 model calls · 0 exactly · 16 semantically · 0 not replayable" in doctor
    assert (
        "compared only in what the trace's form expresses: bare-parts (1),"
        " system-placement (4), tool-definitions (16), tool-results (8)"
    ) in doctor
