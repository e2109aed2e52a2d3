"""The gateway's own spans: exchange → span (``readers.own`` turns them back).

A recorded exchange becomes one CLIENT span carrying two layers of attributes:

- the OpenTelemetry GenAI semantic conventions (``gen_ai.*``, latest "parts" form), so any
  GenAI-aware backend shows the call;
- the project's own ``otel_replay.*`` attributes holding the exact redacted request body,
  the response status, replayable headers, body or SSE events and any transport fault, so
  the span turns back into the same exchange without loss.

This module is one step of a recorded exchange's path: the span around its halves. The
request's half (GenAI contents and exact body, written against what the trace file holds)
comes from ``spans.request_half``; the response's half and the span's frame are written
here. Encoding runs on the gateway's hot path, so for the trace store the attributes go
straight into the span's OTLP JSON document (:func:`exchange_to_trace_json`, the document
``codec.to_json`` gives the protobuf span, without the round trip; :func:`exchange_to_span`
puts the same attributes onto a protobuf span, ``spans.span_pb``). The provider's
response view is computed once and a provider failure never stops the exact-body
attributes being written.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay import providers
from otel_replay._version import __version__
from otel_replay.core import genai, jsontext
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
from otel_replay.spans import attributes as own
from otel_replay.spans.attributes import FORMAT_ATTRIBUTE, SCOPE_NAME, SPAN_FORMAT_VERSION
from otel_replay.spans.draft import RequestDraft
from otel_replay.spans.lists import ListPlan
from otel_replay.spans.pieces import Ledger
from otel_replay.spans.request_half import (
    begin_span,
    body_attributes,
    canonical_attributes,
    content,
    format_version,
    request_attributes,
)
from otel_replay.spans.span_pb import Sink, exchange_span, export_request

__all__ = [
    "FORMAT_ATTRIBUTE",
    "SPAN_FORMAT_VERSION",
    "JsonAttrs",
    "Unusual",
    "exchange_to_span",
    "exchange_to_trace_json",
    "export_request",
    "nanos",
]

log = logging.getLogger(__name__)


# --- the span's OTLP JSON --------------------------------------------------------------


class Unusual(Exception):
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


class JsonAttrs:
    """Appends attributes in the form ``codec.to_json`` gives the protobuf ones."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def text(self, key: str, value: str) -> None:
        if type(value) is not str:
            raise Unusual(key)
        self.items.append({"key": key, "value": {"stringValue": value}})

    def integer(self, key: str, value: int) -> None:
        if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
            raise Unusual(key)
        self.items.append({"key": key, "value": {"intValue": str(value)}})

    def flag(self, key: str, value: bool) -> None:
        if type(value) is not bool:
            raise Unusual(key)
        self.items.append({"key": key, "value": {"boolValue": value}})

    def double(self, key: str, value: float) -> None:
        if type(value) is not float:
            raise Unusual(key)
        self.items.append({"key": key, "value": {"doubleValue": _json_double(value)}})

    def texts(self, key: str, values: Sequence[str]) -> None:
        if not values:  # an empty array leaves the attribute without a value
            self.items.append({"key": key})
            return
        items: list[dict[str, Any]] = []
        for item in values:
            if type(item) is not str:
                raise Unusual(key)
            items.append({"stringValue": item})
        self.items.append({"key": key, "value": {"arrayValue": {"values": items}}})


def nanos(value: int) -> str:
    """A time in nanoseconds as OTLP JSON writes it (an unsigned 64-bit integer)."""
    if type(value) is not int or not 0 <= value <= _UINT64_MAX:
        raise Unusual("time")
    return str(value)


def _dumps(value: JSON) -> str:
    return jsontext.value_text(value)


# --- encoding -------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _add_request(
    attrs: Sink, request: CanonicalRequest, ledger: Ledger | None, draft: RequestDraft | None
) -> None:
    for kind, key, value in request_attributes(request, ledger, draft):
        getattr(attrs, kind)(key, value)


def _add_output(attrs: Sink, ex: Exchange, assembled: JSON, ledger: Ledger | None) -> None:
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
        attrs.text(genai.RESPONSE_ID, view.response_id)
    if view.model:
        attrs.text(genai.RESPONSE_MODEL, view.model)
    reasons = [
        m["finish_reason"]
        for m in view.messages
        if isinstance(m, dict) and isinstance(m.get("finish_reason"), str)
    ]
    if reasons:
        attrs.texts(genai.FINISH_REASONS, reasons)
    for name, count in view.usage.items():
        if _is_int(count):
            attrs.integer(genai.usage_attribute(name), count)
    if view.messages:
        attrs.text(genai.OUTPUT_MESSAGES, content(ledger, genai.OUTPUT_MESSAGES, view.messages))


def _events_json(events: list[SSEEvent]) -> str:
    items: list[dict[str, JSON]] = []
    for event in events:
        item: dict[str, JSON] = {"t": event.t}
        if event.event is not None:
            item["event"] = event.event
        item["data"] = event.data
        items.append(item)
    return _dumps(items)


def _add_project(
    attrs: Sink,
    ex: Exchange,
    replayed: bool,
    ledger: Ledger | None,
    draft: RequestDraft | None,
    plan: ListPlan | None,
) -> None:
    request, response = ex.request, ex.response
    attrs.integer(FORMAT_ATTRIBUTE, format_version(plan))
    attrs.text(own.OPERATION, ex.operation)
    attrs.text(own.ENDPOINT, request.endpoint)
    attrs.text(own.METHOD, ex.method)
    attrs.flag(own.STREAM, ex.stream)
    if ex.source != own.OWN_SOURCE:
        attrs.text(own.SOURCE, ex.source)
    body = ex.raw_request
    exact = canonical_attributes(request) if body is None else None
    for key, text in exact or body_attributes(body, ledger, plan, draft):
        attrs.text(key, text)
    if request.known != ALL_KNOWN:
        attrs.texts(own.REQUEST_KNOWN, [c for c in COMPONENTS if c in request.known])
    attrs.integer(own.RESPONSE_STATUS, response.status)
    attrs.text(own.RESPONSE_HEADERS, _dumps(response.headers))
    if isinstance(response.body, str):
        attrs.text(own.RESPONSE_BODY, response.body)
        attrs.flag(own.RESPONSE_BODY_IS_JSON, False)
    elif response.body is not None:
        attrs.text(own.RESPONSE_BODY, _dumps(response.body))
        attrs.flag(own.RESPONSE_BODY_IS_JSON, True)
    if response.events is not None:
        attrs.text(own.RESPONSE_EVENTS, _events_json(response.events))
    if response.fault is not None:
        attrs.text(own.RESPONSE_FAULT, response.fault)
    attrs.flag(own.REPLAYED, replayed)
    if ex.provenance is not None:
        attrs.text(own.PROVENANCE, _dumps(ex.provenance))
    if ledger is not None and ledger.inline:
        attrs.text(own.PIECES_INLINE, _dumps(ledger.inline))


def _fill(
    attrs: Sink,
    ex: Exchange,
    op_name: str,
    replayed: bool,
    server_address: str | None,
    server_port: int | None,
    assembled: JSON,
    ledger: Ledger | None,
    draft: RequestDraft | None = None,
) -> str | None:
    """Every attribute of the exchange's span; returns the error status message, if any."""
    request, response = ex.request, ex.response
    if draft is not None and (draft.request is not ex.request or draft.body is not ex.raw_request):
        draft = None  # a draft of another request
    plan = begin_span(ex.raw_request, ledger)
    attrs.text(genai.PROVIDER_NAME, providers.semconv_name(ex.provider, request.endpoint))
    attrs.text(genai.OPERATION_NAME, op_name)
    _add_request(attrs, request, ledger, draft)
    if ex.stream:
        attrs.flag(genai.REQUEST_STREAM, True)
    _add_output(attrs, ex, assembled, ledger)
    if server_address:
        attrs.text(genai.SERVER_ADDRESS, server_address)
    if server_port:
        attrs.integer(genai.SERVER_PORT, server_port)
    if response.status > 0:
        attrs.integer(genai.HTTP_STATUS, response.status)
    status: str | None = None
    if response.fault is not None or response.status >= 400:
        error = response.fault or str(response.status)
        attrs.text(genai.ERROR_TYPE, error)
        status = response.fault or f"HTTP {response.status}"
    _add_project(attrs, ex, replayed, ledger, draft, plan)
    return status


def _span_name(ex: Exchange) -> tuple[str, str]:
    return genai.operation_name(ex.operation), genai.span_name(ex.operation, ex.request.model)


def exchange_to_span(
    ex: Exchange,
    *,
    replayed: bool = False,
    server_address: str | None = None,
    server_port: int | None = None,
    assembled: JSON = None,
    ledger: Ledger | None = None,
    draft: RequestDraft | None = None,
) -> Span:
    """The span for one exchange: GenAI semconv attributes plus the exact-body layer.

    Missing trace/span ids are generated at random (set them on the exchange first when the
    caller needs to know them). ``assembled`` is a streamed response's body when the caller
    has already put it together. With ``ledger`` (the trace file's pieces, ``spans.pieces``)
    long strings stored before in the file are referred to, not stored again. ``draft``:
    the request's half, drafted while the provider worked (:class:`RequestDraft`).
    """
    op_name, name = _span_name(ex)

    def fill(attrs: Sink) -> str | None:
        return _fill(
            attrs, ex, op_name, replayed, server_address, server_port, assembled, ledger, draft
        )

    return exchange_span(ex, name, fill)


def _span_json(
    ex: Exchange,
    replayed: bool,
    server_address: str | None,
    server_port: int | None,
    assembled: JSON,
    ledger: Ledger | None,
    draft: RequestDraft | None,
) -> dict[str, Any]:
    """``codec.to_json(exchange_to_span(...))`` built straight from the exchange."""
    op_name, name = _span_name(ex)
    if type(name) is not str:
        raise Unusual("name")
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
        doc["startTimeUnixNano"] = nanos(ex.start_ns)
    if ex.end_ns:
        doc["endTimeUnixNano"] = nanos(ex.end_ns)
    attrs = JsonAttrs()
    status = _fill(
        attrs, ex, op_name, replayed, server_address, server_port, assembled, ledger, draft
    )
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
    ledger: Ledger | None = None,
    draft: RequestDraft | None = None,
) -> dict[str, Any]:
    """``codec.to_json(export_request([exchange_to_span(ex, ...)], service_name))``, the
    OTLP JSON document of the exchange's span, built without the protobuf messages (the
    gateway records every live exchange this way, on the agent's critical path).

    A value protobuf would treat specially (a wrong type, an integer out of range) sends
    the exchange through the protobuf span instead, so the result, or the error, is the
    same either way."""
    if tracejson.DIRECT:
        try:
            span = _span_json(ex, replayed, server_address, server_port, assembled, ledger, draft)
        except Unusual:
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
        ledger=ledger,
        draft=draft,
    )
    return codec.to_json(export_request([span_pb], service_name))


def _export_json(span: dict[str, Any], service_name: str) -> dict[str, Any]:
    scope: dict[str, Any] = {"name": SCOPE_NAME}
    version = __version__
    if version:
        scope["version"] = version
    resource = {"attributes": [{"key": genai.SERVICE_NAME, "value": {"stringValue": service_name}}]}
    return {
        "resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": [span]}]}]
    }
