"""The AI SDK's spans as a source: ``ai.generateText.doGenerate`` / ``ai.streamText.doStream``
read back into the requests its providers sent.

``traces/ai_sdk.jsonl`` (AI SDK 6) and ``traces/ai_sdk_v4.jsonl`` (AI SDK 4, whose
prompt says ``args`` / ``result`` / ``parameters``) are traces the real AI SDK produced
(``js/scripts/ai-sdk-trace.mjs``: a tool-using agent on ``@ai-sdk/openai``'s Chat (and,
from AI SDK 5 on, Responses) models and on ``@ai-sdk/anthropic``, streamed and not,
recorded through the gateway against the stub upstream). Each holds the gateway's own
spans, with the exact bodies, beside the AI SDK's: each call read from the AI SDK's span
must match the request the gateway saw.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.cassette.model import dump
from otel_replay.core.exchange import Exchange
from otel_replay.matching.matcher import differences
from otel_replay.otlp.attributes import attributes_to_dict
from otel_replay.otlp.codec import iter_spans, json_line, traces_from_json
from otel_replay.pipeline.build import build
from otel_replay.readers import read_exchanges
from otel_replay.readers.registry import READERS, read_call

TRACES = Path(__file__).parent / "traces"
TRACE = TRACES / "ai_sdk.jsonl"
CHAT, RESPONSES, MESSAGES = ("openai", "chat"), ("openai", "responses"), ("anthropic", "messages")
FIXTURES = [
    pytest.param(TRACE, (CHAT, RESPONSES, MESSAGES), id="ai-sdk-6"),
    pytest.param(TRACES / "ai_sdk_v4.jsonl", (CHAT, MESSAGES), id="ai-sdk-4"),
]
AI_SDK = next(r for r in READERS if r.name == "ai-sdk")
OWN = next(r for r in READERS if r.name == "otel-replay")


def _requests(trace: Path = TRACE) -> list[ExportTraceServiceRequest]:
    return [traces_from_json(line) for line in trace.read_text().splitlines() if line.strip()]


def _read(scope: str, trace: Path = TRACE) -> list[Exchange]:
    reader = AI_SDK if scope == "ai" else OWN
    found = []
    for request in _requests(trace):
        for _resource, scope_, span in iter_spans(request):
            if (scope_.name == "ai") != (scope == "ai"):
                continue
            reading = read_call(span, attributes_to_dict(span.attributes), (), (reader,))
            if reading is not None:
                found.append(reading.exchange)
    return sorted(found, key=lambda e: e.start_ns)


@pytest.mark.parametrize(("trace", "apis"), FIXTURES)
def test_each_ai_sdk_call_reads_as_the_request_its_provider_sent(trace, apis):
    from_sdk, sent = _read("ai", trace), _read("gateway", trace)
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
        assert view.source == "ai-sdk"
        assert differences(view.request, exact.request) == {}


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


def test_build_reads_the_ai_sdk_spans_alone(tmp_path):
    # the AI SDK's telemetry without the gateway's spans: what a production trace holds
    only_sdk = tmp_path / "ai_sdk_only.jsonl"
    lines = []
    for request in _requests():
        for resource_spans in request.resource_spans:
            keep = [s for s in resource_spans.scope_spans if s.scope.name == "ai"]
            del resource_spans.scope_spans[:]
            resource_spans.scope_spans.extend(keep)
        lines.append(json_line(request))
    only_sdk.write_text("\n".join(lines) + "\n")
    cassette = build([only_sdk])
    assert len(cassette.interactions) == 12
    assert {e.source for e in cassette.interactions} == {"ai-sdk"}
    dump(cassette, tmp_path / "built.json")
    doctor = subprocess.run(
        [sys.executable, "-m", "otel_replay", "doctor", str(only_sdk)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "ai: 12 model calls · 0 exactly · 12 semantically · 0 not replayable" in doctor.stdout
    exchanges = list(read_exchanges(_requests()))
    assert len(exchanges) == 12  # one per call: the gateway's exact span wins
    assert {e.source for e in exchanges} == {"otel-replay"}
