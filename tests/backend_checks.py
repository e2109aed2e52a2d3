"""What the ``build --from`` tests check of every backend: the command's outcome, its
one-line errors, and the built cassette replaying the agent strictly, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from third_party_agents import FINAL_TEXT, instrumentor, run_openai_agent, traced

from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.testing.stub import run_stub

METADATA = {"user": {"tier": "pro", "ids": [1, 2]}, "ticket": "INC-7"}
"""The OpenInference metadata of the agent run's root span (JSON text a backend may parse)."""


def otel_replay(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m otel_replay ARGS`` with ``env`` added to this environment."""
    return subprocess.run(
        [sys.executable, "-m", "otel_replay", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single line a usage or backend error prints, exit 2."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def replays_offline(cassette: Path, runs: int = 1) -> None:
    """The agent, run ``runs`` times against a strict replay of ``cassette`` with no
    upstream, gets the answer it got in production each time."""
    config = GatewayConfig(
        mode="strict", cassette=cassette, upstream_openai="http://127.0.0.1:9/v1"
    )
    with GatewayThread(config) as gw:
        results = [run_openai_agent(gw.env["OPENAI_BASE_URL"]) for _ in range(runs)]
        summary = gw.stop()
    assert summary.misses == [] and summary.replayed == 2 * runs and summary.live == 0
    assert [r.final_text for r in results] == [FINAL_TEXT] * runs


def export_agent_run(
    directory: Path, exporter: SpanExporter, instrumentation: str = "openinference-openai"
) -> str:
    """One run of the agent, instrumented by ``instrumentation``, against the stub
    upstream, under a root span carrying ``METADATA``, its spans exported by ``exporter``
    as each ends; the run's trace id."""
    with run_stub() as stub, traced(directory, [instrumentor(instrumentation)]) as out:
        out.tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = out.tracer_provider.get_tracer("weather-agent")
        with tracer.start_as_current_span("weather-agent run") as root:
            root.set_attribute("openinference.span.kind", "AGENT")
            root.set_attribute("metadata", json.dumps(METADATA))
            assert run_openai_agent(stub.openai_url).final_text == FINAL_TEXT
            return format(root.get_span_context().trace_id, "032x")


def agent_runs(
    otlp: str, runs: int, *, stream: bool = False, noise: bool = False, **instrumentation: str
) -> list[str]:
    """``runs`` runs of the instrumented agent against the stub upstream, each under a root
    span of its own, exporting over OTLP/HTTP to ``otlp``; the trace ids, in order. With
    ``noise``, a span that is no model call (``GET /invoice``, a trace of its own) goes
    along."""
    name = instrumentation.get("instrumentation", "openinference-openai")
    ids = []
    with run_stub() as stub, traced(Path(), [instrumentor(name)], otlp=otlp) as out:
        tracer = out.tracer_provider.get_tracer("weather-agent")
        for _ in range(runs):
            with tracer.start_as_current_span("weather-agent run") as root:
                ids.append(f"{root.get_span_context().trace_id:032x}")
                result = run_openai_agent(stub.openai_url, stream=stream)
                assert result.final_text == FINAL_TEXT
        if noise:
            tracer.start_span("GET /invoice").end()
    return ids
