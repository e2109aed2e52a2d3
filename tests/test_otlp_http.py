"""OTLP/HTTP receiver against real peers: the OpenTelemetry SDK's exporters and aiohttp."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import logging
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.otlp import codec
from otel_replay.otlp import files as otlp_files
from otel_replay.otlp.routes import add_otlp_routes
from otel_replay.otlp.store import TraceStore

MAX_BODY = 64 * 1024
PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}


@dataclass
class Receiver:
    url: str
    store: TraceStore
    path: Path

    def span_names(self) -> list[str]:
        return [
            s.name
            for r in otlp_files.iter_trace_requests(self.path)
            for *_, s in codec.iter_spans(r)
        ]


@contextlib.asynccontextmanager
async def serve(tmp_path: Path, **runner_options: object) -> AsyncIterator[Receiver]:
    path = tmp_path / "traces.jsonl"
    store = TraceStore.beside(path)
    app = web.Application(client_max_size=1024**3)
    add_otlp_routes(app, store, max_body=MAX_BODY)
    runner = web.AppRunner(app, **runner_options)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield Receiver(f"http://{host}:{port}", store, path)
    finally:
        await runner.cleanup()
        store.close()


@pytest.fixture
async def receiver(tmp_path: Path) -> AsyncIterator[Receiver]:
    async with serve(tmp_path) as running:
        yield running


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def sdk_spans(*names: str) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests")
    with tracer.start_as_current_span("root"):
        for name in names:
            with tracer.start_as_current_span(name) as span:
                span.set_attribute("gen_ai.request.model", "gpt-4o")
                span.add_event("evt", {"n": 1})
    provider.shutdown()
    return list(memory.get_finished_spans())


def proto_body(*names: str, span_id: bytes | None = None) -> bytes:
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    for i, name in enumerate(names, 1):
        ss.spans.add(trace_id=bytes([7] * 16), span_id=span_id or bytes([i] * 8), name=name)
    return request.SerializeToString()


async def export_spans(url: str, names: tuple[str, ...], **kwargs: object) -> SpanExportResult:
    exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=5, **kwargs)
    try:
        return await asyncio.to_thread(exporter.export, sdk_spans(*names))
    finally:
        exporter.shutdown()


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
async def test_sdk_span_exporter_over_http(receiver: Receiver, compression: Compression) -> None:
    result = await export_spans(receiver.url, ("chat a", "chat b"), compression=compression)
    assert result is SpanExportResult.SUCCESS
    assert sorted(receiver.span_names()) == ["chat a", "chat b", "root"]
    assert receiver.store.spans_received == 3
    [line] = receiver.path.read_text().splitlines()
    doc = json.loads(line)
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and int(span["traceId"], 16)


async def test_sdk_log_exporter_over_http(receiver: Receiver) -> None:
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    provider.get_logger("tests").emit(body="hello", attributes={"k": "v"})
    provider.shutdown()
    exporter = OTLPLogExporter(endpoint=f"{receiver.url}/v1/logs", timeout=5)
    result = await asyncio.to_thread(exporter.export, list(memory.get_finished_logs()))
    exporter.shutdown()
    assert result is LogRecordExportResult.SUCCESS
    assert receiver.store.logs_received == 1
    [request] = list(otlp_files.iter_log_requests(receiver.path.with_name("traces.logs.jsonl")))
    record = request.resource_logs[0].scope_logs[0].log_records[0]
    assert record.body.string_value == "hello"


async def test_sdk_metric_exporter_over_http(receiver: Receiver) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    provider.get_meter("tests").create_counter("calls").add(3, {"model": "gpt-4o"})
    data = reader.get_metrics_data()
    provider.shutdown()
    exporter = OTLPMetricExporter(endpoint=f"{receiver.url}/v1/metrics", timeout=5)
    result = await asyncio.to_thread(exporter.export, data)
    exporter.shutdown()
    assert result is MetricExportResult.SUCCESS
    assert receiver.store.metric_points_received == 1
    assert "calls" in receiver.path.with_name("traces.metrics.jsonl").read_text()


@pytest.mark.parametrize("encoding", ["gzip", "deflate", None])
async def test_json_bodies(
    receiver: Receiver, client: aiohttp.ClientSession, encoding: str | None
) -> None:
    request = ExportTraceServiceRequest.FromString(proto_body("json span"))
    body = codec.json_line(request).encode()
    headers = dict(JSON)
    if encoding == "gzip":
        body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
    elif encoding == "deflate":
        body, headers["Content-Encoding"] = zlib.compress(body), "deflate"
    async with client.post(f"{receiver.url}/v1/traces", data=body, headers=headers) as resp:
        assert resp.status == 200
        assert resp.content_type == "application/json"
        assert await resp.json() == {}
    assert receiver.span_names() == ["json span"]


@pytest.mark.parametrize("auto_decompress", [True, False])
async def test_gzip_and_deflate_whoever_decodes_them(
    tmp_path: Path, client: aiohttp.ClientSession, auto_decompress: bool
) -> None:
    body = proto_body("compressed")
    async with serve(tmp_path, auto_decompress=auto_decompress) as receiver:
        url = f"{receiver.url}/v1/traces"
        for encoding, data in [
            ("gzip", gzip.compress(body)),
            ("deflate", zlib.compress(body)),
            ("deflate", zlib.compress(body, wbits=-zlib.MAX_WBITS)),
        ]:
            headers = {**PROTOBUF, "Content-Encoding": encoding}
            assert (await post(client, url, data, headers))[0] == 200, encoding
        assert receiver.span_names() == ["compressed"] * 3
        if not auto_decompress:
            bomb = gzip.compress(b"\x00" * (4 * MAX_BODY))
            headers = {**PROTOBUF, "Content-Encoding": "gzip"}
            assert (await post(client, url, bomb, headers))[0] == 413
            headers = {**PROTOBUF, "Content-Encoding": "gzip"}
            assert (await post(client, url, gzip.compress(body)[:-9], headers))[0] == 400


async def post(
    client: aiohttp.ClientSession, url: str, body: object, headers: dict[str, str]
) -> tuple[int, str, bytes]:
    async with client.post(url, data=body, headers=headers) as resp:
        return resp.status, resp.content_type, await resp.read()


def status_of(content_type: str, body: bytes) -> status_pb2.Status:
    if content_type == "application/json":
        doc = json.loads(body)
        return status_pb2.Status(code=doc["code"], message=doc["message"])
    return status_pb2.Status.FromString(body)


async def chunked(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), 16 * 1024):
        yield data[start : start + 16 * 1024]


BAD_REQUESTS = {
    "truncated protobuf": (lambda: proto_body("x" * 50)[:-10], PROTOBUF, 400),
    "wrong content type": (lambda: proto_body("x"), {"Content-Type": "text/plain"}, 415),
    "unknown encoding": (
        lambda: proto_body("x"),
        {**PROTOBUF, "Content-Encoding": "compress"},
        415,
    ),
    "invalid gzip": (lambda: b"\x1f\x8bnot gzip", {**PROTOBUF, "Content-Encoding": "gzip"}, 400),
    "truncated gzip": (
        lambda: gzip.compress(proto_body("x"))[:-12],
        {**PROTOBUF, "Content-Encoding": "gzip"},
        400,
    ),
    "invalid JSON": (lambda: b'{"resourceSpans": [', JSON, 400),
    "JSON of the wrong shape": (lambda: b'{"resourceSpans": {"a": 1}}', JSON, 400),
    "oversized": (lambda: b"\x00" * (MAX_BODY + 1), PROTOBUF, 413),
    "oversized chunked": (lambda: chunked(b"\x00" * (4 * MAX_BODY)), PROTOBUF, 413),
    "gzip bomb": (
        lambda: gzip.compress(b"\x00" * (4 * MAX_BODY)),
        {**PROTOBUF, "Content-Encoding": "gzip"},
        413,
    ),
}


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
async def test_bad_requests_get_the_spec_answer_and_lose_nothing(
    receiver: Receiver, client: aiohttp.ClientSession, case: str
) -> None:
    make_body, headers, expected = BAD_REQUESTS[case]
    url = f"{receiver.url}/v1/traces"
    assert (await post(client, url, proto_body("before"), PROTOBUF))[0] == 200

    status, content_type, body = await post(client, url, make_body(), headers)

    assert status == expected
    rpc_status = status_of(content_type, body)
    assert rpc_status.code in (3, 8) and rpc_status.message
    assert receiver.span_names() == ["before"]
    assert (await post(client, url, proto_body("after"), PROTOBUF))[0] == 200
    assert receiver.span_names() == ["before", "after"]


async def test_wrong_length_ids_are_a_partial_success(
    receiver: Receiver, client: aiohttp.ClientSession
) -> None:
    url = f"{receiver.url}/v1/traces"
    request = ExportTraceServiceRequest.FromString(proto_body("good", "bad id", "good too"))
    request.resource_spans[0].scope_spans[0].spans[1].span_id = b"\x01\x02\x03\x04\x05\x06\x07"
    status, _, body = await post(client, url, request.SerializeToString(), PROTOBUF)
    assert status == 200
    partial = ExportTraceServiceResponse.FromString(body).partial_success
    assert partial.rejected_spans == 1
    assert "spanId is 7 bytes" in partial.error_message
    assert receiver.span_names() == ["good", "good too"]

    doc = codec.to_json(ExportTraceServiceRequest.FromString(proto_body("json good", "json bad")))
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["traceId"] = "abcdef"
    status, _, body = await post(client, url, json.dumps(doc), JSON)
    assert status == 200
    assert json.loads(body)["partialSuccess"]["rejectedSpans"] == "1"
    assert receiver.span_names()[-1] == "json good"
    assert receiver.store.spans_received == 3


async def test_log_records_with_bad_ids_are_rejected(
    receiver: Receiver, client: aiohttp.ClientSession
) -> None:
    doc = {
        "resourceLogs": [
            {"scopeLogs": [{"logRecords": [{"body": {"stringValue": "ok"}}, {"traceId": "ab"}]}]}
        ]
    }
    status, _, body = await post(client, f"{receiver.url}/v1/logs", json.dumps(doc), JSON)
    assert status == 200
    assert json.loads(body)["partialSuccess"]["rejectedLogRecords"] == "1"
    assert receiver.store.logs_received == 1
    status, _, body = await post(client, f"{receiver.url}/v1/logs", b"", PROTOBUF)
    assert status == 200 and ExportLogsServiceResponse.FromString(body) == (
        ExportLogsServiceResponse()
    )


async def test_a_failing_store_is_answered_not_raised(
    receiver: Receiver, client: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(receiver.store, "write_traces", broken)
    status, content_type, body = await post(
        client, f"{receiver.url}/v1/traces", proto_body("x"), PROTOBUF
    )
    assert status == 500
    assert status_of(content_type, body).code == 13


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_corrupt_compressed_body_is_a_quiet_400(
    receiver: Receiver,
    client: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    encoding: str,
) -> None:
    headers = {**PROTOBUF, "Content-Encoding": encoding}
    with caplog.at_level(logging.DEBUG):
        status, content_type, body = await post(
            client, f"{receiver.url}/v1/traces", b"\x1f\x8b\x08\x00not-compressed" * 10, headers
        )
        await asyncio.sleep(0.05)  # let the server finish with the connection
    assert status == 400
    message = status_of(content_type, body).message
    assert message.startswith("unreadable body: Error -3 while decompressing data"), message
    noisy = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert noisy == [], [r.getMessage() for r in noisy]
    assert receiver.store.spans_received == 0
