"""OTLP protobuf ⇄ OTLP JSON, trace-file reading and attribute helpers.

The JSON form is the one the OpenTelemetry Collector's file exporter writes: lowerCamelCase
keys, trace and span ids as lower-case hex, enums as integers and 64-bit integers as strings
(proto3 JSON). Reading is lenient where it is cheap: hex or base64 ids, lowerCamelCase or
snake_case keys, unknown fields ignored. Every decoding failure is a ``TraceFormatError``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    InstrumentationScope,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.core.errors import TraceFormatError
from otel_replay.core.jsontext import otlp_line as otlp_line
from otel_replay.otlp import tracejson, tracejson_decode

ErrorHandler = Callable[[TraceFormatError], None]
JsonInput = bytes | bytearray | str | Mapping[str, Any]
_IdConv = Callable[[str], str]
M = TypeVar("M", bound=Message)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_URLSAFE = str.maketrans("-_", "+/")

# --- id fix-up walks ---------------------------------------------------------------------


def _each(obj: Any, camel: str, snake: str) -> list[Any]:
    """The list under ``camel`` (or ``snake``) of a JSON object; empty when absent or malformed
    (``ParseDict`` reports malformed structure with a proper path)."""
    if not isinstance(obj, dict):
        return []
    value = obj.get(camel)
    if value is None:
        value = obj.get(snake)
    return value if isinstance(value, list) else []


def _convert(obj: Any, keys: tuple[str, ...], conv: _IdConv) -> None:
    if isinstance(obj, dict):
        for key in keys:
            value = obj.get(key)
            if isinstance(value, str) and value:
                obj[key] = conv(value)


_SPAN_IDS = ("traceId", "spanId", "parentSpanId")
_SPAN_IDS_ANY = (*_SPAN_IDS, "trace_id", "span_id", "parent_span_id")
_REF_IDS = ("traceId", "spanId")
_REF_IDS_ANY = (*_REF_IDS, "trace_id", "span_id")


def _walk_span(span: Any, conv: _IdConv, lenient: bool) -> None:
    _convert(span, _SPAN_IDS_ANY if lenient else _SPAN_IDS, conv)
    for link in _each(span, "links", "links"):
        _convert(link, _REF_IDS_ANY if lenient else _REF_IDS, conv)


def _walk_traces(doc: Any, conv: _IdConv, lenient: bool) -> None:
    for rs in _each(doc, "resourceSpans", "resource_spans"):
        for ss in _each(rs, "scopeSpans", "scope_spans"):
            for span in _each(ss, "spans", "spans"):
                _walk_span(span, conv, lenient)


def _walk_logs(doc: Any, conv: _IdConv, lenient: bool) -> None:
    keys = _REF_IDS_ANY if lenient else _REF_IDS
    for rl in _each(doc, "resourceLogs", "resource_logs"):
        for sl in _each(rl, "scopeLogs", "scope_logs"):
            for record in _each(sl, "logRecords", "log_records"):
                _convert(record, keys, conv)


_POINT_KINDS = (
    ("gauge", "gauge"),
    ("sum", "sum"),
    ("histogram", "histogram"),
    ("exponentialHistogram", "exponential_histogram"),
)


def _walk_metrics(doc: Any, conv: _IdConv, lenient: bool) -> None:
    keys = _REF_IDS_ANY if lenient else _REF_IDS
    for rm in _each(doc, "resourceMetrics", "resource_metrics"):
        for sm in _each(rm, "scopeMetrics", "scope_metrics"):
            for metric in _each(sm, "metrics", "metrics"):
                if not isinstance(metric, dict):
                    continue
                for camel, snake in _POINT_KINDS:
                    data = metric.get(camel, metric.get(snake))
                    for point in _each(data, "dataPoints", "data_points"):
                        for exemplar in _each(point, "exemplars", "exemplars"):
                            _convert(exemplar, keys, conv)


@dataclass(frozen=True, slots=True)
class Signal(Generic[M]):
    name: str
    cls: type[M]
    top: tuple[str, str]
    walk: Callable[[Any, _IdConv, bool], None]


TRACES = Signal(
    "traces", ExportTraceServiceRequest, ("resourceSpans", "resource_spans"), _walk_traces
)
LOGS = Signal("logs", ExportLogsServiceRequest, ("resourceLogs", "resource_logs"), _walk_logs)
METRICS = Signal(
    "metrics", ExportMetricsServiceRequest, ("resourceMetrics", "resource_metrics"), _walk_metrics
)
_WALKS: dict[type[Message], Callable[[Any, _IdConv, bool], None]] = {
    ExportTraceServiceRequest: _walk_traces,
    ExportLogsServiceRequest: _walk_logs,
    ExportMetricsServiceRequest: _walk_metrics,
    Span: _walk_span,
}


class _BadId(ValueError):
    pass


def _b64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()


def _id_to_b64(value: str) -> str:
    """A JSON id (hex, or base64 as plain proto3 JSON writes it) as standard base64."""
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        try:
            padded = value.translate(_URLSAFE) + "=" * (-len(value) % 4)
            raw = base64.b64decode(padded, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _BadId(f"id {value[:64]!r} is neither hex nor base64") from exc
    return base64.b64encode(raw).decode("ascii")


# --- messages ⇄ JSON ---------------------------------------------------------------------


def to_json(msg: Message) -> dict[str, Any]:
    """The OTLP JSON dict of an Export*ServiceRequest (or a Span), ids in hex."""
    if tracejson.DIRECT:
        if isinstance(msg, ExportTraceServiceRequest):
            return tracejson.traces_json(msg)
        if isinstance(msg, Span):
            return tracejson.span_json(msg)
    doc: dict[str, Any] = json_format.MessageToDict(msg, use_integers_for_enums=True)
    walk = _WALKS.get(type(msg))
    if walk is not None:
        walk(doc, _b64_to_hex, False)
    return doc


def json_line(msg: Message) -> str:
    """``to_json(msg)`` as one compact line (no trailing newline)."""
    return otlp_line(to_json(msg))


def load_json(data: bytes | bytearray | str, source: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise TraceFormatError(source, f"invalid JSON: {exc}") from exc


def from_doc(signal: Signal[M], doc: Any, source: str) -> M:
    """Parse a JSON document we own (it is modified in place)."""
    if not isinstance(doc, dict):
        raise TraceFormatError(
            source, f"expected a JSON object with {signal.top[0]!r}, got {type(doc).__name__}"
        )
    if signal is TRACES:
        direct = tracejson_decode.traces_from_doc(doc)
        if direct is not None:
            return direct
    try:
        signal.walk(doc, _id_to_b64, True)
    except _BadId as exc:
        raise TraceFormatError(source, str(exc)) from exc
    msg: M = signal.cls()
    try:
        json_format.ParseDict(doc, msg, ignore_unknown_fields=True)
    except (json_format.Error, ValueError, TypeError, RecursionError) as exc:
        raise TraceFormatError(source, f"not an OTLP {signal.name} request: {exc}") from exc
    return msg


def _from_json(signal: Signal[M], data: JsonInput, source: str) -> M:
    if isinstance(data, Mapping):
        return from_doc(signal, copy.deepcopy(dict(data)), source)
    return from_doc(signal, load_json(data, source), source)


def from_proto(signal: Signal[M], data: bytes, source: str) -> M:
    msg: M = signal.cls()
    try:
        msg.ParseFromString(data)
    except (DecodeError, ValueError) as exc:
        raise TraceFormatError(source, f"invalid OTLP {signal.name} protobuf: {exc}") from exc
    return msg


def traces_from_json(data: JsonInput, *, source: str = "OTLP JSON") -> ExportTraceServiceRequest:
    """Decode OTLP JSON (bytes, text or an already-parsed dict, which is not modified)."""
    return _from_json(TRACES, data, source)


def logs_from_json(data: JsonInput, *, source: str = "OTLP JSON") -> ExportLogsServiceRequest:
    return _from_json(LOGS, data, source)


def metrics_from_json(data: JsonInput, *, source: str = "OTLP JSON") -> ExportMetricsServiceRequest:
    return _from_json(METRICS, data, source)


def traces_from_proto(data: bytes, *, source: str = "OTLP protobuf") -> ExportTraceServiceRequest:
    return from_proto(TRACES, data, source)


def logs_from_proto(data: bytes, *, source: str = "OTLP protobuf") -> ExportLogsServiceRequest:
    return from_proto(LOGS, data, source)


def metrics_from_proto(
    data: bytes, *, source: str = "OTLP protobuf"
) -> ExportMetricsServiceRequest:
    return from_proto(METRICS, data, source)


# --- counting ----------------------------------------------------------------------------


def count_spans(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def count_log_records(request: ExportLogsServiceRequest) -> int:
    return sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)


def count_metric_points(request: ExportMetricsServiceRequest) -> int:
    total = 0
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                if kind is not None:
                    total += len(getattr(metric, kind).data_points)
    return total


# --- validation (OTLP partial success) ----------------------------------------------------


_ZEROS = {8: bytes(8), 16: bytes(16)}


def _id_problem(field: str, value: bytes, size: int, *, required: bool) -> str | None:
    if not value:
        return f"missing {field}" if required else None
    if len(value) != size:
        return f"{field} is {len(value)} bytes, not {size}"
    if value == _ZEROS[size]:
        return f"{field} is all zeros"
    return None


def span_problem(span: Span) -> str | None:
    """Why a span must be rejected (malformed ids on it or its links), or None."""
    trace, own, parent = span.trace_id, span.span_id, span.parent_span_id
    if (  # what nearly every span is: told at once, without the wording below
        len(trace) == 16
        and trace != _ZEROS[16]
        and len(own) == 8
        and own != _ZEROS[8]
        and (not parent or (len(parent) == 8 and parent != _ZEROS[8]))
        and not span.links
    ):
        return None
    problem = (
        _id_problem("traceId", span.trace_id, 16, required=True)
        or _id_problem("spanId", span.span_id, 8, required=True)
        or _id_problem("parentSpanId", span.parent_span_id, 8, required=False)
    )
    for link in span.links:
        problem = problem or (
            _id_problem("link traceId", link.trace_id, 16, required=True)
            or _id_problem("link spanId", link.span_id, 8, required=True)
        )
    return f"span {span.name[:80]!r}: {problem}" if problem else None


def drop_invalid_spans(request: ExportTraceServiceRequest) -> tuple[int, str]:
    """Remove the spans a receiver must reject; return how many and the first reason."""
    rejected, reason = 0, ""
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            bad = [(i, p) for i, s in enumerate(ss.spans) if (p := span_problem(s))]
            for i, problem in reversed(bad):
                del ss.spans[i]
                reason = problem
            rejected += len(bad)
    return rejected, reason


def drop_invalid_log_records(request: ExportLogsServiceRequest) -> tuple[int, str]:
    """Remove log records with malformed trace/span ids; return how many and why."""
    rejected, reason = 0, ""
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            bad = []
            for i, record in enumerate(sl.log_records):
                problem = _id_problem(
                    "traceId", record.trace_id, 16, required=False
                ) or _id_problem("spanId", record.span_id, 8, required=False)
                if problem:
                    bad.append((i, f"log record: {problem}"))
            for i, problem in reversed(bad):
                del sl.log_records[i]
                reason = problem
            rejected += len(bad)
    return rejected, reason


def iter_spans(
    request: ExportTraceServiceRequest,
) -> Iterator[tuple[Resource, InstrumentationScope, Span]]:
    """Every span of a request with its resource and instrumentation scope."""
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield rs.resource, ss.scope, span
