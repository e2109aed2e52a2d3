"""The protobuf form of the gateway's spans: a span's attributes put straight onto a
protobuf ``Span`` (``spans.encode`` fills them, for a caller that wants the message
rather than the OTLP JSON document), and spans wrapped in one export request."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from otel_replay._version import __version__
from otel_replay.core import genai
from otel_replay.core.exchange import Exchange
from otel_replay.core.ids import id_bytes
from otel_replay.spans.attributes import SCOPE_NAME

__all__ = ["Sink", "SpanAttrs", "exchange_span", "export_request"]


class Sink(Protocol):
    """Where the span encoder puts typed attributes: a protobuf span or OTLP JSON."""

    def text(self, key: str, value: str) -> None: ...

    def integer(self, key: str, value: int) -> None: ...

    def flag(self, key: str, value: bool) -> None: ...

    def double(self, key: str, value: float) -> None: ...

    def texts(self, key: str, values: Sequence[str]) -> None: ...


class SpanAttrs:
    """Appends typed attributes directly onto a span (no intermediate dict)."""

    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    def _add(self, key: str) -> AnyValue:
        kv = self._span.attributes.add()
        kv.key = key
        value: AnyValue = kv.value
        return value

    def text(self, key: str, value: str) -> None:
        self._add(key).string_value = value

    def integer(self, key: str, value: int) -> None:
        self._add(key).int_value = value

    def flag(self, key: str, value: bool) -> None:
        self._add(key).bool_value = value

    def double(self, key: str, value: float) -> None:
        self._add(key).double_value = value

    def texts(self, key: str, values: Sequence[str]) -> None:
        array = self._add(key).array_value
        for item in values:
            array.values.add().string_value = item


def exchange_span(ex: Exchange, name: str, fill: Callable[[Sink], str | None]) -> Span:
    """The CLIENT span of ``ex`` named ``name``, its attributes put by ``fill``, which
    returns the error status message, if any (missing ids are generated at random)."""
    span = Span(
        trace_id=id_bytes(ex.trace_id, 16),
        span_id=id_bytes(ex.span_id, 8),
        name=name,
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=ex.start_ns,
        end_time_unix_nano=ex.end_ns,
    )
    if ex.parent_span_id:
        span.parent_span_id = bytes.fromhex(ex.parent_span_id)
    status = fill(SpanAttrs(span))
    if status is not None:
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = status
    return span


def export_request(
    spans: Sequence[Span], service_name: str = "otel-replay"
) -> ExportTraceServiceRequest:
    """Spans wrapped in one ResourceSpans / ScopeSpans, ready for a trace store or OTLP."""
    resource = Resource()
    kv = resource.attributes.add()
    kv.key = genai.SERVICE_NAME
    kv.value.string_value = service_name
    scope_spans = ScopeSpans(scope=InstrumentationScope(name=SCOPE_NAME, version=__version__))
    scope_spans.spans.extend(spans)
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[scope_spans])]
    )
