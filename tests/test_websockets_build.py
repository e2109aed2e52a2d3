"""``build`` reads what production traces of a WebSocket API carry: OpenLLMetry's
Realtime spans (``openai.realtime``, one per response, inside an ``openai.session`` span)
under the lossy-source rule, and the cassette replays the session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.cassette.model import load
from otel_replay.gateway.runner import GatewayConfig, GatewayThread
from otel_replay.otlp import codec
from otel_replay.pipeline.build import build_file
from otel_replay.testing.stub import run_stub

KEY = "sk-test-websockets-0123456789"
PROMPT = "what is the weather?"


async def beta_session(url: str) -> Any:
    """A text session of the Realtime API's beta interface, the one OpenLLMetry traces."""
    ws_url = url.replace("http://", "ws://")  # the beta interface dials wss:// unless told
    client = openai.AsyncOpenAI(
        api_key=KEY, base_url=f"{url}/v1", websocket_base_url=f"{ws_url}/v1", max_retries=0
    )
    text = ""
    async with client.beta.realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(
            session={"instructions": "Be brief.", "modalities": ["text"]}
        )
        await connection.conversation.item.create(
            item={
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": PROMPT}],
            }
        )
        await connection.response.create()
        async for event in connection:
            if event.type in ("response.output_text.delta", "response.text.delta"):
                text += getattr(event, "delta", "")
            elif event.type == "error":
                return ("error", event.error.message)
            elif event.type == "response.done":
                break
    return text


# OpenLLMetry's module defines a pydantic model the old way as it loads
@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20")
def test_build_reads_openllmetrys_realtime_spans_and_the_session_replays(tmp_path: Path):
    exporter, tracing = InMemorySpanExporter(), TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracing)
    try:
        with run_stub() as stub:  # production: straight to the provider, traced
            produced = asyncio.run(beta_session(stub.url))
    finally:
        instrumentor.uninstrument()
    tracing.shutdown()
    assert produced == f"stub reply to: {PROMPT}"
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == ["openai.realtime", "openai.session"]
    traces, cassette = tmp_path / "traces.jsonl", tmp_path / "built.json"
    traces.write_text(json.dumps(codec.to_json(encode_spans(spans))) + "\n")
    build_file([traces], cassette)
    (interaction,) = load(cassette).interactions  # the response; the session is no call
    assert (interaction.provider, interaction.operation) == ("openai", "realtime")
    assert interaction.request.endpoint == "/v1/realtime"
    config = GatewayConfig(mode="strict", cassette=cassette)
    with GatewayThread(config) as gateway:
        assert gateway.server is not None
        replayed = asyncio.run(beta_session(f"http://127.0.0.1:{gateway.server.port}"))
        summary = gateway.stop()
    assert replayed == produced
    assert (summary.replayed, summary.misses) == (1, [])
