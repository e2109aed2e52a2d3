"""4. OTLP ingest: spans per second into the trace store over OTLP/HTTP protobuf and
OTLP/gRPC, against bare decoding of the same ExportTraceServiceRequest bytes plus writing
the same JSON lines (``otel_replay.otlp.codec``) in this process.

The gateway runs in a subprocess with its trace store on disk; batches of 512 typical agent
spans are sent 4 in flight.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import aiohttp
import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from benchmarks._common import Results, Server, drive, sized
from otel_replay.otlp import attributes as otlp_attributes
from otel_replay.otlp import codec

BATCH = 512
BATCHES = sized(60, 4)
IN_FLIGHT = 4


def agent_batch(seed: int, size: int = BATCH) -> ExportTraceServiceRequest:
    """Spans as an instrumented agent exports them: tool calls, HTTP calls, agent steps."""
    spans = []
    trace_id = seed.to_bytes(16, "big")
    for i in range(size):
        span = Span(
            trace_id=trace_id,
            span_id=(seed * 100_000 + i + 1).to_bytes(8, "big"),
            parent_span_id=(seed * 100_000 + 1).to_bytes(8, "big") if i else b"",
            name=("execute_tool get_weather", "GET /api/items", "agent.step")[i % 3],
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=1_700_000_000_000_000_000 + i * 1000,
            end_time_unix_nano=1_700_000_000_000_500_000 + i * 1000,
        )
        span.attributes.extend(
            otlp_attributes.dict_to_attributes(
                {
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": f"call_{seed}_{i}",
                    "http.request.method": "GET",
                    "url.full": f"https://api.example.com/items/{i}?page=2",
                    "http.response.status_code": 200,
                    "agent.step": i,
                    "agent.input": "Look up the weather in Paris and summarise it briefly.",
                }
            )
        )
        spans.append(span)
    resource = Resource(
        attributes=otlp_attributes.dict_to_attributes({"service.name": "bench-agent"})
    )
    scope = ScopeSpans(scope=InstrumentationScope(name="bench"), spans=spans)
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[scope])]
    )


def bare_rate(payloads: list[bytes], path: Path) -> float:
    """Decode each batch and append its JSON line, flushed per batch; spans per second."""
    started = time.perf_counter()
    spans = 0
    with open(path, "ab") as out:
        for data in payloads:
            msg = codec.traces_from_proto(data)
            spans += codec.count_spans(msg)
            out.write((codec.json_line(msg) + "\n").encode("utf-8"))
            out.flush()
    return spans / (time.perf_counter() - started)


async def http_rate(url: str, payloads: list[bytes]) -> float:
    headers = {"content-type": "application/x-protobuf"}
    async with aiohttp.ClientSession() as session:

        async def send(i: int) -> None:
            async with session.post(url, data=payloads[i], headers=headers) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"OTLP/HTTP answered {r.status}")

        timing = await drive(send, len(payloads), IN_FLIGHT)
    return len(payloads) * BATCH / timing.wall


async def grpc_rate(port: int, batches: list[ExportTraceServiceRequest]) -> float:
    async with grpc.aio.insecure_channel(
        f"127.0.0.1:{port}",
        options=[("grpc.max_send_message_length", 64 * 1024 * 1024)],
    ) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]
        await stub.Export(batches[0])

        async def send(i: int) -> None:
            await stub.Export(batches[i])

        timing = await drive(send, len(batches), IN_FLIGHT)
    return len(batches) * BATCH / timing.wall


async def run(results: Results) -> None:
    batches = [agent_batch(seed + 1) for seed in range(BATCHES)]
    payloads = [b.SerializeToString() for b in batches]
    with tempfile.TemporaryDirectory() as tmp:
        bare_rate(payloads[:5], Path(tmp) / "warm.jsonl")
        bare = bare_rate(payloads, Path(tmp) / "bare.jsonl")
        with Server(kind="gateway", mode="record", traces=Path(tmp) / "t.jsonl", grpc=True) as gw:
            await http_rate(gw.url + "/v1/traces", payloads[:5])
            http = await http_rate(gw.url + "/v1/traces", payloads)
            grpc_spans = await grpc_rate(gw.grpc_port or 0, batches)
        bare_again = bare_rate(payloads, Path(tmp) / "bare2.jsonl")
        size = os.path.getsize(Path(tmp) / "t.jsonl")
    bare = max(bare, bare_again)
    results.notes.append(
        f"4 ingest: {BATCHES} batches of {BATCH} spans per protocol; trace store "
        f"{size / 1e6:.1f} MB. The store redacts each batch (the bare baseline does not)."
    )
    for name, rate in (("OTLP/HTTP protobuf", http), ("OTLP/gRPC", grpc_spans)):
        ratio = bare / rate
        results.add(
            "4 ingest",
            f"{name} into the trace store vs bare decode + JSON line (time per span)",
            f"{rate:,.0f} spans/s",
            f"{bare:,.0f} spans/s",
            ratio,
            "<= 2x",
            ratio <= 2.0,
            basis="decode + JSON line in-process",
        )
