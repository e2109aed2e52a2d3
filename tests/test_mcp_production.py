"""Tool results from production traces: a framework agent whose tools are MCP tools (the
OpenAI Agents SDK, traced by OpenInference's instrumentation) runs against the model and
the MCP server directly, exporting its spans; ``build`` makes a cassette of both halves
(the model calls from the LLM spans, the tool call from the TOOL span); a replay answers
the model calls and the tool call from it, the server only listing its tools. (The tool
declares no output schema: a trace keeps a tool's text, not the structured content a
declared schema asks the client to check.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mcp_weather
from mcp_weather import serving

from otel_replay.cassette.model import load
from otel_replay.testing.stub import run_stub

AGENT = [sys.executable, str(Path(__file__).parent / "mcp_apps" / "openai_agents_mcp.py")]
CLI = [sys.executable, "-m", "otel_replay"]


def run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_a_production_trace_builds_a_cassette_that_replays_both_halves(tmp_path: Path) -> None:
    traces, cassette = tmp_path / "production.jsonl", tmp_path / "built.json"
    with serving(structured=False) as url, run_stub() as stub:
        # production: the agent reaches the model and the server itself; the gateway only
        # collects its spans (as a collector would)
        prod = run(
            [
                *("record", "--cassette", str(tmp_path / "unused.json")),
                # production has no otel-replay: the agent's own tools are not hooked
                *("--tools", "live", "--traces", str(traces), "--", *AGENT, "Paris"),
            ],
            AGENT_MODEL_URL=stub.openai_url,
            AGENT_MCP_URL=url,
        )
        assert mcp_weather.calls == [("Paris", 1)]
    assert prod.returncode == 0, prod.stderr
    assert prod.stdout.strip() == "stub reply to: sunny in Paris for 1 day (call 1)"
    assert "0 live" in prod.stderr  # nothing went through the gateway but telemetry

    doctor = run(["doctor", str(traces)])
    assert "1 tool call · 1 with arguments and result captured" in doctor.stdout
    built = run(["build", str(traces), "-o", str(cassette), "--quiet"])
    assert built.returncode == 0, built.stderr
    tools = load(cassette).tools
    assert [(t.request.endpoint, t.request.model, t.source) for t in tools] == [
        ("/mcp/", "get_forecast", "openinference")
    ]
    assert tools[0].request.params["arguments"] == {"city": "Paris"}

    # (the instrumentation records the client's base URL among the call's settings: not a
    # parameter of the API, so it is kept as context and the replay needs no rule)
    calls = load(cassette).interactions
    assert all("base_url" in i.context and "base_url" not in i.request.params for i in calls)
    with serving(structured=False) as url:  # the model upstream is gone; the server lists
        rep = run(
            [
                *("replay", "--cassette", str(cassette), "--mode", "auto"),
                *("--mcp", f"weather={url}", "--", *AGENT, "Paris"),
            ]
        )
        assert mcp_weather.calls == []  # the tool's answer came from the trace
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == prod.stdout
    assert "otel-replay: 2 replayed · 0 live · 0 misses · 1 tool call replayed ·" in rep.stderr


def test_doctor_says_when_tool_content_was_not_captured(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_replay.otlp import codec
    from otel_replay.readers.tools import FIX_GENAI, FIX_MCP_SDK

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("my-agent", "1.0")
    with tracer.start_as_current_span("execute_tool get_forecast") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", "get_forecast")
    with tracer.start_as_current_span("tools/call get_forecast") as span:
        span.set_attribute("mcp.method.name", "tools/call")
    provider.shutdown()
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    traces = tmp_path / "t.jsonl"
    doc = codec.to_json(encode_spans(exporter.get_finished_spans()))
    import json

    traces.write_text(json.dumps(doc) + "\n")
    doctor = run(["doctor", str(traces)])
    assert "2 tool calls · 0 with arguments and result captured" in doctor.stdout
    assert f"1 × tool content not captured — {FIX_GENAI}" in doctor.stdout
    assert f"1 × tool content not captured — {FIX_MCP_SDK}" in doctor.stdout
