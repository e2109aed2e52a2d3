"""``otel-replay doctor`` on traces that cannot be replayed as they are: the reason and
the setting that fixes it (the conformance suite checks the replayable ones through the
same summary ``build`` prints)."""

from __future__ import annotations

import json
import subprocess

from framework_agents import CLI, doctor, source
from third_party_agents import instrumentor, run_openai_agent, traced

from otel_replay.testing.stub import run_stub

V2 = source("opentelemetry.util.genai.handler", "opentelemetry-util-genai")
"""The scope of opentelemetry-instrumentation-openai-v2's spans."""
CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def _record(tmp_path, monkeypatch, **env):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.delenv(CAPTURE, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with run_stub() as stub, traced(tmp_path, [instrumentor("otel-openai-v2")]) as out:
        run_openai_agent(stub.openai_url)
    return out.traces


def test_content_capture_off_names_the_variable_to_set(tmp_path, monkeypatch):
    found = doctor([_record(tmp_path, monkeypatch)])
    assert found.returncode == 1
    assert found.stdout.splitlines() == [
        f"{V2}: 2 model calls · 0 exactly · 0 semantically · 2 not replayable",
        "  2 × message content not captured — set"
        " OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (SPAN_ONLY with"
        " OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental) for the OpenTelemetry"
        " GenAI instrumentations, TRACELOOP_TRACE_CONTENT=true for OpenLLMetry",
        "  bypass check: 2 model calls record no request text: a run tells them from the"
        " gateway's calls by their time alone",
    ]


def test_truncated_content_names_the_length_limit(tmp_path, monkeypatch):
    traces = _record(
        tmp_path,
        monkeypatch,
        **{CAPTURE: "SPAN_ONLY", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "60"},
    )
    found = subprocess.run(
        [*CLI, "doctor", "--json", str(traces)], capture_output=True, text=True, check=False
    )
    assert found.returncode == 1
    (only,) = json.loads(found.stdout)["sources"]
    assert (only["calls"], only["exact"], only["semantic"], only["not_replayable"]) == (2, 0, 0, 2)
    (problem,) = only["problems"]
    assert problem["calls"] == 2
    assert problem["reason"].startswith("message content truncated (gen_ai.")
    assert "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in problem["fix"]


def test_a_replayable_trace_is_healthy(tmp_path, monkeypatch):
    traces = _record(
        tmp_path, monkeypatch, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="SPAN_ONLY"
    )
    found = doctor([traces])
    assert found.returncode == 0, found.stdout
    assert found.stdout.splitlines()[0] == (
        f"{V2}: 2 model calls · 0 exactly · 2 semantically · 0 not replayable"
    )
