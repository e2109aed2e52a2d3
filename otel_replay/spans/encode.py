"""The gateway's own spans: exchange → span (``readers.own`` turns them back).

A recorded exchange becomes one CLIENT span carrying two layers of attributes:

- the OpenTelemetry GenAI semantic conventions (``gen_ai.*``, latest "parts" form), so any
  GenAI-aware backend shows the call;
- the project's own ``otel_replay.*`` attributes holding the exact redacted request body,
  the response status, replayable headers, body or SSE events and any transport fault, so
  the span turns back into the same exchange without loss.

Encoding runs on the gateway's hot path, so attributes are appended straight onto the
protobuf span, or, for the trace store, straight into the span's OTLP JSON document
(:func:`exchange_to_trace_json`, the same document without the protobuf round trip); the
provider's response view is computed once and a provider failure never stops the
exact-body attributes being written.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any, Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from otel_replay import providers
from otel_replay._version import __version__
from otel_replay.core.exchange import (
    ALL_KNOWN,
    COMPONENTS,
    JSON,
    CanonicalRequest,
    Exchange,
    SSEEvent,
)
from otel_replay.core.ids import id_bytes
from otel_replay.otlp import codec, tracejson

__all__ = [
    "FORMAT_ATTRIBUTE",
    "SPAN_FORMAT_VERSION",
    "exchange_to_span",
    "exchange_to_trace_json",
    "export_request",
]

log = logging.getLogger(__name__)

SPAN_FORMAT_VERSION = 1
"""Version of the ``otel_replay.*`` attribute layout."""

SCOPE_NAME = "otel-replay"
P = "otel_replay."
FORMAT_ATTRIBUTE = P + "format_version"
"""Marks a span as otel-replay's own (``readers.own`` reads it back)."""

# gen_ai.operation.name for each exchange operation (semconv values where one fits).
_SEMCONV_OPERATION: dict[str, str] = {
    "chat": "chat",
    "responses": "chat",
    "messages": "chat",
    "embeddings": "embeddings",
    "completions": "text_completion",
}

# Canonical request params -> (semconv attribute, value kind).
_PARAM_ATTRS: dict[str, tuple[str, str]] = {
    "temperature": ("gen_ai.request.temperature", "double"),
    "top_p": ("gen_ai.request.top_p", "double"),
    "top_k": ("gen_ai.request.top_k", "double"),
    "max_tokens": ("gen_ai.request.max_tokens", "int"),
    "max_completion_tokens": ("gen_ai.request.max_tokens", "int"),
    "max_output_tokens": ("gen_ai.request.max_tokens", "int"),
    "frequency_penalty": ("gen_ai.request.frequency_penalty", "double"),
    "presence_penalty": ("gen_ai.request.presence_penalty", "double"),
    "seed": ("gen_ai.request.seed", "int"),
    "n": ("gen_ai.request.choice.count", "int"),
    "stop": ("gen_ai.request.stop_sequences", "strings"),
    "stop_sequences": ("gen_ai.request.stop_sequences", "strings"),
    "encoding_format": ("gen_ai.request.encoding_formats", "strings"),
}


def _dumps(value: JSON) -> str:
    return codec.dumps_line(value)


# --- encoding -------------------------------------------------------------------------


class _Sink(Protocol):
    """Where the encoders below put typed attributes: a protobuf span or OTLP JSON."""

    def text(self, key: str, value: str) -> None: ...

    def integer(self, key: str, value: int) -> None: ...

    def flag(self, key: str, value: bool) -> None: ...

    def double(self, key: str, value: float) -> None: ...

    def texts(self, key: str, values: Sequence[str]) -> None: ...


class _Attrs:
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


class _Unusual(Exception):
    """A value the OTLP JSON encoder does not take the way protobuf would (a wrong type,
    an integer out of range): the caller goes through the protobuf span instead."""


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1


def _json_double(value: float) -> float | str:
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return value


class _JsonAttrs:
    """Appends attributes in the form ``codec.to_json`` gives the protobuf ones."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def text(self, key: str, value: str) -> None:
        if type(value) is not str:
            raise _Unusual(key)
        self.items.append({"key": key, "value": {"stringValue": value}})

    def integer(self, key: str, value: int) -> None:
        if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
            raise _Unusual(key)
        self.items.append({"key": key, "value": {"intValue": str(value)}})

    def flag(self, key: str, value: bool) -> None:
        if type(value) is not bool:
            raise _Unusual(key)
        self.items.append({"key": key, "value": {"boolValue": value}})

    def double(self, key: str, value: float) -> None:
        if type(value) is not float:
            raise _Unusual(key)
        self.items.append({"key": key, "value": {"doubleValue": _json_double(value)}})

    def texts(self, key: str, values: Sequence[str]) -> None:
        if not values:  # an empty array leaves the attribute without a value
            self.items.append({"key": key})
            return
        items: list[dict[str, Any]] = []
        for item in values:
            if type(item) is not str:
                raise _Unusual(key)
            items.append({"stringValue": item})
        self.items.append({"key": key, "value": {"arrayValue": {"values": items}}})


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _add_param(attrs: _Sink, key: str, kind: str, value: JSON) -> None:
    if kind == "int" and _is_int(value):
        attrs.integer(key, value)
    elif kind == "double" and (_is_int(value) or isinstance(value, float)):
        attrs.double(key, float(value))
    elif kind == "strings":
        items = [value] if isinstance(value, str) else value
        if isinstance(items, list) and all(isinstance(i, str) for i in items):
            attrs.texts(key, items)


def _add_request(attrs: _Sink, request: CanonicalRequest) -> None:
    if request.model is not None:
        attrs.text("gen_ai.request.model", request.model)
    seen: set[str] = set()
    for name, value in request.params.items():
        target = _PARAM_ATTRS.get(name)
        if target is None or target[0] in seen or value is None:
            continue
        seen.add(target[0])
        _add_param(attrs, target[0], target[1], value)
    if request.messages is not None:
        attrs.text("gen_ai.input.messages", _dumps(request.messages))
    if request.system is not None:
        attrs.text("gen_ai.system_instructions", _dumps(request.system))
    if request.tools is not None:
        attrs.text("gen_ai.tool.definitions", _dumps(request.tools))


def _add_output(attrs: _Sink, ex: Exchange, assembled: JSON = None) -> None:
    """The semconv view of a successful response; any provider failure is only logged."""
    response = ex.response
    if response.status >= 400 or (response.body is None and not response.events):
        return
    try:
        provider = providers.get(ex.provider)
        body = response.body
        if response.events is not None:
            body = assembled
            if body is None:
                body = provider.body_from_stream(ex.operation, response.events)
        view = provider.view_from_response(ex.operation, body)
    except Exception:  # a provider bug must never cost the exact-body attributes
        log.debug("no semconv output view for %s %s", ex.provider, ex.operation, exc_info=True)
        return
    if view.response_id:
        attrs.text("gen_ai.response.id", view.response_id)
    if view.model:
        attrs.text("gen_ai.response.model", view.model)
    reasons = [
        m["finish_reason"]
        for m in view.messages
        if isinstance(m, dict) and isinstance(m.get("finish_reason"), str)
    ]
    if reasons:
        attrs.texts("gen_ai.response.finish_reasons", reasons)
    for name, count in view.usage.items():
        if _is_int(count):
            attrs.integer(f"gen_ai.usage.{name}", count)
    if view.messages:
        attrs.text("gen_ai.output.messages", _dumps(view.messages))


def _events_json(events: list[SSEEvent]) -> str:
    items: list[dict[str, JSON]] = []
    for event in events:
        item: dict[str, JSON] = {"t": event.t}
        if event.event is not None:
            item["event"] = event.event
        item["data"] = event.data
        items.append(item)
    return _dumps(items)


def _add_project(attrs: _Sink, ex: Exchange, replayed: bool) -> None:
    request, response = ex.request, ex.response
    attrs.integer(FORMAT_ATTRIBUTE, SPAN_FORMAT_VERSION)
    attrs.text(P + "operation", ex.operation)
    attrs.text(P + "endpoint", request.endpoint)
    attrs.text(P + "method", ex.method)
    attrs.flag(P + "stream", ex.stream)
    if ex.source != "otel-replay":
        attrs.text(P + "source", ex.source)
    if ex.raw_request is not None:
        attrs.text(P + "request.body", _dumps(ex.raw_request))
    else:
        attrs.text(P + "request.canonical", _dumps(_canonical_dict(request)))
    if request.known != ALL_KNOWN:
        attrs.texts(P + "request.known", [c for c in COMPONENTS if c in request.known])
    attrs.integer(P + "response.status", response.status)
    attrs.text(P + "response.headers", _dumps(response.headers))
    if isinstance(response.body, str):
        attrs.text(P + "response.body", response.body)
        attrs.flag(P + "response.body_is_json", False)
    elif response.body is not None:
        attrs.text(P + "response.body", _dumps(response.body))
        attrs.flag(P + "response.body_is_json", True)
    if response.events is not None:
        attrs.text(P + "response.events", _events_json(response.events))
    if response.fault is not None:
        attrs.text(P + "response.fault", response.fault)
    attrs.flag(P + "replayed", replayed)


def _canonical_dict(request: CanonicalRequest) -> dict[str, JSON]:
    return {
        "model": request.model,
        "system": request.system,
        "messages": request.messages,
        "tools": request.tools,
        "params": request.params,
    }


def _fill(
    attrs: _Sink,
    ex: Exchange,
    op_name: str,
    replayed: bool,
    server_address: str | None,
    server_port: int | None,
    assembled: JSON,
) -> str | None:
    """Every attribute of the exchange's span; returns the error status message, if any."""
    request, response = ex.request, ex.response
    attrs.text("gen_ai.provider.name", ex.provider)
    attrs.text("gen_ai.operation.name", op_name)
    _add_request(attrs, request)
    if ex.stream:
        attrs.flag("gen_ai.request.stream", True)
    _add_output(attrs, ex, assembled)
    if server_address:
        attrs.text("server.address", server_address)
    if server_port:
        attrs.integer("server.port", server_port)
    if response.status > 0:
        attrs.integer("http.response.status_code", response.status)
    status: str | None = None
    if response.fault is not None or response.status >= 400:
        error = response.fault or str(response.status)
        attrs.text("error.type", error)
        status = response.fault or f"HTTP {response.status}"
    _add_project(attrs, ex, replayed)
    return status


def _span_name(ex: Exchange) -> tuple[str, str]:
    op_name = _SEMCONV_OPERATION.get(ex.operation, ex.operation)
    model = ex.request.model
    return op_name, (f"{op_name} {model}" if model else op_name)


def exchange_to_span(
    ex: Exchange,
    *,
    replayed: bool = False,
    server_address: str | None = None,
    server_port: int | None = None,
    assembled: JSON = None,
) -> Span:
    """The span for one exchange: GenAI semconv attributes plus the exact-body layer.

    Missing trace/span ids are generated at random (set them on the exchange first when the
    caller needs to know them). ``assembled`` is a streamed response's body when the caller
    has already put it together.
    """
    op_name, name = _span_name(ex)
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
    attrs = _Attrs(span)
    status = _fill(attrs, ex, op_name, replayed, server_address, server_port, assembled)
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
    kv.key = "service.name"
    kv.value.string_value = service_name
    scope_spans = ScopeSpans(scope=InstrumentationScope(name=SCOPE_NAME, version=__version__))
    scope_spans.spans.extend(spans)
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[scope_spans])]
    )


def _nanos(value: int) -> str:
    if type(value) is not int or not 0 <= value <= _UINT64_MAX:
        raise _Unusual("time")
    return str(value)


def _span_json(
    ex: Exchange,
    replayed: bool,
    server_address: str | None,
    server_port: int | None,
    assembled: JSON,
) -> dict[str, Any]:
    """``codec.to_json(exchange_to_span(...))`` built straight from the exchange."""
    op_name, name = _span_name(ex)
    if type(name) is not str:
        raise _Unusual("name")
    doc: dict[str, Any] = {}
    trace_id, span_id = id_bytes(ex.trace_id, 16), id_bytes(ex.span_id, 8)
    if trace_id:
        doc["traceId"] = trace_id.hex()
    if span_id:
        doc["spanId"] = span_id.hex()
    if ex.parent_span_id:
        parent = bytes.fromhex(ex.parent_span_id)
        if parent:
            doc["parentSpanId"] = parent.hex()
    if name:
        doc["name"] = name
    doc["kind"] = Span.SPAN_KIND_CLIENT
    if ex.start_ns:
        doc["startTimeUnixNano"] = _nanos(ex.start_ns)
    if ex.end_ns:
        doc["endTimeUnixNano"] = _nanos(ex.end_ns)
    attrs = _JsonAttrs()
    status = _fill(attrs, ex, op_name, replayed, server_address, server_port, assembled)
    doc["attributes"] = attrs.items
    if status is not None:
        doc["status"] = {"message": status, "code": Status.STATUS_CODE_ERROR}
    return doc


def exchange_to_trace_json(
    ex: Exchange,
    *,
    replayed: bool = False,
    server_address: str | None = None,
    server_port: int | None = None,
    assembled: JSON = None,
    service_name: str = "otel-replay",
) -> dict[str, Any]:
    """``codec.to_json(export_request([exchange_to_span(ex, ...)], service_name))``, the
    OTLP JSON document of the exchange's span, built without the protobuf messages (the
    gateway records every live exchange this way, on the agent's critical path).

    A value protobuf would treat specially (a wrong type, an integer out of range) sends
    the exchange through the protobuf span instead, so the result, or the error, is the
    same either way."""
    if tracejson.DIRECT:
        try:
            span = _span_json(ex, replayed, server_address, server_port, assembled)
        except _Unusual:
            pass
        else:
            if type(service_name) is str:
                return _export_json(span, service_name)
    span_pb = exchange_to_span(
        ex,
        replayed=replayed,
        server_address=server_address,
        server_port=server_port,
        assembled=assembled,
    )
    return codec.to_json(export_request([span_pb], service_name))


def _export_json(span: dict[str, Any], service_name: str) -> dict[str, Any]:
    scope: dict[str, Any] = {"name": SCOPE_NAME}
    version = __version__
    if version:
        scope["version"] = version
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service_name}}]}
    return {
        "resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": [span]}]}]
    }
