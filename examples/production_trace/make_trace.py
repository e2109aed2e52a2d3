"""Make ``trace.jsonl``: what a production OpenTelemetry Collector's file exporter writes
for one run of the support agent, instrumented with OpenInference.

The "production" model here is otel-replay's stub upstream, so the file can be remade
offline: ``python examples/production_trace/make_trace.py``. The Collector writes one
OTLP JSON ``ExportTraceServiceRequest`` per line; so does this script.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.otlp import codec
from otel_replay.testing.stub import run_stub

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from support_agent import run  # noqa: E402


def make_trace(path: Path = HERE / "trace.jsonl") -> Path:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    try:
        with run_stub() as stub:
            os.environ["OPENAI_BASE_URL"] = stub.openai_url
            os.environ["OPENAI_API_KEY"] = "sk-production-example-not-a-key"
            print(run())
    finally:
        instrumentor.uninstrument()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    request = encode_spans(exporter.get_finished_spans())
    path.write_text(codec.dumps_line(codec.to_json(request)) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    print(f"wrote {make_trace()}")
