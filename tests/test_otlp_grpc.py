"""OTLP/gRPC receiver against the OpenTelemetry SDK's gRPC exporters and a raw grpc stub."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc import aio
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.core.errors import ConfigError
from otel_replay.otlp import codec
from otel_replay.otlp import files as otlp_files
from otel_replay.otlp.grpc import GrpcReceiver
from otel_replay.otlp.store import TraceStore


def sdk_spans(*names: str) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests")
    with tracer.start_as_current_span("root"):
        for name in names:
            with tracer.start_as_current_span(name) as span:
                span.set_attribute("gen_ai.request.model", "gpt-4o")
    provider.shutdown()
    return list(memory.get_finished_spans())


def proto_body(*names: str) -> bytes:
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    for i, name in enumerate(names, 1):
        ss.spans.add(trace_id=bytes([7] * 16), span_id=bytes([i] * 8), name=name)
    return request.SerializeToString()


class Running:
    def __init__(self, receiver: GrpcReceiver, store: TraceStore, path: Path, port: int) -> None:
        self.receiver, self.store, self.path, self.port = receiver, store, path, port
        self.endpoint = f"127.0.0.1:{port}"

    def span_names(self) -> list[str]:
        return [
            s.name
            for r in otlp_files.iter_trace_requests(self.path)
            for *_, s in codec.iter_spans(r)
        ]


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[Running]:
    path = tmp_path / "traces.jsonl"
    store = TraceStore.beside(path)
    receiver = GrpcReceiver(store)
    port = await receiver.start("127.0.0.1", 0)
    try:
        yield Running(receiver, store, path, port)
    finally:
        await receiver.stop(grace=0.1)
        store.close()


@pytest.mark.parametrize("compression", [None, grpc.Compression.Gzip])
async def test_sdk_span_exporter_over_grpc(
    running: Running, compression: grpc.Compression | None
) -> None:
    exporter = OTLPSpanExporter(
        endpoint=running.endpoint, insecure=True, timeout=5, compression=compression
    )
    try:
        result = await asyncio.to_thread(exporter.export, sdk_spans("chat a", "chat b"))
    finally:
        await asyncio.to_thread(exporter.shutdown)
    assert result is SpanExportResult.SUCCESS
    assert sorted(running.span_names()) == ["chat a", "chat b", "root"]
    assert running.store.spans_received == 3


async def test_sdk_log_and_metric_exporters_over_grpc(running: Running) -> None:
    memory = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger_provider.get_logger("tests").emit(body="hello grpc")
    logger_provider.shutdown()
    log_exporter = OTLPLogExporter(endpoint=running.endpoint, insecure=True, timeout=5)
    log_result = await asyncio.to_thread(log_exporter.export, list(memory.get_finished_logs()))
    await asyncio.to_thread(log_exporter.shutdown)

    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    meter_provider.get_meter("tests").create_histogram("latency").record(0.25)
    data = reader.get_metrics_data()
    meter_provider.shutdown()
    metric_exporter = OTLPMetricExporter(endpoint=running.endpoint, insecure=True, timeout=5)
    metric_result = await asyncio.to_thread(metric_exporter.export, data)
    await asyncio.to_thread(metric_exporter.shutdown)

    assert log_result is LogRecordExportResult.SUCCESS
    assert metric_result is MetricExportResult.SUCCESS
    assert (running.store.logs_received, running.store.metric_points_received) == (1, 1)
    assert "hello grpc" in running.path.with_name("traces.logs.jsonl").read_text()
    assert "latency" in running.path.with_name("traces.metrics.jsonl").read_text()


async def test_wrong_length_ids_are_a_partial_success(running: Running) -> None:
    async with aio.insecure_channel(running.endpoint) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        request = ExportTraceServiceRequest.FromString(proto_body("good", "bad"))
        request.resource_spans[0].scope_spans[0].spans[1].trace_id = b"\x01" * 15
        response = await stub.Export(request, timeout=5)
        assert response.partial_success.rejected_spans == 1
        assert "traceId is 15 bytes" in response.partial_success.error_message
        again = await stub.Export(ExportTraceServiceRequest.FromString(proto_body("next")))
        assert not again.HasField("partial_success")
    assert running.span_names() == ["good", "next"]


async def test_a_failing_store_is_an_internal_status(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(running.store, "write_traces", broken)
    async with aio.insecure_channel(running.endpoint) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        with pytest.raises(aio.AioRpcError) as info:
            await stub.Export(ExportTraceServiceRequest.FromString(proto_body("x")), timeout=5)
    assert info.value.code() is grpc.StatusCode.INTERNAL


async def test_start_twice_and_bad_address(running: Running) -> None:
    with pytest.raises(ConfigError, match="already started"):
        await running.receiver.start()
    other = GrpcReceiver(running.store)
    with pytest.raises(ConfigError, match="cannot bind"):
        await other.start("127.0.0.1", running.port)
    await other.stop()
