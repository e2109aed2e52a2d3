"""A row of the ClickHouse exporter's table as an OTLP span, and rows gathered into
export requests.

The exporter writes ids as hex, the span kind and status as words (``Client``, ``Error``),
times as ``DateTime64(9)`` and every attribute value as text (``AsString``: numbers in
decimal, booleans as ``true``/``false``, arrays and maps as JSON). Reading back, text that
is exactly a number, a boolean or a JSON array of plain values becomes one again; any
other text stays text (a JSON object in an attribute is how the instrumentation wrote it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span, Status

from otel_replay.otlp.attributes import python_to_any_value

__all__ = ["BATCH", "Batcher", "Row", "coerce", "span_of"]

Row = dict[str, Any]
BATCH = 512  # spans per export request

_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_KINDS = {
    "unspecified": Span.SPAN_KIND_UNSPECIFIED,
    "internal": Span.SPAN_KIND_INTERNAL,
    "server": Span.SPAN_KIND_SERVER,
    "client": Span.SPAN_KIND_CLIENT,
    "producer": Span.SPAN_KIND_PRODUCER,
    "consumer": Span.SPAN_KIND_CONSUMER,
}
_STATUS = {
    "unset": Status.STATUS_CODE_UNSET,
    "ok": Status.STATUS_CODE_OK,
    "error": Status.STATUS_CODE_ERROR,
}


def coerce(text: str) -> Any:
    """An attribute value as it was before the exporter wrote it as text."""
    if not text:
        return text
    first = text[0]
    if first == "t" and text == "true":
        return True
    if first == "f" and text == "false":
        return False
    if first == "-" or first.isdigit():
        if _INT.fullmatch(text):
            return int(text)
        if _FLOAT.fullmatch(text):
            return float(text)
        return text
    if first == "[" and text[-1] == "]":
        try:
            value = json.loads(text)
        except ValueError:
            return text
        if isinstance(value, list) and all(_plain(v) for v in value):
            return value
    return text


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _attributes(target: Any, values: Any) -> None:
    if isinstance(values, dict):
        for key, text in values.items():
            value = coerce(text) if isinstance(text, str) else text
            target.append(KeyValue(key=key, value=python_to_any_value(value)))


def _word(text: Any, table: Mapping[str, int]) -> int:
    word = str(text or "").lower()
    for prefix in ("span_kind_", "status_code_"):
        word = word.removeprefix(prefix)
    return table.get(word, 0)


def _hex(text: Any) -> bytes:
    try:
        return bytes.fromhex(str(text or ""))
    except ValueError:
        return b""


def span_of(row: Row) -> Span:
    """The span a row holds."""
    start = int(row.get("StartNs") or 0)
    span = Span(
        trace_id=_hex(row.get("TraceId")),
        span_id=_hex(row.get("SpanId")),
        parent_span_id=_hex(row.get("ParentSpanId")),
        trace_state=row.get("TraceState") or "",
        name=row.get("SpanName") or "",
        kind=_word(row.get("SpanKind"), _KINDS),  # type: ignore[arg-type]
        start_time_unix_nano=start,
        end_time_unix_nano=start + int(row.get("Duration") or 0),
    )
    _attributes(span.attributes, row.get("SpanAttributes"))
    times = row.get("EventTimes") or []
    names = row.get("EventNames") or []
    event_attrs = row.get("EventAttributes") or []
    for at, name, attrs in zip(times, names, event_attrs, strict=False):
        event = span.events.add(name=name or "", time_unix_nano=int(at or 0))
        _attributes(event.attributes, attrs)
    links = zip(
        row.get("LinkTraceIds") or [],
        row.get("LinkSpanIds") or [],
        row.get("LinkStates") or [],
        row.get("LinkAttributes") or [],
        strict=False,
    )
    for trace_id, span_id, state, attrs in links:
        link = span.links.add(trace_id=_hex(trace_id), span_id=_hex(span_id), trace_state=state)
        _attributes(link.attributes, attrs)
    span.status.code = _word(row.get("StatusCode"), _STATUS)  # type: ignore[assignment]
    span.status.message = row.get("StatusMessage") or ""
    return span


class Batcher:
    """Spans gathered into export requests of ``BATCH``, one resource and scope entry per
    distinct (resource, scope) met in a request."""

    def __init__(self) -> None:
        self._begin()

    def _begin(self) -> None:
        self._request = ExportTraceServiceRequest()
        self._scopes: dict[tuple[str, str, str], ScopeSpans] = {}
        self._count = 0

    def add(self, service: Any, row: Row, span: Span) -> ExportTraceServiceRequest | None:
        """Add a span; a full request when one is complete."""
        resource = row.get("ResourceAttributes") or {}
        if service and "service.name" not in resource:
            resource = {**resource, "service.name": service}
        scope = (row.get("ScopeName") or "", row.get("ScopeVersion") or "")
        key = (json.dumps(resource, sort_keys=True), *scope)
        into = self._scopes.get(key)
        if into is None:
            spans = self._request.resource_spans.add()
            _attributes(spans.resource.attributes, resource)
            into = spans.scope_spans.add(
                scope=InstrumentationScope(name=scope[0], version=scope[1])
            )
            self._scopes[key] = into
        into.spans.append(span)
        self._count += 1
        return self.take() if self._count >= BATCH else None

    def take(self) -> ExportTraceServiceRequest | None:
        """The request gathered so far (None when empty), and a fresh one begun."""
        if not self._count:
            return None
        request = self._request
        self._begin()
        return request
