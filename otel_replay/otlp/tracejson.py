"""Direct OTLP JSON ⇄ protobuf for traces, the hot paths of the trace store and ``build``.

``json_format.MessageToDict`` / ``ParseDict`` walk descriptors field by field in Python;
every span the gateway records or receives is encoded, and every span ``build`` reads is
decoded. These functions do the same for trace requests directly and give exactly the same
results (tested against ``json_format`` with hypothesis); anything they do not recognise
goes through ``json_format``, so they are never less correct, only faster.

Encoding produces the ``to_json`` form: field-number order, proto3 presence, enums as
integers, 64-bit integers as strings and trace/span ids as lower-case hex.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterable
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

__all__ = ["DIRECT", "span_json", "traces_json"]

_NAN, _INF, _NEG_INF = "NaN", "Infinity", "-Infinity"


def _double(value: float) -> float | str:
    if value != value:
        return _NAN
    if value in (math.inf, -math.inf):
        return _INF if value > 0 else _NEG_INF
    return value


def _value_json(value: AnyValue) -> dict[str, Any]:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return {"stringValue": value.string_value}
    if kind is None:
        return {}
    if kind == "int_value":
        return {"intValue": str(value.int_value)}
    if kind == "bool_value":
        return {"boolValue": value.bool_value}
    if kind == "double_value":
        return {"doubleValue": _double(value.double_value)}
    if kind == "array_value":
        items = value.array_value.values
        return {"arrayValue": {"values": [_value_json(v) for v in items]} if items else {}}
    if kind == "kvlist_value":
        pairs = value.kvlist_value.values
        return {"kvlistValue": {"values": _attrs_json(pairs)} if pairs else {}}
    if kind == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode("ascii")}
    return _generic(value)


def _generic(msg: Message) -> dict[str, Any]:
    doc: dict[str, Any] = json_format.MessageToDict(msg, use_integers_for_enums=True)
    return doc


def _attrs_json(kvs: Iterable[KeyValue]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kv in kvs:
        if kv.key_strindex:
            out.append(_generic(kv))
            continue
        item: dict[str, Any] = {"key": kv.key} if kv.key else {}
        if kv.HasField("value"):
            item["value"] = _value_json(kv.value)
        out.append(item)
    return out


def _event_json(event: Span.Event) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if event.time_unix_nano:
        doc["timeUnixNano"] = str(event.time_unix_nano)
    if event.name:
        doc["name"] = event.name
    if event.attributes:
        doc["attributes"] = _attrs_json(event.attributes)
    if event.dropped_attributes_count:
        doc["droppedAttributesCount"] = event.dropped_attributes_count
    return doc


def _link_json(link: Span.Link) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if link.trace_id:
        doc["traceId"] = link.trace_id.hex()
    if link.span_id:
        doc["spanId"] = link.span_id.hex()
    if link.trace_state:
        doc["traceState"] = link.trace_state
    if link.attributes:
        doc["attributes"] = _attrs_json(link.attributes)
    if link.dropped_attributes_count:
        doc["droppedAttributesCount"] = link.dropped_attributes_count
    if link.flags:
        doc["flags"] = link.flags
    return doc


def span_json(span: Span) -> dict[str, Any]:
    """``to_json(span)``, directly: the OTLP JSON dict of one span, ids in hex."""
    doc: dict[str, Any] = {}
    if span.trace_id:
        doc["traceId"] = span.trace_id.hex()
    if span.span_id:
        doc["spanId"] = span.span_id.hex()
    if span.trace_state:
        doc["traceState"] = span.trace_state
    if span.parent_span_id:
        doc["parentSpanId"] = span.parent_span_id.hex()
    if span.name:
        doc["name"] = span.name
    if span.kind:
        doc["kind"] = span.kind
    if span.start_time_unix_nano:
        doc["startTimeUnixNano"] = str(span.start_time_unix_nano)
    if span.end_time_unix_nano:
        doc["endTimeUnixNano"] = str(span.end_time_unix_nano)
    if span.attributes:
        doc["attributes"] = _attrs_json(span.attributes)
    if span.dropped_attributes_count:
        doc["droppedAttributesCount"] = span.dropped_attributes_count
    if span.events:
        doc["events"] = [_event_json(e) for e in span.events]
    if span.dropped_events_count:
        doc["droppedEventsCount"] = span.dropped_events_count
    if span.links:
        doc["links"] = [_link_json(link) for link in span.links]
    if span.dropped_links_count:
        doc["droppedLinksCount"] = span.dropped_links_count
    if span.HasField("status"):
        status = span.status
        doc["status"] = {}
        if status.message:
            doc["status"]["message"] = status.message
        if status.code:
            doc["status"]["code"] = status.code
    if span.flags:
        doc["flags"] = span.flags
    return doc


def _scope_json(scope: InstrumentationScope) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if scope.name:
        doc["name"] = scope.name
    if scope.version:
        doc["version"] = scope.version
    if scope.attributes:
        doc["attributes"] = _attrs_json(scope.attributes)
    if scope.dropped_attributes_count:
        doc["droppedAttributesCount"] = scope.dropped_attributes_count
    return doc


def _resource_json(resource: Resource) -> dict[str, Any]:
    if resource.entity_refs:
        return _generic(resource)
    doc: dict[str, Any] = {}
    if resource.attributes:
        doc["attributes"] = _attrs_json(resource.attributes)
    if resource.dropped_attributes_count:
        doc["droppedAttributesCount"] = resource.dropped_attributes_count
    return doc


def traces_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """``to_json(request)`` for traces, directly (the trace store's hot path)."""
    out: list[dict[str, Any]] = []
    for rs in request.resource_spans:
        rdoc: dict[str, Any] = {}
        if rs.HasField("resource"):
            rdoc["resource"] = _resource_json(rs.resource)
        if rs.scope_spans:
            scopes: list[dict[str, Any]] = []
            for ss in rs.scope_spans:
                sdoc: dict[str, Any] = {}
                if ss.HasField("scope"):
                    sdoc["scope"] = _scope_json(ss.scope)
                if ss.spans:
                    sdoc["spans"] = [span_json(s) for s in ss.spans]
                if ss.schema_url:
                    sdoc["schemaUrl"] = ss.schema_url
                scopes.append(sdoc)
            rdoc["scopeSpans"] = scopes
        if rs.schema_url:
            rdoc["schemaUrl"] = rs.schema_url
        out.append(rdoc)
    return {"resourceSpans": out} if out else {}


def _field_names(message: type[Message]) -> frozenset[str]:
    return frozenset(f.name for f in message.DESCRIPTOR.fields)


_KNOWN_FIELDS: dict[type[Message], str] = {
    ExportTraceServiceRequest: "resource_spans",
    ResourceSpans: "resource scope_spans schema_url",
    ScopeSpans: "scope spans schema_url",
    Resource: "attributes dropped_attributes_count entity_refs",
    InstrumentationScope: "name version attributes dropped_attributes_count",
    Span: "trace_id span_id trace_state parent_span_id flags name kind start_time_unix_nano"
    " end_time_unix_nano attributes dropped_attributes_count events dropped_events_count"
    " links dropped_links_count status",
    Span.Event: "time_unix_nano name attributes dropped_attributes_count",
    Span.Link: "trace_id span_id trace_state attributes dropped_attributes_count flags",
    Status: "message code",
    KeyValue: "key value key_strindex",
    AnyValue: "string_value bool_value int_value double_value array_value kvlist_value"
    " bytes_value string_value_strindex",
    ArrayValue: "values",
    KeyValueList: "values",
}
DIRECT = all(_field_names(m) == frozenset(f.split()) for m, f in _KNOWN_FIELDS.items())
"""Whether this opentelemetry-proto has exactly the fields the direct encoder writes."""


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
