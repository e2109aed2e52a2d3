"""Source snippets the Gemini agent scripts of the tests share (each test writes its agent
to a file and runs it in a process of its own, with the real ``google-genai`` client)."""

from __future__ import annotations

import textwrap

INSTRUMENTED = textwrap.dedent(
    """
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    GoogleGenAiSdkInstrumentor().instrument()
    """
)
"""The OpenTelemetry SDK exporting over OTLP/HTTP (where the environment says) and the
Google GenAI instrumentation; the script calls ``provider.shutdown()`` at its end."""

WEATHER = textwrap.dedent(
    """
    from google.genai import types

    WEATHER = types.FunctionDeclaration(
        name="get_weather",
        description="Weather for a city",
        parameters_json_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    """
)
"""A function declaration ``WEATHER`` taking a required ``city``."""
