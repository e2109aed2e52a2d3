"""The trace store: append-only OTLP JSON lines, redacted, flushed per batch, thread-safe."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.otlp import attributes as otlp_attributes
from otel_replay.otlp import codec
from otel_replay.otlp import files as otlp_files
from otel_replay.otlp.store import TraceStore, sibling
from otel_replay.redaction.redact import Redactor

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


def traces(*names: str, attr: str = "x") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    for i, name in enumerate(names, 1):
        span = ss.spans.add(trace_id=bytes([i] * 16), span_id=bytes([i] * 8), name=name)
        span.attributes.extend(otlp_attributes.dict_to_attributes({"attr": attr}))
    return request


def logs(n: int) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    sl = request.resource_logs.add().scope_logs.add()
    for i in range(n):
        sl.log_records.add().body.string_value = f"log {i}"
    return request


def metrics(points: int) -> ExportMetricsServiceRequest:
    request = ExportMetricsServiceRequest()
    sm = request.resource_metrics.add().scope_metrics.add()
    gauge = sm.metrics.add(name="g").gauge
    for i in range(points):
        gauge.data_points.add(as_int=i)
    sm.metrics.add(name="h").histogram.data_points.add(count=1)
    return request


def replace_secret(value: Any) -> Any:
    """A stand-in for ``Redactor.json``: walks a JSON value, rewriting strings."""
    if isinstance(value, dict):
        return {k: replace_secret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_secret(v) for v in value]
    if isinstance(value, str):
        return value.replace(SECRET, "<OPENAI_API_KEY>")
    return value


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_sibling_paths() -> None:
    assert sibling("run/x.jsonl", "logs") == Path("run/x.logs.jsonl")
    assert sibling("x.json", "metrics") == Path("x.metrics.json")
    assert sibling("traces", "logs") == Path("traces.logs.jsonl")
    store = TraceStore.beside("out/t.jsonl")
    assert store.logs_path == Path("out/t.logs.jsonl")
    assert store.metrics_path == Path("out/t.metrics.jsonl")


def test_appends_one_line_per_batch_and_counts(tmp_path: Path) -> None:
    store = TraceStore.beside(tmp_path / "deep" / "dir" / "t.jsonl")
    assert not (tmp_path / "deep").exists()  # opened lazily
    store.write_traces(traces("a", "b"))
    store.write_traces(traces("mine"), received=False)
    store.write_logs(logs(3))
    store.write_metrics(metrics(4))
    # Flushed per call: readable before close.
    lines = read_lines(tmp_path / "deep" / "dir" / "t.jsonl")
    assert len(lines) == 2
    assert lines[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == "01" * 16
    assert [r for r in otlp_files.iter_trace_requests(tmp_path / "deep" / "dir" / "t.jsonl")] == [
        traces("a", "b"),
        traces("mine"),
    ]
    assert len(read_lines(tmp_path / "deep" / "dir" / "t.logs.jsonl")) == 1
    assert len(read_lines(tmp_path / "deep" / "dir" / "t.metrics.jsonl")) == 1
    assert (store.spans_received, store.logs_received, store.metric_points_received) == (2, 3, 5)
    store.close()
    store.write_traces(traces("after close"))
    store.close()
    assert len(read_lines(tmp_path / "deep" / "dir" / "t.jsonl")) == 3


def test_redacts_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceStore(path, redact=replace_secret) as store:
        store.write_traces(traces("a", attr=f"Bearer {SECRET}"))
    text = path.read_text()
    assert SECRET not in text
    assert "Bearer <OPENAI_API_KEY>" in text


def test_none_paths_count_without_writing(tmp_path: Path) -> None:
    store = TraceStore(None)
    store.write_traces(traces("a"))
    store.write_logs(logs(2))
    store.write_metrics(metrics(1))
    assert (store.spans_received, store.logs_received, store.metric_points_received) == (1, 2, 2)
    store.close()
    assert list(tmp_path.iterdir()) == []


def test_empty_batches_are_not_written(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceStore(path) as store:
        store.write_traces(ExportTraceServiceRequest())
    assert not path.exists()


def test_a_cut_last_line_does_not_swallow_the_next(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(codec.json_line(traces("old")) + "\n" + codec.json_line(traces("cut"))[:30])
    with TraceStore(path) as store:
        store.write_traces(traces("new"))
    errors: list[Exception] = []
    got = list(otlp_files.iter_trace_requests(path, on_error=errors.append))
    assert got == [traces("old"), traces("new")]
    assert len(errors) == 1


def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    store = TraceStore(path)
    big = "y" * 20_000

    def write(worker: int) -> None:
        for i in range(25):
            store.write_traces(traces(f"w{worker}-{i}", attr=big))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()
    lines = read_lines(path)
    assert len(lines) == 100
    assert store.spans_received == 100


def test_secrets_in_bytes_attributes_and_log_bodies_never_reach_the_file(tmp_path: Path) -> None:
    redactor = Redactor()
    store = TraceStore(
        tmp_path / "t.jsonl",
        tmp_path / "t.logs.jsonl",
        None,
        redact=redactor.json,
        redact_text=redactor.text,
    )
    request = traces("with-bytes")
    span = request.resource_spans[0].scope_spans[0].spans[0]
    span.attributes.extend(otlp_attributes.dict_to_attributes({"payload": SECRET.encode()}))
    store.write_traces(request)
    log_request = logs(1)
    record = log_request.resource_logs[0].scope_logs[0].log_records[0]
    record.body.bytes_value = f"key={SECRET}".encode()
    store.write_logs(log_request)
    store.close()
    for name in ("t.jsonl", "t.logs.jsonl"):
        text = (tmp_path / name).read_text()
        assert SECRET not in text
        assert base64.b64encode(SECRET.encode()).decode() not in text
    [stored] = list(otlp_files.iter_trace_requests(tmp_path / "t.jsonl"))
    attrs = otlp_attributes.attributes_to_dict(
        stored.resource_spans[0].scope_spans[0].spans[0].attributes
    )
    assert attrs["payload"] == b"[REDACTED:openai-key]"
    [stored_logs] = list(otlp_files.iter_log_requests(tmp_path / "t.logs.jsonl"))
    body = stored_logs.resource_logs[0].scope_logs[0].log_records[0].body.bytes_value
    assert body == b"[REDACTED:openai-key]"  # the whole encoded value became the placeholder
