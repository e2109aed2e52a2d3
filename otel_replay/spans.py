"""The span codec for the gateway's own spans: exchange ⇄ span.

A recorded exchange becomes one CLIENT span carrying two layers of attributes:

- the OpenTelemetry GenAI semantic conventions (``gen_ai.*``, latest "parts" form), so any
  GenAI-aware backend shows the call;
- the project's own ``otel_replay.*`` attributes holding the exact redacted request body,
  the response status, replayable headers, body or SSE events and any transport fault, so
  the span turns back into the same exchange without loss.

Encoding runs on the gateway's hot path, so attributes are appended straight onto the
protobuf span; the provider's response view is computed once and a provider failure never
stops the exact-body attributes being written.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from otel_replay import providers
from otel_replay.errors import TraceFormatError
from otel_replay.exchange import (
    ALL_KNOWN,
    COMPONENTS,
    JSON,
    CanonicalRequest,
    Exchange,
    Response,
    SSEEvent,
)

__all__ = ["SPAN_FORMAT_VERSION", "exchange_to_span", "export_request", "span_to_exchange"]

log = logging.getLogger(__name__)

SPAN_FORMAT_VERSION = 1
"""Version of the ``otel_replay.*`` attribute layout."""

SCOPE_NAME = "otel-replay"
P = "otel_replay."
_FORMAT = P + "format_version"

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
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- encoding -------------------------------------------------------------------------


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


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _add_param(attrs: _Attrs, key: str, kind: str, value: JSON) -> None:
    if kind == "int" and _is_int(value):
        attrs.integer(key, value)
    elif kind == "double" and (_is_int(value) or isinstance(value, float)):
        attrs.double(key, float(value))
    elif kind == "strings":
        items = [value] if isinstance(value, str) else value
        if isinstance(items, list) and all(isinstance(i, str) for i in items):
            attrs.texts(key, items)


def _add_request(attrs: _Attrs, request: CanonicalRequest) -> None:
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


def _add_output(attrs: _Attrs, ex: Exchange, assembled: JSON = None) -> None:
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


def _add_project(attrs: _Attrs, ex: Exchange, replayed: bool) -> None:
    request, response = ex.request, ex.response
    attrs.integer(_FORMAT, SPAN_FORMAT_VERSION)
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


def _id_bytes(hex_id: str | None, size: int) -> bytes:
    if hex_id:
        return bytes.fromhex(hex_id)
    return os.urandom(size)


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
    request, response = ex.request, ex.response
    op_name = _SEMCONV_OPERATION.get(ex.operation, ex.operation)
    span = Span(
        trace_id=_id_bytes(ex.trace_id, 16),
        span_id=_id_bytes(ex.span_id, 8),
        name=f"{op_name} {request.model}" if request.model else op_name,
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=ex.start_ns,
        end_time_unix_nano=ex.end_ns,
    )
    if ex.parent_span_id:
        span.parent_span_id = bytes.fromhex(ex.parent_span_id)
    attrs = _Attrs(span)
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
    if response.fault is not None or response.status >= 400:
        error = response.fault or str(response.status)
        attrs.text("error.type", error)
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = response.fault or f"HTTP {response.status}"
    _add_project(attrs, ex, replayed)
    return span


def export_request(
    spans: Sequence[Span], service_name: str = "otel-replay"
) -> ExportTraceServiceRequest:
    """Spans wrapped in one ResourceSpans / ScopeSpans, ready for a trace store or OTLP."""
    package = importlib.import_module("otel_replay")
    version = str(getattr(package, "__version__", "0"))
    resource = Resource()
    kv = resource.attributes.add()
    kv.key = "service.name"
    kv.value.string_value = service_name
    scope_spans = ScopeSpans(scope=InstrumentationScope(name=SCOPE_NAME, version=version))
    scope_spans.spans.extend(spans)
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[scope_spans])]
    )


# --- decoding -------------------------------------------------------------------------


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def _attributes(kvs: Sequence[KeyValue]) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def _hex(raw: bytes) -> str | None:
    return raw.hex() if raw else None


def _loads(attrs: dict[str, Any], key: str) -> JSON:
    text = attrs[key]
    if not isinstance(text, str):
        raise ValueError(f"{key} is not a string")
    return json.loads(text)


def _canonical(attrs: dict[str, Any], provider: str, endpoint: str, body: JSON) -> CanonicalRequest:
    known_attr = attrs.get(P + "request.known")
    known = frozenset(known_attr) & ALL_KNOWN if isinstance(known_attr, list) else ALL_KNOWN
    if body is not None:
        try:
            request = providers.get(provider).canonical(endpoint, body)
        except Exception:  # unknown provider: keep what the span states outright
            log.debug("cannot canonicalise a %s request", provider, exc_info=True)
            model = body.get("model") if isinstance(body, dict) else None
            model = model if isinstance(model, str) else attrs.get("gen_ai.request.model")
            return CanonicalRequest(endpoint, model=model, known=frozenset({"endpoint", "model"}))
        return replace(request, known=known) if known != request.known else request
    if P + "request.canonical" in attrs:
        c = _loads(attrs, P + "request.canonical")
        params = c.get("params")
        return CanonicalRequest(
            endpoint,
            model=c.get("model"),
            system=c.get("system"),
            messages=c.get("messages"),
            tools=c.get("tools"),
            params=params if isinstance(params, dict) else {},
            known=known,
        )
    model = attrs.get("gen_ai.request.model")
    return CanonicalRequest(endpoint, model=model, known=frozenset({"endpoint", "model"}))


def _response(attrs: dict[str, Any]) -> Response:
    status = attrs.get(P + "response.status", attrs.get("http.response.status_code", 0))
    body: JSON = None
    if P + "response.body" in attrs:
        is_json = attrs.get(P + "response.body_is_json", True)
        body = _loads(attrs, P + "response.body") if is_json else attrs[P + "response.body"]
    events: list[SSEEvent] | None = None
    if P + "response.events" in attrs:
        events = [
            SSEEvent(data=e["data"], event=e.get("event"), t=float(e.get("t", 0.0)))
            for e in _loads(attrs, P + "response.events")
        ]
    headers = _loads(attrs, P + "response.headers") if P + "response.headers" in attrs else {}
    return Response(
        status=int(status),
        headers=dict(headers),
        body=body,
        events=events,
        fault=attrs.get(P + "response.fault"),
    )


def span_to_exchange(span: Span, resource: Resource | None = None) -> Exchange | None:
    """The exchange an otel-replay span carries, or None for any other span.

    Raises TraceFormatError when a span claims to be ours but its attributes are corrupt.
    ``resource`` is accepted for symmetry with the other span readers and not needed.
    """
    del resource
    attrs = _attributes(span.attributes)
    if _FORMAT not in attrs:
        return None
    try:
        provider = str(attrs.get("gen_ai.provider.name", ""))
        endpoint = str(attrs[P + "endpoint"])
        operation = attrs.get(P + "operation")
        if not isinstance(operation, str):
            operation = providers.get(provider).operation(endpoint)
        raw = _loads(attrs, P + "request.body") if P + "request.body" in attrs else None
        return Exchange(
            provider=provider,
            operation=operation,
            request=_canonical(attrs, provider, endpoint, raw),
            response=_response(attrs),
            raw_request=raw,
            method=str(attrs.get(P + "method", "POST")),
            stream=bool(attrs.get(P + "stream", False)),
            start_ns=span.start_time_unix_nano,
            end_ns=span.end_time_unix_nano,
            trace_id=_hex(span.trace_id),
            span_id=_hex(span.span_id),
            parent_span_id=_hex(span.parent_span_id),
            source=str(attrs.get(P + "source", "otel-replay")),
        )
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        where = f"span {span.span_id.hex() or '?'} ({span.name})"
        raise TraceFormatError(where, f"corrupt otel_replay attributes: {exc}") from exc
