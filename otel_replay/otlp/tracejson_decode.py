"""Direct OTLP JSON → protobuf for trace requests: the decoding half of ``tracejson``
(what ``build`` and the trace store's readers run for every span read).

It accepts the forms OTLP JSON writers use and gives exactly what
``json_format.ParseDict`` gives (tested with hypothesis); anything else raises ``_Unusual``
internally and ``traces_from_doc`` returns None, so the caller falls back to
``json_format``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from otel_replay.otlp.tracejson import DIRECT

__all__ = ["traces_from_doc"]

# --- decoding ------------------------------------------------------------------------------
# The forms OTLP JSON writers use (the Collector, the SDK exporters, this trace store):
# lowerCamelCase keys, hex ids, 64-bit integers as strings or numbers, enums as numbers.
# Anything else (snake_case, base64 ids, enum names, nulls, bytes values, unknown keys...)
# raises _Unusual and the caller falls back to ``json_format.ParseDict``, which also reports
# malformed input; the fallback starts from the untouched document.


class _Unusual(Exception):
    """The document needs ``json_format.ParseDict``."""


_UINT32 = 2**32
_INT32 = 2**31
_UINT64 = 2**64
_INT64 = 2**63
_DIGITS = re.compile(r"-?[0-9]+")
_DOUBLES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _id(value: Any) -> bytes:
    if type(value) is not str:
        raise _Unusual
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise _Unusual from None


def _text(value: Any) -> str:
    if type(value) is not str:
        raise _Unusual
    return value


def _int(value: Any, low: int, high: int) -> int:
    """An integer field given as a JSON number or a decimal string, within [low, high)."""
    kind = type(value)
    if kind is str and _DIGITS.fullmatch(value):
        value = int(value)
    elif kind is not int:
        raise _Unusual
    if not low <= value < high:
        raise _Unusual
    result: int = value
    return result


def _uint32(value: Any) -> int:
    return _int(value, 0, _UINT32)


def _fill_value(target: AnyValue, doc: Any) -> None:
    if type(doc) is not dict or len(doc) > 1:
        raise _Unusual
    for key, item in doc.items():
        if key == "stringValue":
            target.string_value = _text(item)
        elif key == "intValue":
            target.int_value = _int(item, -_INT64, _INT64)
        elif key == "boolValue":
            if type(item) is not bool:
                raise _Unusual
            target.bool_value = item
        elif key == "doubleValue":
            target.double_value = _double_in(item)
        elif key == "arrayValue":
            array = target.array_value
            array.SetInParent()
            for element in _list_of(item, "values"):
                _fill_value(array.values.add(), element)
        elif key == "kvlistValue":
            kvlist = target.kvlist_value
            kvlist.SetInParent()
            _fill_attrs(kvlist.values, _list_of(item, "values"))
        else:
            raise _Unusual


def _double_in(value: Any) -> float:
    kind = type(value)
    if kind is float:
        if math.isnan(value) or math.isinf(
            value
        ):  # json.loads reads bare NaN; ParseDict refuses it
            raise _Unusual
        result: float = value
        return result
    if kind is int and abs(value) < 2**53:
        return float(value)
    if kind is str and value in _DOUBLES:
        return _DOUBLES[value]
    raise _Unusual


def _list_of(doc: Any, key: str) -> list[Any]:
    """``doc[key]`` of a JSON object holding only that key (or nothing)."""
    if type(doc) is not dict or len(doc) > 1:
        raise _Unusual
    items = doc.get(key, [])
    if (len(doc) == 1 and key not in doc) or type(items) is not list:
        raise _Unusual
    return items


def _fill_attrs(target: Any, items: Any) -> None:
    if type(items) is not list:
        raise _Unusual
    for item in items:
        if type(item) is not dict:
            raise _Unusual
        kv = target.add()
        for key, value in item.items():
            if key == "key":
                kv.key = _text(value)
            elif key == "value":
                kv.value.SetInParent()
                _fill_value(kv.value, value)
            else:
                raise _Unusual


def _fill_event(event: Span.Event, doc: Any) -> None:
    if type(doc) is not dict:
        raise _Unusual
    for key, value in doc.items():
        if key == "timeUnixNano":
            event.time_unix_nano = _int(value, 0, _UINT64)
        elif key == "name":
            event.name = _text(value)
        elif key == "attributes":
            _fill_attrs(event.attributes, value)
        elif key == "droppedAttributesCount":
            event.dropped_attributes_count = _uint32(value)
        else:
            raise _Unusual


def _fill_link(link: Span.Link, doc: Any) -> None:
    if type(doc) is not dict:
        raise _Unusual
    for key, value in doc.items():
        if key == "traceId":
            link.trace_id = _id(value)
        elif key == "spanId":
            link.span_id = _id(value)
        elif key == "traceState":
            link.trace_state = _text(value)
        elif key == "attributes":
            _fill_attrs(link.attributes, value)
        elif key == "droppedAttributesCount":
            link.dropped_attributes_count = _uint32(value)
        elif key == "flags":
            link.flags = _uint32(value)
        else:
            raise _Unusual


def _fill_status(status: Status, doc: Any) -> None:
    if type(doc) is not dict:
        raise _Unusual
    status.SetInParent()
    for key, value in doc.items():
        if key == "message":
            status.message = _text(value)
        elif key == "code":
            status.code = _int(value, -_INT32, _INT32)  # type: ignore[assignment]
        else:
            raise _Unusual


def _fill_span(span: Span, doc: Any) -> None:
    if type(doc) is not dict:
        raise _Unusual
    for key, value in doc.items():
        setter = _SPAN_SCALARS.get(key)
        if setter is not None:
            setattr(span, setter[0], setter[1](value))
        elif key == "attributes":
            _fill_attrs(span.attributes, value)
        elif key == "events":
            for item in _list(value):
                _fill_event(span.events.add(), item)
        elif key == "links":
            for item in _list(value):
                _fill_link(span.links.add(), item)
        elif key == "status":
            _fill_status(span.status, value)
        else:
            raise _Unusual


def _list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise _Unusual
    return value


_SPAN_SCALARS: dict[str, tuple[str, Any]] = {
    "traceId": ("trace_id", _id),
    "spanId": ("span_id", _id),
    "parentSpanId": ("parent_span_id", _id),
    "traceState": ("trace_state", _text),
    "name": ("name", _text),
    "kind": ("kind", lambda v: _int(v, -_INT32, _INT32)),
    "startTimeUnixNano": ("start_time_unix_nano", lambda v: _int(v, 0, _UINT64)),
    "endTimeUnixNano": ("end_time_unix_nano", lambda v: _int(v, 0, _UINT64)),
    "droppedAttributesCount": ("dropped_attributes_count", _uint32),
    "droppedEventsCount": ("dropped_events_count", _uint32),
    "droppedLinksCount": ("dropped_links_count", _uint32),
    "flags": ("flags", _uint32),
}


def _fill_scope(scope: InstrumentationScope, doc: Any) -> None:
    if type(doc) is not dict:
        raise _Unusual
    scope.SetInParent()
    for key, value in doc.items():
        if key == "name":
            scope.name = _text(value)
        elif key == "version":
            scope.version = _text(value)
        elif key == "attributes":
            _fill_attrs(scope.attributes, value)
        elif key == "droppedAttributesCount":
            scope.dropped_attributes_count = _uint32(value)
        else:
            raise _Unusual


def _fill_resource(resource: Resource, doc: Any) -> None:
    if type(doc) is not dict:
        raise _Unusual
    resource.SetInParent()
    for key, value in doc.items():
        if key == "attributes":
            _fill_attrs(resource.attributes, value)
        elif key == "droppedAttributesCount":
            resource.dropped_attributes_count = _uint32(value)
        else:
            raise _Unusual


def _fill_scope_spans(target: ScopeSpans, doc: Any) -> None:
    if type(doc) is not dict:
        raise _Unusual
    for key, value in doc.items():
        if key == "scope":
            _fill_scope(target.scope, value)
        elif key == "spans":
            for item in _list(value):
                _fill_span(target.spans.add(), item)
        elif key == "schemaUrl":
            target.schema_url = _text(value)
        else:
            raise _Unusual


def _fill_resource_spans(target: ResourceSpans, doc: Any) -> None:
    if type(doc) is not dict:
        raise _Unusual
    for key, value in doc.items():
        if key == "resource":
            _fill_resource(target.resource, value)
        elif key == "scopeSpans":
            for item in _list(value):
                _fill_scope_spans(target.scope_spans.add(), item)
        elif key == "schemaUrl":
            target.schema_url = _text(value)
        else:
            raise _Unusual


def traces_from_doc(doc: dict[str, Any]) -> ExportTraceServiceRequest | None:
    """The request a parsed OTLP JSON trace document holds, decoded directly; None when
    the document uses a form only ``json_format.ParseDict`` reads (it is not modified)."""
    if not DIRECT:
        return None
    request = ExportTraceServiceRequest()
    try:
        for key, value in doc.items():
            if key != "resourceSpans":
                raise _Unusual
            for item in _list(value):
                _fill_resource_spans(request.resource_spans.add(), item)
    except (_Unusual, ValueError, TypeError, RecursionError):
        return None
    return request
