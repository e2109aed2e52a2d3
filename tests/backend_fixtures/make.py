"""Writes the Jaeger and Tempo answers in this folder from a real agent's trace: the
OpenInference-instrumented ``openai`` agent of ``third_party_agents`` runs once against
the stub upstream under a root span, and its spans are written in each API's documented
response shape. Run from the repository root:
``PYTHONPATH=.:tests python tests/backend_fixtures/make.py``."""

from __future__ import annotations

import base64
import json
import sys
import tempfile
from pathlib import Path

from third_party_agents import instrumentor, run_openai_agent, traced

from otel_replay.otlp.codec import to_json, traces_from_json
from otel_replay.testing.stub import run_stub

HERE = Path(__file__).resolve().parent


def agent_trace() -> dict:
    """The agent's spans as one OTLP JSON document (hex ids), all in one trace."""
    with tempfile.TemporaryDirectory() as tmp:
        with run_stub() as stub, traced(Path(tmp), [instrumentor("openinference-openai")]) as out:
            tracer = out.tracer_provider.get_tracer("weather-agent")
            with tracer.start_as_current_span("weather-agent run"):
                run_openai_agent(stub.openai_url)
        merged = None
        for line in out.traces.read_text().splitlines():
            request = traces_from_json(line)
            if merged is None:
                merged = request
            else:
                merged.MergeFrom(request)
    return to_json(merged)


def b64(doc: object) -> object:
    """The same document with trace and span ids in base64 (proto3 JSON for bytes)."""
    if isinstance(doc, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode()
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str) and v
            else b64(v)
            for k, v in doc.items()
        }
    if isinstance(doc, list):
        return [b64(v) for v in doc]
    return doc


def main() -> int:
    doc = agent_trace()
    write("jaeger-api-v3-trace.json", {"result": doc})
    write("tempo-api-v2-trace.json", {"trace": b64(doc), "status": "complete"})
    write("tempo-api-v1-trace.json", {"batches": b64(doc)["resourceSpans"]})
    return 0


def write(name: str, doc: object) -> None:
    (HERE / name).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
