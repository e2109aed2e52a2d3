"""Direct OTLP JSON ⇄ protobuf for traces, the hot paths of the trace store and ``build``
(encoding here, decoding in ``tracejson_decode``).

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
