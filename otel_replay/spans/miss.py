"""A replay miss as a span: where in the agent's trace a request found no recording.

The span is the child of the span whose ``traceparent`` the request carried, named
``replay miss``, with error status, the miss line, the component that differed, the
``why`` against the nearest recordings and the redacted request body. It carries neither
``otel_replay.format_version`` nor ``gen_ai.*`` attributes, so ``build`` reads no model
call from it.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otel_replay.core import jsontext
from otel_replay.core.exchange import JSON
from otel_replay.core.ids import new_span_id, new_trace_id
from otel_replay.spans import attributes as own
from otel_replay.spans.encode import JsonAttrs, _export_json, nanos

__all__ = ["MISS_SPAN_NAME", "miss_to_trace_json"]

MISS_SPAN_NAME = "replay miss"


def miss_to_trace_json(
    message: str,
    component: str | None,
    provider: str,
    path: str,
    body: JSON,
    why: str | None,
    place: tuple[str | None, str | None, int],
    service_name: str = "otel-replay",
) -> dict[str, Any]:
    """The OTLP JSON document of one miss span (``body`` already redacted); ``place``:
    the trace id and parent span id from the request's ``traceparent`` (or None) and its
    start time (0: now)."""
    trace_id, parent_span_id, start_ns = place
    start_ns = start_ns or time.time_ns()
    attrs = JsonAttrs()
    attrs.text(own.MISS, message)
    if component:
        attrs.text(own.MISS_COMPONENT, component)
    attrs.text(own.MISS_PROVIDER, provider)
    attrs.text(own.MISS_PATH, path)
    if why:
        attrs.text(own.MISS_WHY, why)
    if body is not None:
        attrs.text(own.REQUEST_BODY, jsontext.value_text(body))
    span: dict[str, Any] = {
        "traceId": trace_id or new_trace_id(),
        "spanId": new_span_id(),
        "name": MISS_SPAN_NAME,
        "kind": Span.SPAN_KIND_CLIENT,
        "startTimeUnixNano": nanos(start_ns),
        "endTimeUnixNano": nanos(max(start_ns, time.time_ns())),
        "attributes": attrs.items,
        "status": {"message": message, "code": Status.STATUS_CODE_ERROR},
    }
    if parent_span_id:
        span["parentSpanId"] = parent_span_id
    return _export_json(span, service_name)
